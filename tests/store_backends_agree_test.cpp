// SQLite and PostgreSQL give equal answers: every job filter (JobQuery,
// store/src/job_query.h) and every retention case runs on the same data in
// both backends, and the answers must be equal (and, for the filters whose
// pushdown is the trickiest, what core's FnMatch says).
// Without Debian's PostgreSQL 15 the cases WARN and pass.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

using brine::FakeClock;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::store::Event;
using brine::store::JobFilter;
using brine::store::JobRecord;
using brine::store::OpenOptions;
using brine::store::OpenStore;
using brine::store::Retention;
using brine::store::Store;
using brine::test::PostgresServer;
using brine::test::TempDir;
using std::chrono::hours;

namespace {

const brine::Micros kT0 = brine::FromUnixMicros(1704110400000000);  // 2024-01-01 12:00:00 UTC

#define REQUIRE_POSTGRES()                    \
  do {                                        \
    if (auto why = PostgresServer::Unavailable()) { \
      WARN(*why);                             \
      return;                                 \
    }                                         \
  } while (false)

std::string JidAt(hours ago, const std::string& suffix = "") { return brine::FormatJid(kT0 - ago) + suffix; }

Value Ret(const std::string& jid, const std::string& minion, const Value& ret_value, int retcode, bool success) {
  return Value::Map({{"fun_args", Value::EmptyList()},
                     {"jid", jid},
                     {"return", ret_value},
                     {"retcode", retcode},
                     {"success", success},
                     {"cmd", "_return"},
                     {"_stamp", "2024-01-01T12:00:01.000001"},
                     {"fun", "test.ping"},
                     {"id", minion}});
}

// The same jobs, returns and events in any store: functions and targets
// that LIKE, regular expressions and case would get wrong, of three ages.
void Populate(Store& s) {
  struct Job {
    const char* fun;  // JSON
    const char* tgt;  // JSON, or nullptr: none
    const char* metadata;
  };
  const std::vector<Job> jobs = {
      {R"("test.ping")", R"("*")", nullptr},
      {R"("cmd.run")", R"("web*")", R"({"team":"a"})"},
      {R"("Cmd.run")", R"(["db1","web2"])", R"({"team":"b","n":1})"},
      {R"("cmd.runner")", R"(42)", nullptr},
      {R"("state.apply")", R"("db*")", R"({"n":1})"},
      {R"("state_apply")", nullptr, nullptr},
      {R"("saltutil.find_job")", R"("*")", nullptr},
      {R"("a%b")", R"("a%b")", nullptr},
      {R"("a_b")", R"("a_b")", nullptr},
      {R"("axb")", R"("axb")", nullptr},
      {R"("a\\b")", R"("a\\b")", nullptr},
      {R"("a[b")", R"("[web]")", nullptr},
      {R"("\u00e9.run")", R"("\u00e9*")", R"({"team":"\u00e9"})"},
      {R"(["test.ping","cmd.run"])", R"("*")", nullptr},
      {R"(null)", R"("x")", nullptr},
  };
  int i = 0;
  for (const hours ago : {hours(2), hours(48), hours(4800)}) {
    for (const Job& j : jobs) {
      const std::string jid = JidAt(ago, "_" + std::to_string(i++));
      std::string load = std::string(R"({"fun":)") + j.fun;
      if (j.tgt != nullptr) load += std::string(R"(,"tgt":)") + j.tgt;
      if (j.metadata != nullptr) load += std::string(R"(,"metadata":)") + j.metadata;
      load += i % 3 == 0 ? R"(,"user":"root")" : i % 3 == 1 ? R"(,"user":"sudo_x")" : R"(,"user":42)";
      load += "}";
      s.SaveLoad(jid, ParseJson(load), i % 2 == 0 ? std::vector<std::string>{"m1"} : std::vector<std::string>{"m1", "m2"});
      if (i % 3 != 0) (void)s.Returner(Ret(jid, "m1", Value(true), 0, true));
      if (i % 4 == 0) (void)s.Returner(Ret(jid, "m2", Value("no"), 1, false));
      if (i % 5 == 0) (void)s.Returner(Ret(jid, "m2", Value("odd"), 0, false));
      if (i % 7 == 0) s.UpdateEndtime(jid, "2024, Jan 01 10:00:03.114477");
    }
  }
  s.SaveLoad("12345", ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);  // no time: ages by `seen`
  s.SaveMinions(JidAt(hours(1)), {"m1"}, std::nullopt);                              // no load: never listed
  // Events of the same ages.
  for (const hours ago : {hours(4800), hours(48), hours(2)}) {
    const std::string jid = JidAt(ago, "_ev");
    s.SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
    (void)s.Returner(Ret(jid, "m1", Value(true), 0, true));
    const auto same = s.FindSameReturn(Ret(jid, "m1", Value(true), 0, true));
    REQUIRE(same);
    const brine::Micros at = kT0 - ago;
    std::vector<Event> ev{
        {.tag = "salt/auth", .data = ParseJson(R"({"id":"m1"})"), .received = at},
        {.tag = "salt/job/" + jid + "/ret/m1", .data = Ret(jid, "m1", Value(true), 0, true),
         .received = at + std::chrono::seconds(1), .same_as_return = same->id},
        {.tag = "minion_start", .data = ParseJson("{}"), .received = at + std::chrono::seconds(2)},
        {.tag = "salt/key", .data = ParseJson("{}"), .received = at + std::chrono::seconds(3)},
        {.tag = "a%b/x_y", .data = ParseJson("{}"), .received = at + std::chrono::seconds(4)},
        {.tag = "Salt/Auth", .data = ParseJson("{}"), .received = at + std::chrono::seconds(5)}};
    s.EventReturn(ev);
    s.Quarantine("bad frame", "test", at + std::chrono::seconds(6));
    s.OpenBusGap(brine::store::GapReason::kMasterWentAway, at + std::chrono::seconds(7), at + std::chrono::seconds(6));
    s.CloseBusGap(at + std::chrono::seconds(8));
  }
  // An open gap, older than every cut: it stays.
  s.OpenBusGap(brine::store::GapReason::kMasterStopped, kT0 - hours(4900), std::nullopt);
}

// A SQLite store and a PostgreSQL one, both populated alike.
struct Pair {
  TempDir dir;
  FakeClock clock{kT0};
  std::unique_ptr<Store> sqlite;
  std::unique_ptr<Store> postgres;
  Pair() {
    OpenOptions o;
    o.clock = &clock;
    o.master_id = "salt_master";
    sqlite = OpenStore(dir / "brine.sqlite", o);
    postgres = OpenStore(PostgresServer::Shared().CreateDatabase(), o);
    Populate(*sqlite);
    Populate(*postgres);
  }
};

std::string Listing(Store& s, const JobFilter& filter) {
  std::string out;
  for (const JobRecord& r : s.GetJids(filter)) {
    out += r.jid + " " + (filter.json_text ? r.load_json : ToJson(r.load)) + " " +
           (filter.json_text ? r.metadata_json.value_or("-") : ToJson(r.metadata)) + " " + r.endtime.value_or("-");
    if (r.counts) {
      out += " expected=" + std::to_string(r.counts->expected) + " returned=" + std::to_string(r.counts->returned) +
             " failed=" + std::to_string(r.counts->failed) + " missing=" + std::to_string(r.counts->missing);
    }
    out += "\n";
  }
  return out;
}

// Everything a store holds that retention may change.
std::string State(Store& s) {
  std::string out;
  s.ForEachStoredJob(std::nullopt, std::nullopt, [&](brine::store::StoredJob&& j) {
    out += j.jid + " returns=" + std::to_string(j.returns.size()) + " minions=" + std::to_string(j.minions.size()) + "\n";
  });
  s.ForEachEvent(std::nullopt, std::nullopt, [&](brine::store::ArchivedEvent&& e) {
    out += std::to_string(brine::ToUnixMicros(e.received)) + " " + e.tag + " " + e.data_json + "\n";
  });
  for (const brine::store::BusGap& g : s.GetBusGaps(brine::FromUnixMicros(0))) {
    out += "gap " + std::to_string(brine::ToUnixMicros(g.start)) + " " + g.reason + " " +
           (g.end ? std::to_string(brine::ToUnixMicros(*g.end)) : "open") + "\n";
  }
  const auto counts = s.CountRows();
  out += "jobs=" + std::to_string(counts.jobs) + " events=" + std::to_string(counts.events) + "\n";
  return out;
}

std::string Text(const brine::store::CleanResult& r) {
  return "jobs=" + std::to_string(r.jobs) + " returns=" + std::to_string(r.returns) +
         " events=" + std::to_string(r.events) + " quarantined=" + std::to_string(r.quarantined) +
         " bus_gaps=" + std::to_string(r.bus_gaps) + " more=" + std::to_string(r.more);
}

}  // namespace

TEST_CASE("store backends: every job filter gives SQLite's answer on PostgreSQL", "[store][backends]") {
  REQUIRE_POSTGRES();
  Pair p;
  const std::vector<std::vector<std::string>> fun_globs = {
      {},          {"cmd.run"},     {"cmd.*"},   {"Cmd.*"},       {"c*"},    {"*"},    {"a%b"},     {"a%*"},
      {"a_*"},     {"a\\*"},        {"a\\b"},    {"a[%_]b"},      {"a?b"},   {"a[b"},  {"a[b*"},    {"?md.run"},
      {"\u00e9*"}, {"cmd.*", "test.pin?"},       {"cmd.run", "a_b"},         {"%"},    {"_*"},      {"' OR 1=1 --"},
      {"cmd.run", "*.apply"},     {"[!c]*"},     {"state[._]apply"},         {"s*", "saltutil.find_job"}};
  const std::vector<std::vector<std::string>> tgt_globs = {{}, {"web*"}, {"db1"}, {"*"}, {"4*"}, {"\u00e9*"}, {"a_b"}};
  const std::vector<std::optional<Value>> metadata = {std::nullopt, ParseJson(R"({"team":"a"})"),
                                                      ParseJson(R"({"team":"z","n":1})"), ParseJson(R"({"x":null})")};
  const std::vector<std::optional<std::size_t>> limits = {std::nullopt, 0, 1, 2, 100};
  const std::optional<std::string> mid = JidAt(hours(48), "_0");
  int cases = 0;
  auto check = [&](const JobFilter& f) {
    ++cases;
    const std::string want = Listing(*p.sqlite, f);
    const std::string got = Listing(*p.postgres, f);
    if (want != got) {
      FAIL_CHECK("filter " << cases << ": SQLite:\n" << want << "PostgreSQL:\n" << got);
    }
  };
  for (const auto& g : fun_globs) {
    for (const auto& limit : limits) {
      check({.function_globs = g, .limit = limit});
      check({.jid_min = mid, .function_globs = g, .exclude_functions = {"saltutil.find_job"}, .limit = limit,
             .json_text = true});
    }
  }
  for (const auto& t : tgt_globs) {
    for (const auto& m : metadata) {
      for (const auto& limit : limits) check({.target_globs = t, .metadata = m, .limit = limit});
      check({.jid_max = mid, .function_globs = {"c*"}, .target_globs = t, .metadata = m, .json_text = true});
    }
  }
  for (const std::optional<bool> returns : {std::optional<bool>(), std::optional(true), std::optional(false)}) {
    for (const std::optional<bool> failures : {std::optional<bool>(), std::optional(true), std::optional(false)}) {
      for (const auto& limit : limits) {
        check({.has_returns = returns, .has_failures = failures, .limit = limit});
        check({.function_globs = {"*"}, .has_returns = returns, .has_failures = failures, .limit = limit});
      }
    }
  }
  for (const char* user : {"root", "sudo_x", "42", "nobody"}) {
    for (const char* minion : {"m1", "m2", "m3"}) {
      for (const auto& limit : limits) {
        check({.limit = limit, .user = user});
        check({.limit = limit, .minion = minion});
        check({.function_globs = {"c*"}, .limit = limit, .json_text = true, .user = user, .minion = minion,
               .with_counts = true});
      }
    }
  }
  // Pages of 7, newest first, each going on from the last one's oldest jid.
  for (const std::vector<std::string>& g : {std::vector<std::string>{}, std::vector<std::string>{"cmd.*"}}) {
    std::optional<std::string> before;
    std::size_t seen = 0;
    for (int page = 0; page < 100; ++page) {
      const JobFilter f{.function_globs = g, .limit = 7, .jid_before = before};
      check(f);
      const auto jobs = p.sqlite->GetJids(f);
      seen += jobs.size();
      if (jobs.size() < 7) break;
      before = jobs.front().jid;
    }
    CHECK(seen == p.sqlite->GetJids({.function_globs = g}).size());
  }
  check({.jid_min = JidAt(hours(4800)), .jid_max = JidAt(hours(2), "~")});
  check({.jid_min = "2", .jid_max = "1"});
  CHECK(cases > 300);
  CHECK(p.postgres->GetJids({}).size() == 49);
  CHECK(p.sqlite->GetJids({}).size() == 49);
  // What core's FnMatch says, where LIKE and case would differ.
  auto jids = [&](const JobFilter& f) { return p.postgres->GetJids(f).size(); };
  CHECK(jids({.function_globs = {"a%*"}}) == 3);      // a%b only
  CHECK(jids({.function_globs = {"a_*"}}) == 3);      // a_b only
  CHECK(jids({.function_globs = {"a\\*"}}) == 3);     // a\b only
  CHECK(jids({.function_globs = {"Cmd.*"}}) == 3);    // case counts
  CHECK(jids({.function_globs = {"a[b*"}}) == 3);     // a '[' without ']' is literal: a[b and what follows
  CHECK(jids({.function_globs = {"a[b"}}) == 3);
  CHECK(jids({.function_globs = {"?md.run"}}) == 6);  // cmd.run and Cmd.run
  CHECK(jids({.user = "root"}) == 15);                 // every third of 45
  CHECK(jids({.minion = "m3"}) == 0);
  // Counts: a job that expected m1 only, whose m2 returned a failure anyway (i = 4).
  const auto counted = p.postgres->GetJids({.jid_min = JidAt(hours(2), "_3"), .jid_max = JidAt(hours(2), "_3"),
                                            .with_counts = true});
  REQUIRE(counted.size() == 1);
  REQUIRE(counted[0].counts);
  CHECK(counted[0].counts->expected == 1);
  CHECK(counted[0].counts->returned == 2);
  CHECK(counted[0].counts->failed == 1);
  CHECK(counted[0].counts->missing == 0);
  CHECK(!p.postgres->GetJids({.limit = 1}).front().counts);
  CHECK(jids({.minion = "m1"}) == 48);                 // all but "12345", which has no minion
}

TEST_CASE("store backends: a listing under a time budget says how far it got", "[store][backends]") {
  REQUIRE_POSTGRES();
  Pair p;
  for (Store* s : {p.sqlite.get(), p.postgres.get()}) {
    const auto whole = s->ListJobs({.function_globs = {"c*"}, .with_counts = true, .time_budget = hours(1)});
    CHECK(whole.complete);
    CHECK(!whole.reached);
    CHECK(Listing(*s, {.function_globs = {"c*"}, .with_counts = true}).size() > 0);
    CHECK(whole.jobs.size() == s->GetJids({.function_globs = {"c*"}}).size());
    const auto none = s->ListJobs({.limit = 5, .time_budget = std::chrono::milliseconds(0)});
    CHECK_FALSE(none.complete);
    CHECK(none.jobs.empty());
    CHECK(!none.reached);
    // ForEachJob and GetJids ignore the budget.
    CHECK(s->GetJids({.time_budget = std::chrono::milliseconds(0)}).size() == 49);
  }
}

TEST_CASE("store backends: get_jid and get_jid_full give SQLite's answer on PostgreSQL", "[store][backends]") {
  REQUIRE_POSTGRES();
  Pair p;
  int jobs = 0;
  for (const JobRecord& r : p.sqlite->GetJids({})) {
    ++jobs;
    CHECK(ToJson(p.postgres->GetJid(r.jid)) == ToJson(p.sqlite->GetJid(r.jid)));
    CHECK(ToJson(p.postgres->GetJidFull(r.jid)) == ToJson(p.sqlite->GetJidFull(r.jid)));
  }
  CHECK(jobs == 49);
  CHECK(ToJson(p.postgres->GetJid("20990101000000000000")) == "{}");
  CHECK(ToJson(p.sqlite->GetJid("20990101000000000000")) == "{}");
}

TEST_CASE("store backends: every retention case leaves SQLite's state on PostgreSQL", "[store][backends]") {
  REQUIRE_POSTGRES();
  struct Case {
    const char* name;
    Retention retention;
  };
  const std::vector<Case> cases = {
      {"jobs by default", {.jobs_before = kT0 - hours(24)}},
      {"events by default", {.events_before = kT0 - hours(24)}},
      {"everything", {.jobs_before = kT0 + hours(1), .events_before = kT0 + hours(1)}},
      {"classes",
       {.jobs_before = kT0 - hours(24),
        .jobs_by_fun = {{.glob = "saltutil.find_job", .before = kT0 - hours(1)},
                        {.glob = "state.*", .before = kT0 - hours(24 * 90)},
                        {.glob = "*", .before = std::nullopt}},
        .events_before = kT0 - hours(24),
        .events_by_tag = {{.glob = "salt/auth", .before = kT0 - hours(1)},
                          {.glob = "salt/job/*/ret/*", .before = std::nullopt},
                          {.glob = "salt/[!j]*", .before = kT0}}}},
      {"classes whose globs regular expressions and LIKE would read otherwise",
       {.jobs_before = std::nullopt,
        .jobs_by_fun = {{.glob = "a%b", .before = kT0},
                        {.glob = "a_*", .before = kT0},
                        {.glob = "a\\*", .before = kT0 - hours(24)},
                        {.glob = "state?apply", .before = kT0 - hours(24)},
                        {.glob = "[!cst]*", .before = kT0},
                        {.glob = "Cmd.*", .before = kT0 + hours(1)},
                        {.glob = "a[b", .before = kT0},
                        {.glob = "\u00e9.???", .before = kT0}},
        .events_before = std::nullopt,
        .events_by_tag = {{.glob = "a%b/x?y", .before = kT0},
                          {.glob = "Salt/*", .before = kT0},
                          {.glob = "salt/[a-k]*", .before = kT0 - hours(24)},
                          {.glob = "*_start", .before = kT0}}}},
      {"a class kept forever before a default", {.jobs_before = kT0 + hours(1),
                                                  .jobs_by_fun = {{.glob = "cmd.*", .before = std::nullopt}},
                                                  .events_before = kT0 + hours(1),
                                                  .events_by_tag = {{.glob = "salt/*", .before = std::nullopt}}}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Pair big;
      const auto want = big.sqlite->ApplyRetention(c.retention, 100000);
      const auto got = big.postgres->ApplyRetention(c.retention, 100000);
      CHECK(Text(got) == Text(want));
      CHECK(want.jobs + want.events > 0);
      const std::string state = State(*big.sqlite);
      CHECK(State(*big.postgres) == state);
      // In small steps (PostgreSQL drops whole days outside the budget, so
      // the steps differ): the same state once neither has more.
      Pair small;
      for (Store* s : {small.sqlite.get(), small.postgres.get()}) {
        int calls = 0;
        while (s->ApplyRetention(c.retention, 3).more && ++calls < 1000) {
        }
        CHECK(calls < 1000);
      }
      CHECK(State(*small.sqlite) == state);
      CHECK(State(*small.postgres) == state);
    }
  }
}
