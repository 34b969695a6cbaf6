// brine-run: salt-run's command line over the store, driven in-process
// (brine::runner::Main) over a store built through the store API
// (support/runner_site.h).
// Here: jobs.list_jobs, Salt's unit cases B1-B7 and the filters.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "brine/output/outputters.h"
#include "support/runner_site.h"
#include "support/value_printer.h"

using brine::ParseJson;
using brine::Value;
using brine::ValueMap;
using brine::test::CliResult;
using brine::test::Keys;
using brine::test::Jids;
using brine::test::Site;
using brine::test::Record;

// ---------------------------------------------------------------------------
// 3. Salt's unit cases B1-B7 (salt-queue-and-tests.md 2.B).

namespace {

const std::string kB1 = "20160524035503086853";
const std::string kB2 = "20160524035524895387";

void BuildFixtureJ(Site& s) {
  s.Publish(kB1, "test.ping", Value::EmptyList(), "node-1-1.com", "glob", "root", {"node-1-1.com"});
  s.Publish(kB2, "test.ping", Value::EmptyList(), Value::List({"node-1-2.com", "node-1-1.com"}), "list", "sudo_ubuntu",
            {"node-1-1.com", "node-1-2.com"});
}

Value FixtureJ() {
  return Value::Map({{kB1, Record("test.ping", Value::EmptyList(), "node-1-1.com", "glob", "root",
                                  "2016, May 24 03:55:03.086853")},
                     {kB2, Record("test.ping", Value::EmptyList(), Value::List({"node-1-2.com", "node-1-1.com"}), "list",
                                  "sudo_ubuntu", "2016, May 24 03:55:24.895387")}});
}

}  // namespace

TEST_CASE("runner: B1-B5 list_jobs search_target on string and list targets", "[runner]") {
  Site s;
  BuildFixtureJ(s);
  const Value j = FixtureJ();
  CHECK(s.Json({"jobs.list_jobs"}) == j);                                                // B1
  CHECK(s.Json({"jobs.list_jobs", "search_target=[\"node-1-1*\", \"node-1-2*\"]"}) == j);  // B2
  CHECK(s.Json({"jobs.list_jobs", "search_target=node-1-1.com"}) == j);                  // B3
  CHECK(s.Json({"jobs.list_jobs", "search_target=node-1-2.com"}) ==
        Value::Map({{kB2, *j.Find(kB2)}}));                                              // B4
  CHECK(s.Json({"jobs.list_jobs", "search_target=non-existant"}) == Value::EmptyMap());  // B5
}

TEST_CASE("runner: B6 a job whose target is null is skipped by search_target", "[runner]") {
  Site s;
  s.Publish("20260421000000000001", "test.ping", Value::EmptyList(), "node-1-1.com", "glob", "root", {"node-1-1.com"});
  s.Publish("20260421000000000002", "test.ping", Value::EmptyList(), Value(), "glob", "root", {"node-1-2.com"});
  const Value hit = s.Json({"jobs.list_jobs", "search_target=node-1-1.com"});
  CHECK(Keys(hit) == std::vector<std::string>{"20260421000000000001"});
  CHECK(*hit.Find("20260421000000000001") ==
        Record("test.ping", Value::EmptyList(), "node-1-1.com", "glob", "root", "2026, Apr 21 00:00:00.000001"));
  CHECK(s.Json({"jobs.list_jobs", "search_target=*"}).Find("20260421000000000002") == nullptr);
  // Unfiltered, the job is listed with Salt's Target None.
  const Value all = s.Json({"jobs.list_jobs"});
  REQUIRE(all.Find("20260421000000000002") != nullptr);
  CHECK(all.Find("20260421000000000002")->Find("Target")->is_null());
}

TEST_CASE("runner: B7 search_metadata matches metadata passed as a __kwarg__ argument", "[runner]") {
  Site s;
  const Value kwarg = Value::Map(
      {{"__kwarg__", true}, {"metadata", Value::Map({{"task_id", "bb52013a"}, {"source", "flask"}})}});
  s.Publish("20251121134552341171", "state.apply", Value::List({"Sandbox.create_test_file", kwarg}),
            Value::List({"salt-minion"}), "list", "root", {"salt-minion"});
  s.Publish("20251121100403664430", "cmd.run", Value::List({"echo 'test'"}), "salt-minion", "glob", "root",
            {"salt-minion"}, Value::Map({{"metadata", Value::Map({{"task_id", "0c47889f"}, {"source", "Flask"}})}}));
  s.Publish("20251121134652341171", "state.apply",
            Value::List({"x", Value::Map({{"__kwarg__", true}, {"metadata", Value::Map({{"task_id", "different"}})}})}),
            Value::List({"salt-minion"}), "list", "root", {"salt-minion"});

  const Value bb = s.Json({"jobs.list_jobs", "search_metadata={\"task_id\": \"bb52013a\"}"});
  CHECK(Keys(bb) == std::vector<std::string>{"20251121134552341171"});
  CHECK(*bb.Find("20251121134552341171") ==
        Record("state.apply", Value::List({"Sandbox.create_test_file", kwarg}), Value::List({"salt-minion"}), "list",
               "root", "2025, Nov 21 13:45:52.341171", Value::Map({{"task_id", "bb52013a"}, {"source", "flask"}})));
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_metadata={\"task_id\": \"0c47889f\"}"}) ==
        std::vector<std::string>{"20251121100403664430"});
  // Any one pair matching is enough (Salt's OR rule).
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_metadata={task_id: nope, source: flask}"}) ==
        std::vector<std::string>{"20251121134552341171"});
}

// ---------------------------------------------------------------------------
// 4. list_jobs filters.

namespace {

const std::string kJ1 = "20240101100000000000";
const std::string kJ2 = "20240101120000123456";
const std::string kJ3 = "20240101120000500000";
const std::string kJ4 = "20240101140000000000";
const std::string kJ5 = "20240102000000000000";

// Inserted out of jid order; J3 and J5 have a failed return, J2 none.
void BuildFilterJobs(Site& s) {
  s.Publish(kJ5, "test.echo", Value::List({"hi"}), "db2", "glob", "root", {"db2"});
  s.Return(kJ5, "db2", "test.echo", "hi", 0, false);
  s.Publish(kJ3, "cmd.run", Value::List({"false"}), "db1", "glob", "root", {"db1"});
  s.Return(kJ3, "db1", "cmd.run", "", 1, false);
  s.Publish(kJ1, "test.ping", Value::EmptyList(), "web1", "glob", "root", {"web1"});
  s.Return(kJ1, "web1", "test.ping", true);
  s.Publish(kJ4, "state.apply", Value::EmptyList(), Value::List({"web1", "db1"}), "list", "sudo_bob", {"db1", "web1"},
            Value::Map({{"metadata", Value::Map({{"ticket", "OPS-1"}})}}));
  s.Return(kJ4, "web1", "state.apply", Value::EmptyMap());
  s.Publish(kJ2, "test.ping", Value::EmptyList(), "web*", "glob", "root", {"web1", "web2"});
}

}  // namespace

TEST_CASE("runner: list_jobs lists in jid order with format_jid_instance's key order", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  const Value all = s.Json({"jobs.list_jobs"});
  CHECK(Keys(all) == Jids{kJ1, kJ2, kJ3, kJ4, kJ5});
  CHECK(*all.Find(kJ4) == Record("state.apply", Value::EmptyList(), Value::List({"web1", "db1"}), "list", "sudo_bob",
                                 "2024, Jan 01 14:00:00.000000", Value::Map({{"ticket", "OPS-1"}})));
  CHECK(Keys(*all.Find(kJ4)) ==
        Jids{"Function", "Arguments", "Target", "Target-type", "User", "Metadata", "StartTime"});
  CHECK(Keys(*all.Find(kJ1)) == Jids{"Function", "Arguments", "Target", "Target-type", "User", "StartTime"});
  // The text itself, as Salt's json outputter prints a record.
  const CliResult text = s.Run({"jobs.list_jobs", "search_function=state.apply", "--out", "json"});
  CHECK(text.out == "{\n    \"" + kJ4 +
                        "\": {\n        \"Function\": \"state.apply\",\n        \"Arguments\": [],\n"
                        "        \"Target\": [\n            \"web1\",\n            \"db1\"\n        ],\n"
                        "        \"Target-type\": \"list\",\n        \"User\": \"sudo_bob\",\n"
                        "        \"Metadata\": {\n            \"ticket\": \"OPS-1\"\n        },\n"
                        "        \"StartTime\": \"2024, Jan 01 14:00:00.000000\"\n    }\n}\n");
}

TEST_CASE("runner: list_jobs applies format_job_instance's defaults and Arguments' rule in every outputter", "[runner]") {
  // json lays the members out as it scans each load; an arg that is an
  // object goes the other way (its list deepens its layout). Both must print
  // what the records render to, as nested (which parses) does.
  Site s;
  struct Case {
    std::string jid;
    Value load;
    Value record;
  };
  const auto load = [](const std::string& jid, ValueMap extra) {
    ValueMap m;
    m.emplace_back("jid", jid);
    for (auto& e : extra) m.push_back(std::move(e));
    return Value(std::move(m));
  };
  const std::vector<Case> cases = {
      {"20240101120000000001", load("20240101120000000001", {{"fun", "cmd.run"}, {"arg", "uptime"}, {"tgt", "w*"},
                                                            {"tgt_type", "glob"}, {"user", "root"}}),
       Record("cmd.run", Value::List({"uptime"}), "w*", "glob", "root", "2024, Jan 01 12:00:00.000001")},
      {"20240101120000000002", load("20240101120000000002", {{"fun", "test.arg"}, {"arg", 5}, {"tgt", "w*"}}),
       Record("test.arg", Value::List({5}), "w*", "list", "root", "2024, Jan 01 12:00:00.000002")},
      {"20240101120000000003", load("20240101120000000003", {{"fun", "test.arg"}, {"arg", Value()}, {"user", Value()}}),
       Record("test.arg", Value::EmptyList(), "unknown-target", "list", "", "2024, Jan 01 12:00:00.000003")},
      {"20240101120000000004", load("20240101120000000004", {{"arg", Value::Map({{"k", Value::List({1, 2})}})}}),
       Record("unknown-function", Value::List({Value::Map({{"k", Value::List({1, 2})}})}), "unknown-target", "list",
              "root", "2024, Jan 01 12:00:00.000004")},
      {"20240101120000000005", load("20240101120000000005", {{"fun", "state.apply"}, {"arg", Value::List({"a", 1.5})},
                                                            {"tgt", Value::List({"m1", "m\xc3\xa9"})}, {"tgt_type", "list"}}),
       Record("state.apply", Value::List({"a", 1.5}), Value::List({"m1", "m\xc3\xa9"}), "list", "root",
              "2024, Jan 01 12:00:00.000005")},
  };
  ValueMap expected;
  for (const Case& c : cases) {
    s.Store().SaveLoad(c.jid, c.load, std::nullopt);
    expected.emplace_back(c.jid, c.record);
  }
  expected[2].second.Set("User", Value());  // a null user stays null
  const Value all(std::move(expected));
  for (const std::optional<int> indent : {std::optional<int>(), std::optional<int>(-1), std::optional<int>(2)}) {
    std::vector<std::string> args = {"jobs.list_jobs", "--out", "json"};
    if (indent) args.push_back("--out-indent=" + std::to_string(*indent));
    const CliResult r = s.Run(args);
    REQUIRE(r.code == 0);
    brine::output::OutputOptions options;
    options.indent = indent;
    CHECK(r.out == brine::output::Render("json", all, options));
  }
  CHECK(s.Run({"jobs.list_jobs", "--out", "nested"}).out == brine::output::Render("nested", all, {}));
}

TEST_CASE("runner: list_jobs search_function and search_target take globs, lists and comma strings", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=test.*"}) == Jids{kJ1, kJ2, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=[cmd.run, state.*]"}) == Jids{kJ3, kJ4});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=cmd.run, test.echo"}) == Jids{kJ3, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=test.p?ng"}) == Jids{kJ1, kJ2});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=TEST.*"}).empty());  // case-sensitive, as fnmatch on POSIX
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_target=web*"}) == Jids{kJ1, kJ2, kJ4});  // J4 through its list
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_target=db*,web1"}) == Jids{kJ1, kJ3, kJ4, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_target=[db2]"}) == Jids{kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_target=db[12]"}) == Jids{kJ3, kJ4, kJ5});
  // Literal target `web*` matches the glob `web*` (J2's own target).
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_function=test.*", "search_target=web*"}) == Jids{kJ1, kJ2});
}

TEST_CASE("runner: list_jobs start_time and end_time accept every documented form", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  struct Case {
    std::vector<std::string> args;
    Jids expected;
  };
  const std::vector<Case> cases = {
      {{"start_time=2024-01-01T12:00:00"}, {kJ2, kJ3, kJ4, kJ5}},
      {{"start_time=2024-01-01 12:00:00"}, {kJ2, kJ3, kJ4, kJ5}},
      // inclusive at both ends, to the microsecond
      {{"start_time=2024-01-01 12:00:00.123456", "end_time=2024-01-01T12:00:00.123456"}, {kJ2}},
      {{"start_time=2024-01-01T12:00:00.2"}, {kJ3, kJ4, kJ5}},
      {{"start_time=2024-01-01T12:00:00Z"}, {kJ2, kJ3, kJ4, kJ5}},
      // a zone converts to UTC: 14:00+02:00 is 12:00 UTC, 11:00-01:00 is 12:00 UTC
      {{"start_time=2024-01-01T14:00:00+02:00"}, {kJ2, kJ3, kJ4, kJ5}},
      {{"start_time=2024-01-01T14:00:00+0200"}, {kJ2, kJ3, kJ4, kJ5}},
      {{"start_time=2024-01-01 14:00:00.000001+02:00"}, {kJ2, kJ3, kJ4, kJ5}},
      {{"end_time=2024-01-01T11:00:00-01:00"}, {kJ1}},
      {{"start_time=2024-01-01 12:00"}, {kJ2, kJ3, kJ4, kJ5}},
      {{"end_time=2024-01-01 12:00"}, {kJ1}},
      {{"start_time=2024-01-02"}, {kJ5}},
      {{"end_time=2024-01-01"}, {}},
      {{"end_time=2024, Jan 01 12:00:00.123456"}, {kJ1, kJ2}},
      {{"start_time=2024, Jan 01 12:00:00", "end_time=2024, Jan 01 14:00:00"}, {kJ2, kJ3, kJ4}},
      {{"start_time=2024-01-01T12:00:00", "search_function=test.*"}, {kJ2, kJ5}},
      // what dateutil (Salt's reader) takes in practice
      {{"start_time=Jan 2 2024"}, {kJ5}},
      {{"start_time=2 Jan 2024"}, {kJ5}},
      {{"start_time=2024/01/02"}, {kJ5}},
      {{"start_time=01/02/2024"}, {kJ5}},
      {{"start_time=January 1, 2024 12:00", "end_time=1 jan 2024 14:00:00"}, {kJ2, kJ3, kJ4}},
      {{"start_time=Mon Jan 1 2024 1:00 PM UTC"}, {kJ4, kJ5}},
      {{"end_time=01 Jan 2024 12:00:00.123456"}, {kJ1, kJ2}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"jobs.list_jobs"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    INFO(c.args[0]);
    CHECK(s.JsonKeys(args) == c.expected);
  }
}

TEST_CASE("runner: end_time includes a unique_jid job of that very microsecond", "[runner]") {
  Site s;
  s.Publish("20240101120000123456_4242", "test.ping", Value::EmptyList(), "*", "glob", "root", {"m1"});
  s.Publish("20240101120000123457", "test.ping", Value::EmptyList(), "*", "glob", "root", {"m1"});
  CHECK(s.JsonKeys({"jobs.list_jobs", "end_time=2024-01-01 12:00:00.123456"}) == Jids{"20240101120000123456_4242"});
  CHECK(s.JsonKeys({"jobs.list_jobs", "start_time=2024-01-01 12:00:00.123456"}) ==
        Jids{"20240101120000123456_4242", "20240101120000123457"});
  CHECK(*s.Json({"jobs.list_jobs"}).Find("20240101120000123456_4242")->Find("StartTime") ==
        "2024, Jan 01 12:00:00.123456");
}

TEST_CASE("runner: list_jobs limit, returned and failed filters", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  CHECK(s.JsonKeys({"jobs.list_jobs", "limit=2"}) == Jids{kJ4, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "limit=0"}).empty());
  CHECK(s.JsonKeys({"jobs.list_jobs", "limit=2", "search_function=test.*"}) == Jids{kJ2, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "returned=True"}) == Jids{kJ1, kJ3, kJ4, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "returned=False"}) == Jids{kJ2});
  CHECK(s.JsonKeys({"jobs.list_jobs", "failed=True"}) == Jids{kJ3, kJ5});
  CHECK(s.JsonKeys({"jobs.list_jobs", "failed=False"}) == Jids{kJ1, kJ2, kJ4});
  CHECK(s.JsonKeys({"jobs.list_jobs", "failed=yes", "search_target=db1"}) == Jids{kJ3});
  const CliResult negative = s.Run({"jobs.list_jobs", "limit=-1"});
  CHECK(negative.code == 2);
}

TEST_CASE("runner: list_jobs with a search_metadata that is not a dict lists nothing", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  CHECK(s.Json({"jobs.list_jobs", "search_metadata=OPS-1"}) == Value::EmptyMap());
  CHECK(s.Json({"jobs.list_jobs", "search_metadata=[1]"}) == Value::EmptyMap());
  CHECK(s.JsonKeys({"jobs.list_jobs", "search_metadata={ticket: OPS-1}"}) == Jids{kJ4});
  // nested prints nothing for {}
  const CliResult nested = s.Run({"jobs.list_jobs", "search_metadata=OPS-1"});
  CHECK(nested.code == 0);
  CHECK(nested.out.empty());
}

TEST_CASE("runner: list_jobs outputter= wraps the result for that outputter", "[runner]") {
  Site s;
  BuildFilterJobs(s);
  const CliResult json = s.Run({"jobs.list_jobs", "search_target=db2", "outputter=json"});
  CHECK(json.code == 0);
  CHECK(ParseJson(json.out) == Value::Map({{kJ5, Record("test.echo", Value::List({"hi"}), "db2", "glob", "root",
                                                        "2024, Jan 02 00:00:00.000000")}}));
  // --out beats the data's own outputter
  const CliResult yaml = s.Run({"jobs.list_jobs", "search_target=db2", "outputter=json", "--out", "yaml"});
  CHECK(yaml.out.rfind("'" + kJ5 + "':\n  Arguments:\n  - hi\n", 0) == 0);
}
