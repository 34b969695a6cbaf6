// manage.up, manage.down, manage.present and manage.not_present (issue 27
// item 4): answered from the store (store/presence.h), on SQLite and on the
// tests' private PostgreSQL server (without Debian's postgresql the
// PostgreSQL half WARNs and is skipped).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "brine/config/master_config.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/runner/cli.h"
#include "brine/store/presence.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "support/golden.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

using brine::ParseJson;
using brine::Value;
using brine::test::PostgresServer;
using brine::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> Backends() {
  std::vector<std::string> out = {"sqlite"};
  if (auto why = PostgresServer::Unavailable()) {
    WARN("PostgreSQL half skipped: " << *why);
  } else {
    out.emplace_back("postgresql");
  }
  return out;
}

std::string NewDatabase(const std::string& backend, const TempDir& dir) {
  return backend == "postgresql" ? PostgresServer::Shared().CreateDatabase() : (dir / "brine.sqlite").string();
}

// A fleet as the bus told it, relative to `now` (the window is 300 s):
//   web1     returned 10 s ago                               up
//   web2     returned an hour ago                            down
//   db1      a target of that hour-old job, never returned   down
//   busy1    returned an hour ago, a find_job reply 5 s ago  up
//   auth1    a salt/auth 20 s ago, nothing else              up
//   start1   its salt/minion/start1/start 30 s ago           up
//   old1     its start event two hours ago                   down
//   refused  a salt/auth with act "reject" 10 s ago          neither
// and, for presence_events, a salt/presence/present 30 s ago naming web2, p1
// and p2, then a salt/presence/change adding p3 and losing p2.
void Fill(const std::string& database, brine::Micros now) {
  using std::chrono::seconds;
  brine::FakeClock clock(now - seconds(3600));
  brine::store::OpenOptions options;
  options.clock = &clock;
  auto s = brine::store::OpenStore(database, options);
  auto publish = [&](const std::string& jid, const std::string& fun, const std::string& args,
                     const std::vector<std::string>& minions) {
    s->SaveLoad(jid, ParseJson(R"({"fun":")" + fun + R"(","arg":)" + args + R"(,"tgt":"*","user":"root"})"), minions);
  };
  auto ret = [&](const std::string& jid, const std::string& minion, const std::string& fun) {
    auto r = ParseJson(R"({"cmd":"_return","fun":")" + fun + R"(","return":true,"retcode":0,"success":true})");
    r.Set("jid", jid);
    r.Set("id", minion);
    REQUIRE(s->Returner(r).kind == brine::store::ReturnOutcome::Kind::kStored);
  };
  const std::string old_jid = brine::FormatJid(now - seconds(3600));
  publish(old_jid, "test.ping", "[]", {"web2", "db1", "busy1"});
  ret(old_jid, "web2", "test.ping");
  ret(old_jid, "busy1", "test.ping");

  clock.Set(now - seconds(10));
  const std::string new_jid = brine::FormatJid(now - seconds(10));
  publish(new_jid, "test.ping", "[]", {"web1"});
  ret(new_jid, "web1", "test.ping");

  clock.Set(now - seconds(5));
  const std::string find_jid = brine::FormatJid(now - seconds(5));
  publish(find_jid, "saltutil.find_job", "[\"" + old_jid + "\"]", {"busy1"});
  ret(find_jid, "busy1", "saltutil.find_job");

  std::vector<brine::store::Event> events{
      {.tag = "salt/minion/old1/start", .data = ParseJson(R"({"cmd":"_minion_event"})"),
       .received = now - seconds(7200)},
      {.tag = "salt/auth", .data = ParseJson(R"({"id":"auth1","act":"accept","result":true})"),
       .received = now - seconds(20)},
      {.tag = "salt/minion/start1/start", .data = ParseJson(R"({"cmd":"_minion_event"})"),
       .received = now - seconds(30) + std::chrono::microseconds(1)},
      {.tag = "salt/presence/present", .data = ParseJson(R"({"present":["web2","p1","p2"]})"),
       .received = now - seconds(30)},
      {.tag = "salt/presence/change", .data = ParseJson(R"({"new":["p3"],"lost":["p2"]})"),
       .received = now - seconds(29)},
      {.tag = "salt/auth", .data = ParseJson(R"({"id":"refused","act":"reject","result":false})"),
       .received = now - seconds(10)},
  };
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.received < b.received; });
  s->EventReturn(events);
}

std::vector<std::string> Strings(std::initializer_list<const char*> l) { return {l.begin(), l.end()}; }

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

fs::path Conf(const TempDir& dir, const std::string& database, const std::string& extra = "") {
  const fs::path conf = dir / "conf";
  fs::create_directories(conf);
  std::ofstream(conf / "master") << "cachedir: " << (dir / "cache").string() << "\nbrine.database: " << database
                                 << "\n"
                                 << extra;
  return conf;
}

CliResult Cli(const fs::path& conf, const std::vector<std::string>& args) {
  std::vector<std::string> words = {"brine-run", "-c", conf.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  const int code = brine::runner::Main(static_cast<int>(words.size()), argv.data(), out, err,
                                       brine::runner::Terminal::kNotTty);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("manage: without presence events a minion is up when its newest return, auth or start is in the window",
          "[manage][runner]") {
  for (const std::string& backend : Backends()) {
    INFO(backend);
    TempDir dir;
    const std::string database = NewDatabase(backend, dir);
    const brine::Micros now = brine::SystemClock().Now();
    Fill(database, now);
    const auto p = brine::store::ReadPresence(database, now, {.window = std::chrono::seconds(300)});
    CHECK(p.source == brine::store::Presence::Source::kActivity);
    CHECK(p.up == Strings({"auth1", "busy1", "start1", "web1"}));
    CHECK(p.down == Strings({"db1", "old1", "web2"}));
    // A window of three hours takes in every sign of life.
    const auto wide = brine::store::ReadPresence(database, now, {.window = std::chrono::seconds(3 * 3600)});
    CHECK(wide.up == Strings({"auth1", "busy1", "old1", "start1", "web1", "web2"}));
    CHECK(wide.down == Strings({"db1"}));
  }
}

TEST_CASE("manage: with presence_events the newest present event and the changes after it decide", "[manage][runner]") {
  for (const std::string& backend : Backends()) {
    INFO(backend);
    TempDir dir;
    const std::string database = NewDatabase(backend, dir);
    const brine::Micros now = brine::SystemClock().Now();
    Fill(database, now);
    const brine::store::PresenceOptions events{.prefer = brine::store::PresenceOptions::Source::kPresenceEvents,
                                               .window = std::chrono::seconds(300)};
    const auto p = brine::store::ReadPresence(database, now, events);
    INFO(p.explanation);
    CHECK(p.source == brine::store::Presence::Source::kPresenceEvents);
    CHECK(p.up == Strings({"p1", "p3", "web2"}));
    CHECK(p.down == Strings({"auth1", "busy1", "db1", "old1", "p2", "start1", "web1"}));
    // Ten minutes later the present event is older than the window: the
    // master stopped firing them, so activity answers again.
    const auto stale = brine::store::ReadPresence(database, now + std::chrono::seconds(600), events);
    INFO(stale.explanation);
    CHECK(stale.source == brine::store::Presence::Source::kActivity);
    CHECK(stale.up.empty());

    // Through the command line, with Salt's option.
    const fs::path conf = Conf(dir, database, "presence_events: True\n");
    const CliResult up = Cli(conf, {"--out", "json", "manage.up"});
    INFO(up.err);
    CHECK(up.code == 0);
    CHECK(ParseJson(up.out) == ParseJson(R"(["p1","p3","web2"])"));
    const CliResult present = Cli(conf, {"--out", "json", "manage.present", "subset=p1,web1,ghost"});
    CHECK(ParseJson(present.out) == ParseJson(R"(["p1"])"));
  }
}

TEST_CASE("manage: a minion never seen is in neither list, whatever the source", "[manage][runner]") {
  for (const std::string& backend : Backends()) {
    INFO(backend);
    TempDir dir;
    const std::string database = NewDatabase(backend, dir);
    Fill(database, brine::SystemClock().Now());
    for (const std::string extra : {"", "presence_events: True\n"}) {
      INFO(extra);
      const fs::path conf = Conf(dir, database, extra);
      for (const std::string fn : {"manage.up", "manage.down", "manage.present", "manage.not_present"}) {
        const CliResult r = Cli(conf, {"--out", "json", fn});
        INFO(fn << ": " << r.err);
        CHECK(r.code == 0);
        CHECK(r.out.find("ghost") == std::string::npos);
        CHECK(r.out.find("refused") == std::string::npos);  // only ever rejected by salt/auth
      }
      const CliResult subset = Cli(conf, {"--out", "json", "manage.not_present", "subset=ghost,db1"});
      CHECK(ParseJson(subset.out) == ParseJson(R"(["db1"])"));
    }
    // An empty store: both lists empty.
    TempDir empty_dir;
    const std::string empty = NewDatabase(backend, empty_dir);
    { auto s = brine::store::OpenStore(empty); }
    const auto p = brine::store::ReadPresence(empty, brine::SystemClock().Now(), {});
    CHECK(p.up.empty());
    CHECK(p.down.empty());
  }
}

TEST_CASE("manage: salt-run's parameters are taken; targets filter by glob or list, other kinds are refused",
          "[manage][runner]") {
  for (const std::string& backend : Backends()) {
    INFO(backend);
    TempDir dir;
    const std::string database = NewDatabase(backend, dir);
    Fill(database, brine::SystemClock().Now());
    const fs::path conf = Conf(dir, database);
    auto json = [&](const std::vector<std::string>& args) {
      std::vector<std::string> words = {"--out", "json"};
      words.insert(words.end(), args.begin(), args.end());
      const CliResult r = Cli(conf, words);
      INFO(r.err);
      CHECK(r.code == 0);
      return r.code == 0 ? ParseJson(r.out) : Value();
    };
    CHECK(json({"manage.up", "tgt=web*"}) == ParseJson(R"(["web1"])"));
    CHECK(json({"manage.up", "web*", "glob", "5", "10"}) == ParseJson(R"(["web1"])"));
    CHECK(json({"manage.up", "tgt=web1,auth1,ghost", "tgt_type=list"}) == ParseJson(R"(["auth1","web1"])"));
    CHECK(json({"manage.down", "tgt=web*", "timeout=5", "gather_job_timeout=10"}) == ParseJson(R"(["web2"])"));
    CHECK(json({"manage.present", "show_ip=True"}) == ParseJson(R"(["auth1","busy1","start1","web1"])"));
    const CliResult grain = Cli(conf, {"manage.up", "tgt=os:Debian", "tgt_type=grain"});
    CHECK(grain.code == 2);
    CHECK(grain.err.find("glob or a list") != std::string::npos);
    const CliResult removekeys = Cli(conf, {"manage.down", "removekeys=True"});
    CHECK(removekeys.code == 2);
    CHECK(removekeys.err.find("removekeys") != std::string::npos);
  }
}

TEST_CASE("manage: the lists print as salt-run prints them, in json and nested", "[manage][runner][golden]") {
  for (const std::string& backend : Backends()) {
    INFO(backend);
    TempDir dir;
    const std::string database = NewDatabase(backend, dir);
    Fill(database, brine::SystemClock().Now());
    const fs::path conf = Conf(dir, database);
    for (const std::string fn : {"manage.up", "manage.down"}) {
      for (const std::string out : {"json", "nested"}) {
        const CliResult r = Cli(conf, {"--out", out, fn});
        INFO(r.err);
        CHECK(r.code == 0);
        CHECK(brine::test::CheckGolden("runner/" + fn + "." + out + ".txt", r.out) == "");
      }
    }
  }
}

TEST_CASE("manage: presence_events and brine.presence_window_s are typed config keys with Salt's defaults",
          "[manage][config]") {
  TempDir dir;
  auto load = [&](const std::string& text) { return brine::config::LoadMasterConfigFromText(text, dir.path()); };
  const auto defaults = load("");
  CHECK_FALSE(defaults.presence_events);
  CHECK(defaults.brine.presence_window_s == 300);
  // Two of Salt's presence ticks (one every loop_interval) when that is longer.
  CHECK(load("loop_interval: 600\n").brine.presence_window_s == 1200);
  const auto set = load("presence_events: True\nbrine.presence_window_s: 90\nloop_interval: 600\n");
  CHECK(set.presence_events);
  CHECK(set.brine.presence_window_s == 90);
  CHECK(set.warnings.empty());
  CHECK_THROWS_WITH(load("presence_events: \"yes\"\n"), Catch::Contains("presence_events"));
  CHECK_THROWS_WITH(load("brine.presence_window_s: 0\n"), Catch::Contains("presence_window_s"));
}

TEST_CASE("manage: every presence query is an index search or a read of the minion table, never a scan of ret or event",
          "[manage][plan][sqlite]") {
  // On a store of any size: the minion table has a row per minion (the
  // fleet), ret and event grow without bound. docs/schema.md, "Presence".
  TempDir dir;
  const std::string database = (dir / "brine.sqlite").string();
  Fill(database, brine::SystemClock().Now());
  for (const std::string& sql : brine::store::PresenceQueries(database)) {
    std::string plan;
    brine::store::OpenSqlEngine(database)->Run(
        "EXPLAIN QUERY PLAN " + sql, {{"cut", Value(0)}, {"after", Value(0)}}, {},
        [&](brine::store::SqlResult&& r) {
          for (const auto& row : r.rows) plan += row.back().as_string() + "\n";
        });
    INFO(sql << "\n" << plan);
    CHECK(plan.find("SCAN ret") == std::string::npos);
    CHECK(plan.find("SCAN event") == std::string::npos);
    CHECK(plan.find("SCAN r") == std::string::npos);
    CHECK(plan.find("SEARCH") != std::string::npos);
  }
}

TEST_CASE("manage: on PostgreSQL every presence query can reach its index, never only a scan of ret or event",
          "[manage][plan][postgres]") {
  // A tiny table is cheaper to scan, so the planner is told not to, to see
  // that an index path exists (as postgres_test.cpp checks the forensic windows).
  if (auto why = PostgresServer::Unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir dir;
  const std::string database = PostgresServer::Shared().CreateDatabase();
  Fill(database, brine::SystemClock().Now());
  for (std::string sql : brine::store::PresenceQueries(database)) {
    for (const std::string name : {":cut", ":after"}) {
      for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name)) sql.replace(at, name.size(), "0");
    }
    const std::string plan = PostgresServer::Shared().Query(database, "SET enable_seqscan = off; EXPLAIN " + sql);
    INFO(sql << "\n" << plan);
    CHECK(plan.find("Seq Scan on ret") == std::string::npos);
    CHECK(plan.find("Seq Scan on event") == std::string::npos);
    CHECK(plan.find("Index") != std::string::npos);
  }
}
