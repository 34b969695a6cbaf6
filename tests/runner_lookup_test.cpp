// brine-run: salt-run's command line over the store, driven in-process
// (brine::runner::Main) over a store built through the store API
// (support/runner_site.h).
// Here: list_job, print_job, lookup_jid, exit_success, last_run,
// list_jobs_filter, jobs.active, jobs.master and brine.stats.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/wire/codec.h"
#include "support/process.h"
#include "support/runner_site.h"
#include "support/value_printer.h"

namespace fs = std::filesystem;

using brine::ParseJson;
using brine::Value;
using brine::test::kNoJob;
using brine::test::CliResult;
using brine::test::Keys;
using brine::test::Slurp;
using brine::test::Jids;
using brine::test::Site;
using brine::test::Record;
using brine::test::StateReturn;

// ---------------------------------------------------------------------------
// 5. list_job, print_job, lookup_jid, exit_success, last_run, list_jobs_filter.

namespace {

const std::string kJA = "20240301100000000000";  // cmd.run on web1-3: web1 "up", web2 "", web3 silent, web4 extra
const std::string kJB = "20240301110000000000";  // state.apply, a highstate return
const std::string kJC = "20240301120000000000";  // saltutil.find_job
const std::string kJD = "20240301130000000000";  // test.ping
const std::string kUnknown = "20240301000000000000";

void BuildCallJobs(Site& s) {
  s.Publish(kJA, "cmd.run", Value::List({"uptime"}), "web*", "glob", "root", {"web1", "web2", "web3"});
  s.Return(kJA, "web1", "cmd.run", "up");
  s.Return(kJA, "web2", "cmd.run", "", 0, true);
  s.Return(kJA, "web4", "cmd.run", "error: denied", 1, false);
  s.Store().UpdateEndtime(kJA, "2024, Mar 01 10:00:05.000000");
  s.Publish(kJB, "state.apply", Value::EmptyList(), "web1", "glob", "root", {"web1"});
  s.Return(kJB, "web1", "state.apply", StateReturn(), 0, true, Value::Map({{"out", "highstate"}}));
  s.Publish(kJC, "saltutil.find_job", Value::List({kJA}), "web3", "glob", "root", {"web3"});
  s.Return(kJC, "web3", "saltutil.find_job", Value::EmptyMap());
  s.Publish(kJD, "test.ping", Value::EmptyList(), "*", "glob", "root", {"web1"});
  s.Return(kJD, "web1", "test.ping", true);
}

}  // namespace

TEST_CASE("runner: list_job shows the job, its minions and returns in Salt's key order", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const Value job = s.Json({"jobs.list_job", kJA});
  CHECK(Keys(job) == Jids{"jid", "Function", "Arguments", "Target", "Target-type", "User", "Minions", "StartTime",
                          "Result"});
  CHECK(*job.Find("jid") == kJA);
  CHECK(*job.Find("Minions") == Value::List({"web1", "web2", "web3"}));
  CHECK(*job.Find("StartTime") == "2024, Mar 01 10:00:00.000000");
  CHECK(*job.Find("Result") ==
        Value::Map({{"web1", Value::Map({{"return", "up"}, {"retcode", 0}, {"success", true}})},
                    {"web2", Value::Map({{"return", ""}, {"retcode", 0}, {"success", true}})},
                    {"web4", Value::Map({{"return", "error: denied"}, {"retcode", 1}, {"success", false}})}}));
}

TEST_CASE("runner: EndTime shows only with job_cache_store_endtime", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const fs::path with_end = s.WriteConf("conf_end", "job_cache_store_endtime: True");
  const Value job = s.Json({"jobs.list_job", kJA}, with_end);
  CHECK(Keys(job).back() == "EndTime");
  CHECK(*job.Find("EndTime") == "2024, Mar 01 10:00:05.000000");
  CHECK(*s.Json({"jobs.print_job", kJA}, with_end).Find(kJA)->Find("EndTime") == "2024, Mar 01 10:00:05.000000");
  CHECK(*s.Json({"jobs.list_jobs", "search_function=cmd.run"}, with_end).Find(kJA)->Find("EndTime") ==
        "2024, Mar 01 10:00:05.000000");
  // A job without an end time has no key even then.
  CHECK(s.Json({"jobs.list_job", kJD}, with_end).Find("EndTime") == nullptr);
  // Without the option: no EndTime anywhere.
  CHECK(s.Json({"jobs.list_job", kJA}).Find("EndTime") == nullptr);
  CHECK(s.Json({"jobs.print_job", kJA}).Find(kJA)->Find("EndTime") == nullptr);
  CHECK(s.Json({"jobs.list_jobs"}).Find(kJA)->Find("EndTime") == nullptr);
}

TEST_CASE("runner: lookup_jid gives each minion's return, and missing=True the silent ones", "[runner]") {
  Site s;
  BuildCallJobs(s);
  CHECK(s.Json({"jobs.lookup_jid", kJA}) == Value::Map({{"web1", "up"}, {"web2", ""}, {"web4", "error: denied"}}));
  CHECK(s.Json({"jobs.lookup_jid", kJA, "missing=True"}) ==
        Value::Map({{"web1", "up"}, {"web2", ""}, {"web4", "error: denied"}, {"web3", "Minion did not return"}}));
  CHECK(s.Json({"jobs.lookup_jid", kJA, "returned=False", "missing=True"}) ==
        Value::Map({{"web3", "Minion did not return"}}));
  CHECK(s.Json({"jobs.lookup_jid", kJA, "returned=False"}) == Value::EmptyMap());
  // nested, as salt-run prints it
  const CliResult nested = s.Run({"jobs.lookup_jid", kJA, "missing=True"});
  CHECK(nested.out == "web1:\n    up\nweb2:\nweb3:\n    Minion did not return\nweb4:\n    error: denied\n");
}

TEST_CASE("runner: lookup_jid renders with the outputter a return asked for", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const CliResult state = s.Run({"jobs.lookup_jid", kJB});
  CHECK(state.code == 0);
  CHECK(state.out.rfind("web1:\n----------\n          ID: t1\n", 0) == 0);
  CHECK(state.out.find("\nSummary for web1\n") != std::string::npos);
  CHECK(state.out.find("Succeeded: 1") != std::string::npos);
  // --out wins, and prints the data itself (not the {"outputter", "data"} wrapper).
  CHECK(s.Json({"jobs.lookup_jid", kJB}) == Value::Map({{"web1", StateReturn()}}));
  // --out=highstate does not override the data's own outputter: same text.
  CHECK(s.Run({"jobs.lookup_jid", kJB, "--out", "highstate"}).out == state.out);
  // A job whose first return has no `out` is plain nested.
  CHECK(s.Run({"jobs.lookup_jid", kJD}).out == "web1:\n    True\n");
}

// lookup_jid with Salt's defaults copies each stored return's text into the
// output; missing=True still builds the Values. When every expected minion
// returned the two must print the same bytes.
TEST_CASE("runner: lookup_jid prints the stored returns' text as the Value path prints them, in every outputter",
          "[runner]") {
  Site s;
  const std::string jid = "20240301120000000000";
  const std::string state_jid = "20240301120000000001";
  // Arriving out of name order, with odd names, floats Salt prints as NaN and
  // Infinity, unicode, empty and nested containers.
  const std::vector<std::string> minions = {"web2", "\xc3\xa9" "clair", "web10", "Web1", "_x"};
  s.Publish(jid, "test.echo", Value::EmptyList(), "*", "glob", "root", minions);
  const Value returns[] = {
      Value::Map({{"a", Value::List({1, 2.5, Value(std::nan("")), Value(HUGE_VAL), Value(-HUGE_VAL)})},
                  {"b", Value::EmptyMap()},
                  {"c", Value::EmptyList()}}),
      "caf\xc3\xa9 \"quoted\"\nline\ttab",
      Value(),
      Value::Map({{"nested", Value::Map({{"deeper", Value::List({Value::EmptyMap(), "x", false})}})}}),
      1e300};
  for (std::size_t i = 0; i < minions.size(); ++i) s.Return(jid, minions[i], "test.echo", returns[i]);
  s.Publish(state_jid, "state.apply", Value::EmptyList(), "web1", "glob", "root", {"web1", "web2"});
  s.Return(state_jid, "web2", "state.apply", StateReturn(), 0, true, Value::Map({{"out", "highstate"}}));
  s.Return(state_jid, "web1", "state.apply", StateReturn(), 0, true, Value::Map({{"out", "highstate"}}));
  for (const std::string& j : {jid, state_jid}) {
    for (const std::vector<std::string>& out :
         std::vector<std::vector<std::string>>{{},
                                               {"--out", "json"},
                                               {"--out", "json", "--out-indent", "0"},
                                               {"--out", "json", "--out-indent", "-1"},
                                               {"--out", "yaml"},
                                               {"--out", "nested"}}) {
      std::vector<std::string> streamed = {"jobs.lookup_jid", j};
      streamed.insert(streamed.end(), out.begin(), out.end());
      std::vector<std::string> built = streamed;
      built.emplace_back("missing=True");
      const CliResult a = s.Run(streamed);
      const CliResult b = s.Run(built);
      INFO(j << " " << (out.empty() ? "default" : out[1]) << "\n" << a.err << b.err);
      CHECK(a.code == 0);
      CHECK(a.err.empty());
      CHECK(a.out == b.out);
      CHECK(!a.out.empty());
    }
  }
  // The returns as stored, in name order.
  CHECK(Keys(s.Json({"jobs.lookup_jid", jid})) ==
        std::vector<std::string>{"Web1", "_x", "web10", "web2", "\xc3\xa9" "clair"});
}

TEST_CASE("runner: unknown jids answer as spec 8.3, 8.4 and 8.7 say", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const std::string start = "2024, Mar 01 00:00:00.000000";
  const CliResult list = s.Run({"jobs.list_job", kUnknown, "--out", "json"});
  CHECK(list.out == "{\n    \"jid\": \"" + kUnknown + "\",\n    \"Error\": \"" + kNoJob + "\",\n    \"StartTime\": \"" +
                        start + "\",\n    \"Result\": {}\n}\n");
  const CliResult lookup = s.Run({"jobs.lookup_jid", kUnknown});
  CHECK(lookup.code == 0);
  CHECK(lookup.out.empty());  // {} prints nothing
  // ... but says on stderr that there is no such job.
  CHECK(lookup.err == "brine-run: no job with jid " + kUnknown + " in the store\n");
  CHECK(s.Run({"jobs.lookup_jid", kUnknown, "--out", "json"}).out == "{}\n");
  CHECK(s.Json({"jobs.print_job", kUnknown}) ==
        Value::Map({{kUnknown, Value::Map({{"Error", kNoJob}, {"StartTime", start}, {"Result", Value::EmptyMap()}})}}));
  // A unique_jid jid keeps its suffix; StartTime comes from its 20 digits.
  const Value unique = s.Json({"jobs.list_job", kUnknown + "_4242"});
  CHECK(*unique.Find("jid") == kUnknown + "_4242");
  CHECK(*unique.Find("StartTime") == start);
  // A jid that is not 20 digits has StartTime "".
  CHECK(*s.Json({"jobs.list_job", "12345"}).Find("StartTime") == "");
  CHECK(s.Json({"jobs.exit_success", kUnknown}) == Value::EmptyMap());
}

TEST_CASE("runner: print_job keys the job by its jid with its Result", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const Value printed = s.Json({"jobs.print_job", kJD});
  CHECK(printed == Value::Map({{kJD, Value::Map({{"Function", "test.ping"},
                                                 {"Arguments", Value::EmptyList()},
                                                 {"Target", "*"},
                                                 {"Target-type", "glob"},
                                                 {"User", "root"},
                                                 {"Minions", Value::List({"web1"})},
                                                 {"StartTime", "2024, Mar 01 13:00:00.000000"},
                                                 {"Result", Value::Map({{"web1", Value::Map({{"return", true},
                                                                                             {"retcode", 0},
                                                                                             {"success", true}})}})}})}}));
}

TEST_CASE("runner: exit_success judges by the return's truthiness, not retcode", "[runner]") {
  Site s;
  BuildCallJobs(s);
  // web1 "up": True; web2 "": False; web3 silent: False; web4 retcode 1 but a message: True.
  CHECK(s.Json({"jobs.exit_success", kJA}) ==
        Value::Map({{"web1", true}, {"web2", false}, {"web3", false}, {"web4", true}}));
  CHECK(s.Json({"jobs.exit_success", kJD}) == Value::Map({{"web1", true}}));
}

TEST_CASE("runner: last_run is the newest matching job, or False", "[runner]") {
  Site s;
  s.Store();  // an empty store
  CHECK(s.Json({"jobs.last_run"}) == Value(false));
  CHECK(s.Run({"jobs.last_run"}).out == "False\n");
  BuildCallJobs(s);
  CHECK(Keys(s.Json({"jobs.last_run"})) == Jids{kJD});
  CHECK(Keys(s.Json({"jobs.last_run", "function=cmd.run"})) == Jids{kJA});
  CHECK(Keys(s.Json({"jobs.last_run", "target=web1"})) == Jids{kJB});
  // saltutil.find_job polls count as jobs here, as in Salt (kJC targets web3).
  CHECK(Keys(s.Json({"jobs.last_run", "target=web*"})) == Jids{kJC});
  CHECK(Keys(s.Json({"jobs.last_run", "function=[cmd.*, state.*]"})) == Jids{kJB});
  CHECK(s.Json({"jobs.last_run", "function=nope.*"}) == Value(false));
  CHECK(s.Json({"jobs.last_run", "metadata=foo"}) == Value(false));
  // The job as print_job shows it.
  CHECK(s.Json({"jobs.last_run", "function=test.*"}) == s.Json({"jobs.print_job", kJD}));
}

TEST_CASE("runner: list_jobs_filter gives the newest count jobs with their JID", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const Value two = s.Json({"jobs.list_jobs_filter", "2"});
  REQUIRE(two.is_list());
  REQUIRE(two.as_list().size() == 2);
  CHECK(*two.as_list()[0].FindString("JID") == kJB);  // find_job kJC left out
  CHECK(*two.as_list()[1].FindString("JID") == kJD);
  CHECK(Keys(two.as_list()[1]) == Jids{"Function", "Arguments", "Target", "Target-type", "User", "JID", "StartTime"});
  const Value with_finds = s.Json({"jobs.list_jobs_filter", "count=2", "filter_find_job=False"});
  REQUIRE(with_finds.as_list().size() == 2);
  CHECK(*with_finds.as_list()[0].FindString("JID") == kJC);
  CHECK(*with_finds.as_list()[0].FindString("Function") == "saltutil.find_job");
  CHECK(*with_finds.as_list()[1].FindString("JID") == kJD);
  CHECK(s.Run({"jobs.list_jobs_filter"}).code == 2);
  CHECK(s.Run({"jobs.list_jobs_filter", "two"}).code == 2);
}

TEST_CASE("runner: lookup_jid over a list of jids answers per jid", "[runner]") {
  Site s;
  BuildCallJobs(s);
  const Value expected = Value::Map({{kJD, Value::Map({{"web1", true}})},
                                     {kJA, Value::Map({{"web1", "up"}, {"web2", ""}, {"web4", "error: denied"}})}});
  CHECK(s.Json({"jobs.lookup_jid", "[\"" + kJD + "\", \"" + kJA + "\"]"}) == expected);
  CHECK(s.Json({"jobs.lookup_jid", "['" + kJD + "']"}) == Value::Map({{kJD, Value::Map({{"web1", true}})}}));
}

TEST_CASE("runner: lookup_jid over an unquoted list of 20-digit jids", "[runner]") {
  // Inside a list, a YAML integer above 64 bits keeps its digits as text
  // (Python keeps it exact), so `[20240301130000000000, ...]` names the jobs.
  Site s;
  BuildCallJobs(s);
  const auto r = s.Run({"jobs.lookup_jid", "[" + kJD + ", " + kJA + "]", "--out", "json"});
  CHECK(r.code == 0);
  CHECK(brine::ParseJson(r.out).Find(kJD) != nullptr);
  CHECK(brine::ParseJson(r.out).Find(kJA) != nullptr);
}

// ---------------------------------------------------------------------------
// 6. jobs.active from recorded saltutil.find_job returns.

TEST_CASE("runner: active lists jobs from find_job replies and young jobs", "[runner]") {
  Site s;
  const auto now = brine::SystemClock().Now();
  using std::chrono::seconds;
  const std::string running = brine::FormatJid(now - seconds(10));   // m1 running (find_job), m2 returned
  const std::string find = brine::FormatJid(now - seconds(5));       // the find_job poll for `running`
  const std::string old_silent = brine::FormatJid(now - seconds(3600));  // old, no find_job: not listed
  const std::string young = brine::FormatJid(now - seconds(20));     // young, no find_job: pid None
  const std::string old_polled = brine::FormatJid(now - seconds(3700));  // old but polled recently
  const std::string find_old = brine::FormatJid(now - seconds(4));
  const std::string done = brine::FormatJid(now - seconds(30));      // young, everyone returned
  const std::string find_silent = brine::FormatJid(now - seconds(3));  // a find_job with a silent minion

  s.Publish(running, "state.apply", Value::EmptyList(), "*", "glob", "root", {"m1", "m2"});
  s.Return(running, "m2", "state.apply", Value::EmptyMap());
  s.Publish(find, "saltutil.find_job", Value::List({running}), "m1", "list", "root", {"m1"});
  s.Return(find, "m1", "saltutil.find_job",
           Value::Map({{"fun", "state.apply"}, {"jid", running}, {"pid", 4242}, {"tgt", "*"}}));
  s.Publish(old_silent, "test.sleep", Value::List({3600}), "m3", "glob", "root", {"m3"});
  s.Publish(young, "test.sleep", Value::List({60}), "m4", "glob", "alice", {"m4"});
  s.Publish(old_polled, "cmd.run", Value::List({"sleep 9999"}), "m5", "glob", "root", {"m5"});
  s.Publish(find_old, "saltutil.find_job", Value::List({old_polled}), "m5", "list", "root", {"m5"});
  s.Return(find_old, "m5", "saltutil.find_job", Value::Map({{"jid", old_polled}, {"pid", 99}}));
  s.Publish(done, "test.ping", Value::EmptyList(), "m1", "glob", "root", {"m1"});
  s.Return(done, "m1", "test.ping", true);
  s.Publish(find_silent, "saltutil.find_job", Value::List({young}), "m4,m6", "list", "root", {"m4", "m6"});

  auto entry = [&](const std::string& jid, const std::string& fun, Value args, const std::string& tgt,
                   const std::string& user, Value run, Value returned) {
    Value r = Record(fun, std::move(args), tgt, "glob", user, brine::JidToTime(jid));
    r.Set("Running", std::move(run));
    r.Set("Returned", std::move(returned));
    return r;
  };
  // In jid order.
  const Value expected = Value::Map({
      {old_polled, entry(old_polled, "cmd.run", Value::List({"sleep 9999"}), "m5", "root",
                         Value::List({Value::Map({{"m5", 99}})}), Value::EmptyList())},
      {young, entry(young, "test.sleep", Value::List({60}), "m4", "alice", Value::List({Value::Map({{"m4", Value()}})}),
                    Value::EmptyList())},
      {running, entry(running, "state.apply", Value::EmptyList(), "*", "root", Value::List({Value::Map({{"m1", 4242}})}),
                      Value::List({"m2"}))},
  });
  const Value active = s.Json({"jobs.active"});
  CHECK(active == expected);
  CHECK(active.Find(old_silent) == nullptr);
  CHECK(active.Find(done) == nullptr);
  CHECK(active.Find(find_silent) == nullptr);  // polls are not jobs to report
  // timeout= is accepted and ignored
  CHECK(s.Json({"jobs.active", "timeout=5"}) == expected);
}

TEST_CASE("runner: active follows the newest find_job reply: an empty one means not running", "[runner]") {
  Site s;
  const auto now = brine::SystemClock().Now();
  using std::chrono::seconds;
  const std::string old = brine::FormatJid(now - seconds(3600));
  const std::string first_poll = brine::FormatJid(now - seconds(60));
  const std::string second_poll = brine::FormatJid(now - seconds(5));
  s.Publish(old, "cmd.run", Value::List({"sleep 60"}), "m7", "glob", "root", {"m7"});
  s.Publish(first_poll, "saltutil.find_job", Value::List({old}), "m7", "list", "root", {"m7"});
  s.Return(first_poll, "m7", "saltutil.find_job", Value::Map({{"jid", old}, {"pid", 7}}));
  REQUIRE(Keys(s.Json({"jobs.active"})) == Jids{old});
  // Salt's find_job answers {} once the job is no longer running on the minion.
  s.Publish(second_poll, "saltutil.find_job", Value::List({old}), "m7", "list", "root", {"m7"});
  s.Return(second_poll, "m7", "saltutil.find_job", Value::EmptyMap());
  CHECK(s.Json({"jobs.active"}) == Value::EmptyMap());
}

TEST_CASE("runner: active is {} on an empty store", "[runner]") {
  Site s;
  s.Store();
  CHECK(s.Json({"jobs.active"}) == Value::EmptyMap());
  CHECK(s.Run({"jobs.active"}).out.empty());
}

// ---------------------------------------------------------------------------
// jobs.master and brine.stats

TEST_CASE("runner: master lists live runner calls from <cachedir>/proc", "[runner]") {
  Site s;
  CHECK(s.Json({"jobs.master"}) == Value::EmptyList());
  fs::create_directories(s.dir() / "cache" / "proc");
  // A live process whose command line names brine-run, and a dead one.
  brine::test::Child live({"/usr/bin/python3", "-c", "import time; time.sleep(60)", "brine-run"}, s.dir() / "live.log");
  // Wait for the exec: until then the child's command line is ours.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Slurp("/proc/" + std::to_string(live.pid()) + "/cmdline").find("brine-run") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const Value call = Value::Map({{"fun", "runner.state.event"},
                                 {"jid", "20240101120000000001"},
                                 {"user", "root"},
                                 {"fun_args", Value::EmptyList()},
                                 {"_stamp", "2024-01-01T12:00:00.000001"},
                                 {"pid", static_cast<long long>(live.pid())}});
  std::ofstream(s.dir() / "cache" / "proc" / "20240101120000000001", std::ios::binary) << brine::wire::PackMsgpack(call);
  Value stale = call;
  stale.Set("jid", "20240101120000000002");
  stale.Set("pid", 0x3ffffff);  // above pid_max
  std::ofstream(s.dir() / "cache" / "proc" / "20240101120000000002", std::ios::binary) << brine::wire::PackMsgpack(stale);
  // Our own pid runs runner_test: not a salt or brine-run process.
  Value self = call;
  self.Set("jid", "20240101120000000003");
  self.Set("pid", static_cast<long long>(::getpid()));
  std::ofstream(s.dir() / "cache" / "proc" / "20240101120000000003", std::ios::binary) << brine::wire::PackMsgpack(self);
  CHECK(s.Json({"jobs.master"}) == Value::List({call}));
  live.Signal(SIGKILL);
  (void)live.Wait();
}

TEST_CASE("runner: brine.stats shows the counters of each master", "[runner]") {
  Site s;
  s.Store().PutCounters({{"received", 3}, {"stored", 2}, {"filtered", 1}, {"acked", 4}});
  const Value stats = s.Json({"brine.stats"});
  REQUIRE(stats.Find("brine_master") != nullptr);
  const Value& m = *stats.Find("brine_master");
  CHECK(*m.Find("running") == false);  // no master listens on this config's bus
  CHECK(*m.Find("since_start")->Find("received") == 3);
  CHECK(*m.Find("since_start")->Find("stored") == 2);
  CHECK(*m.Find("since_start")->Find("acked") == 4);  // a count brine.stats has no name for still shows
  // A store from before the *_total counters: its counts are its totals.
  CHECK(*m.Find("since_created")->Find("received") == 3);
  CHECK(*m.Find("last_commit") == "");
  CHECK(*m.Find("last_commit_us") == 0);
  CHECK(*stats.Find("store")->Find("path") == s.db().string());
  CHECK(*stats.Find("store")->Find("spool_files") == 0);
  // The nested outputter shows no raw microseconds.
  CHECK(s.Run({"brine.stats"}).out.find("_us") == std::string::npos);
}
