// brine-run end to end: a real brine-master records the events Salt fires,
// and the real brine-run binary answers from its store.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/wire/codec.h"
#include "support/master_process.h"
#include "support/process.h"
#include "support/runner_site.h"
#include "support/value_printer.h"

namespace fs = std::filesystem;

using brine::ParseJson;
using brine::Value;
using brine::test::MasterProcess;
using brine::test::Lines;
using brine::test::Keys;
using brine::test::Jids;
using brine::test::Site;
using brine::test::Record;

// ---------------------------------------------------------------------------
// 8. End to end: brine-master records what Salt fires; brine-run answers.

namespace {

std::string Frame(const std::string& tag, const Value& data) {
  return brine::wire::EncodeFrame(tag, data, brine::wire::Framing::kNew);
}

brine::test::RunResult BrineRun(const fs::path& conf, std::vector<std::string> args) {
  args.insert(args.begin(), {brine::test::Binary("brine-run").string(), "-c", conf.string()});
  return brine::test::Run(args);
}

Value BrineRunJson(const fs::path& conf, std::vector<std::string> args) {
  args.insert(args.end(), {"--out", "json"});
  const auto r = BrineRun(conf, std::move(args));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.err.empty());
  return ParseJson(r.out);
}

}  // namespace

TEST_CASE("runner: C5-C8 jobs that brine-master recorded from Salt's events", "[runner][e2e]") {
  brine::test::MasterProcess m;
  m.Start();
  const auto now = brine::SystemClock().Now();
  using std::chrono::seconds;
  const std::string echo = brine::FormatJid(now - seconds(3));
  const std::string call = brine::FormatJid(now - seconds(2));  // salt-call: a ret with no publish
  const std::string run = brine::FormatJid(now - seconds(1));
  const std::string stamp = brine::FormatStamp(now);
  const Value publish = Value::Map({{"jid", echo},
                                    {"tgt_type", "glob"},
                                    {"tgt", "minion1"},
                                    {"user", "root"},
                                    {"fun", "test.echo"},
                                    {"arg", Value::List({"test_list_jobs"})},
                                    {"minions", Value::List({"minion1"})},
                                    {"missing", Value::EmptyList()},
                                    {"_stamp", stamp}});
  auto ret = [&](const std::string& jid, const std::string& text) {
    return Value::Map({{"cmd", "_return"},
                       {"id", "minion1"},
                       {"success", true},
                       {"return", text},
                       {"retcode", 0},
                       {"jid", jid},
                       {"fun", "test.echo"},
                       {"fun_args", Value::List({text})},
                       {"_stamp", stamp}});
  };
  const Value runner = Value::Map({{"fun", "runner.test.arg"},
                                   {"jid", run},
                                   {"user", "root"},
                                   {"fun_args", Value::List({"arg1", Value::Map({{"kwarg1", "kwarg1"}})})},
                                   {"_stamp", stamp}});
  Value runner_ret = runner;
  runner_ret.Set("return", Value::Map({{"args", Value::List({"arg1"})}, {"kwargs", Value::Map({{"kwarg1", "kwarg1"}})}}));
  runner_ret.Set("success", true);
  brine::test::PushFrames(m.pull_endpoint(), {Frame("salt/job/" + echo + "/new", publish),
                                              Frame("salt/job/" + echo + "/ret/minion1", ret(echo, "test_list_jobs")),
                                              Frame("salt/job/" + call + "/ret/minion1", ret(call, "target_info_test")),
                                              Frame("salt/run/" + run + "/new", runner),
                                              Frame("salt/run/" + run + "/ret", runner_ret)});
  REQUIRE(m.Stop() == 0);

  const std::string events_before = brine::test::Sql(m.database(), "SELECT count(*) FROM salt_events");
  const Value jobs = BrineRunJson(m.conf_dir(), {"jobs.list_jobs"});
  CHECK(Keys(jobs) == Jids{echo, call, run});
  // C5, C6: the publish load is the record; the return did not overwrite it.
  CHECK(*jobs.Find(echo) == Record("test.echo", Value::List({"test_list_jobs"}), "minion1", "glob", "root",
                                   brine::JidToTime(echo)));
  // C8: a return with no publish: Target is the minion, Target-type glob, Arguments from fun_args.
  const Value* c8 = jobs.Find(call);
  REQUIRE(c8 != nullptr);
  CHECK(*c8->Find("Function") == "test.echo");
  CHECK(*c8->Find("Arguments") == Value::List({"target_info_test"}));
  CHECK(*c8->Find("Target") == "minion1");
  CHECK(*c8->Find("Target-type") == "glob");
  // C7: the runner job, named runner.test.arg.
  CHECK(*jobs.Find(run)->Find("Function") == "runner.test.arg");
  const Value job = BrineRunJson(m.conf_dir(), {"jobs.list_job", run});
  CHECK(job.Find("Error") == nullptr);
  CHECK(*job.Find("jid") == run);
  CHECK(*job.Find("Result")->Find("test_master")->Find("return") == runner_ret);
  CHECK(BrineRunJson(m.conf_dir(), {"jobs.lookup_jid", echo}) == Value::Map({{"minion1", "test_list_jobs"}}));
  // The recorded jobs have all returned: nothing is active.
  CHECK(BrineRunJson(m.conf_dir(), {"jobs.active"}) == Value::EmptyMap());
  // Nested is the default, as salt-run's.
  const auto nested = BrineRun(m.conf_dir(), {"jobs.lookup_jid", echo});
  CHECK(nested.out == "minion1:\n    test_list_jobs\n");
  // brine-run records nothing of its own calls.
  CHECK(brine::test::Sql(m.database(), "SELECT count(*) FROM salt_events") == events_before);
  CHECK(brine::test::Sql(m.database(), "SELECT count(*) FROM jids") == "3\n");
}

TEST_CASE("runner: C1-C4 on a master that recorded nothing", "[runner][e2e]") {
  brine::test::MasterProcess m;
  m.Start();
  REQUIRE(m.Stop() == 0);
  // C1
  const auto master = BrineRun(m.conf_dir(), {"jobs.master", "--out", "json"});
  CHECK(master.exit_code == 0);
  CHECK(master.out == "[]\n");
  CHECK(BrineRun(m.conf_dir(), {"jobs.master"}).out.empty());
  // C2
  const auto active = BrineRun(m.conf_dir(), {"jobs.active", "--out", "json"});
  CHECK(active.exit_code == 0);
  CHECK(active.out == "{}\n");
  // C3: an unknown 14-digit jid
  const auto lookup = BrineRun(m.conf_dir(), {"jobs.lookup_jid", "23974239742394", "--out", "json"});
  CHECK(lookup.exit_code == 0);
  CHECK(lookup.out == "{}\n");
  CHECK(BrineRun(m.conf_dir(), {"jobs.lookup_jid", "23974239742394"}).out.empty());
  // C4
  const auto invalid = BrineRun(m.conf_dir(), {"jobs.lookup_jid"});
  CHECK(invalid.exit_code == 2);
  CHECK(invalid.out.rfind("\nPassed invalid arguments: lookup_jid() missing 1 required positional argument: 'jid'\n"
                          "\nUsage:\n",
                          0) == 0);
  CHECK(invalid.err == "brine-run: lookup_jid() missing 1 required positional argument: 'jid'\n");
  // The store is not written by brine-run: the master's file is unchanged by the queries.
  CHECK(brine::test::Sql(m.database(), "SELECT count(*) FROM jids") == "0\n");
}

TEST_CASE("runner: the brine-run binary exits 1 on a missing store and 2 on a usage error", "[runner][e2e]") {
  Site s;
  const auto missing = BrineRun(s.conf(), {"jobs.list_jobs"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.out.empty());
  CHECK(Lines(missing.err) == 1);
  const auto unknown = BrineRun(s.conf(), {"jobs.nope"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.out == "'jobs.nope' is not available.\n");
  const auto help = brine::test::Run({brine::test::Binary("brine-run").string(), "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.rfind("Usage: brine-run", 0) == 0);
}
