// Salt's highstate outputter (brine::output) against Salt's own text: golden
// files from Salt's unit tests and the spec, and Python's textwrap through the
// oracle (tests/oracle/render.py, support/output_oracle.h).
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "brine/core/json.h"
#include "brine/output/outputters.h"
#include "support/golden.h"
#include "support/output_oracle.h"

using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::output::Render;
using brine::test::CheckGolden;
using brine::test::J;
using brine::test::Colored;
using brine::test::Repeat;
using brine::test::Case;
using brine::test::Oracle;

// --- highstate -----------------------------------------------------------------

TEST_CASE("output: highstate prints a failed state as Salt printed it", "[output][golden]") {
  // The output quoted in saltstack/salt#37852.
  const Value ret = J(R"({"local": {"service_|-systemd-readahead-replay_|-systemd-readahead-replay_|-running": {
    "__run_num__": 0, "changes": {}, "comment": "Service systemd-readahead-replay is already enabled, and is dead",
    "duration": 63.059, "name": "systemd-readahead-replay", "result": false, "start_time": "07:45:27.342153",
    "__sls__": "services", "__id__": "systemd-readahead-replay"}}})");
  CHECK(CheckGolden("output/highstate_failed_service.txt", Render("highstate", ret, {})) == "");
}

TEST_CASE("output: highstate prints the Name line when name differs from the ID", "[output][golden]") {
  // The 2015.8.3 output quoted in saltstack/salt#33850.
  const Value ret = J(R"({"saltdev": {"cron_|-test cron present_|-echo test2_|-present": {
    "__run_num__": 0, "changes": {}, "comment": "Cron echo test2 already present", "duration": 30.512,
    "name": "echo test2", "result": true, "start_time": "03:29:19.964210"}}})");
  CHECK(CheckGolden("output/highstate_cron_present.txt", Render("highstate", ret, {})) == "");
}

namespace {

// salt tests/pytests/unit/output/test_highstate.py, test_pct_summary_output:
// an orchestration whose changes are highstates of two minions.
Value OrchestrationReturn() {
  return J(R"({"data": {"master": {
    "salt_|-call_sleep_state_|-call_sleep_state_|-state": {"__id__": "call_sleep_state",
      "__jid__": "20170418153529810135", "__run_num__": 0, "__sls__": "orch.simple",
      "changes": {"out": "highstate", "ret": {
        "minion": {"module_|-simple-ping_|-test.ping_|-run": {"__id__": "simple-ping", "__run_num__": 0,
          "__sls__": "simple-ping", "changes": {"ret": true}, "comment": "Module function test.ping executed",
          "duration": 56.179, "name": "test.ping", "result": true, "start_time": "15:35:31.282099"}},
        "sub_minion": {"module_|-simple-ping_|-test.ping_|-run": {"__id__": "simple-ping", "__run_num__": 0,
          "__sls__": "simple-ping", "changes": {"ret": true}, "comment": "Module function test.ping executed",
          "duration": 54.103, "name": "test.ping", "result": true, "start_time": "15:35:31.005606"}}}},
      "comment": "States ran successfully. Updating sub_minion, minion.", "duration": 1638.047,
      "name": "call_sleep_state", "result": true, "start_time": "15:35:29.762657"},
    "salt_|-cmd_run_example_|-cmd.run_|-function": {"__id__": "cmd_run_example",
      "__jid__": "20200411195112288850", "__run_num__": 1, "__sls__": "orch.simple",
      "changes": {"out": "highstate", "ret": {"minion": "file1\nfile2\nfile3"}},
      "comment": "Function ran successfully. Function cmd.run ran on minion.", "duration": 412.397,
      "name": "cmd.run", "result": true, "start_time": "21:51:12.185868"}}},
    "outputter": "highstate", "retcode": 0})");
}

}  // namespace

TEST_CASE("output: highstate renders an orchestration's nested highstates as Salt's test expects",
          "[output][golden]") {
  const std::string text = Render("highstate", OrchestrationReturn(), {});
  // The assertions of Salt's own test (without state_output_pct).
  CHECK_THAT(text, Catch::Contains("Succeeded: 1 (changed=1)"));
  CHECK_THAT(text, Catch::Contains("Failed:    0"));
  CHECK_THAT(text, Catch::Contains("Total states run:     1"));
  CHECK_THAT(text, Catch::Contains("                  file2"));
  // The master's own summary: two states, both changed, 2.050 s in all.
  CHECK_THAT(text, Catch::Contains("Summary for master\n------------\nSucceeded: 2 (changed=2)\nFailed:    0\n"
                                   "------------\nTotal states run:     2\nTotal run time:   2.050 s\n"));
  CHECK(CheckGolden("output/highstate_orchestration.txt", text) == "");
}

TEST_CASE("output: highstate summarises changes, test runs, warnings and string durations", "[output][golden]") {
  const Value ret = J(R"({"web1": {
    "file_|-/etc/motd_|-/etc/motd_|-managed": {"__run_num__": 1, "result": true, "comment": "File updated\nmode 644",
      "changes": {"diff": "--- \n+++ \n@@ -1 +1 @@\n-old\n+new", "mode": "0644"},
      "start_time": "12:00:00.000001", "duration": "12.5 ms", "name": "/etc/motd"},
    "pkg_|-vim_|-vim_|-installed": {"__run_num__": 0, "result": null, "comment": "The package vim would be installed",
      "changes": {}, "start_time": "12:00:00.000000", "duration": 1000,
      "warnings": ["'pkgs' is deprecated and will be removed in Salt 3009. Use a list of package names under 'name' instead of a dict of names."]},
    "cmd_|-fail_|-false_|-run": {"__run_num__": 2, "result": false, "comment": ["a", "list"],
      "changes": {"retcode": 1}, "start_time": "12:00:01.000000", "duration": 0.5, "name": "false",
      "data": {"k": "v"}},
    "test_|-nop_|-nop_|-nop": {"__run_num__": 3, "result": true, "comment": "Success!", "changes": {}}}})");
  const std::string text = Render("highstate", ret, {});
  CHECK_THAT(text, Catch::Contains("Succeeded: 3 (unchanged=1, changed=2)\nFailed:    1\nWarnings:  1\n"
                                   "------------\nTotal states run:     4\nTotal run time:   1.013 s\n"));
  CHECK(CheckGolden("output/highstate_mixed.txt", text) == "");
  CHECK(CheckGolden("output/highstate_mixed_color.txt", Render("highstate", ret, Colored())) == "");
}

TEST_CASE("output: highstate wraps warnings as Python's textwrap does", "[output]") {
  const std::vector<std::string> words = {"a-very-long-hyphenated-word", "e-mail", Repeat("x", 100), "tail\twith\ttabs",
                                          "ab--cd", "well-known", "co-op", "--flag", "x-1-y", "\xc3\xa9-\xc3\xbc-x",
                                          "word", "-", "", "a\nb", "a_b-c_d", "a.--b", "1--2", "x---y", "a-b-c-d",
                                          "it's--fine", Repeat("w", 75), Repeat("v", 66) + "-abc"};
  std::mt19937 rng(42);
  std::vector<Case> cases;
  std::vector<Value> states;
  for (int i = 0; i < 200; ++i) {
    ValueList warnings;
    for (int w = 1 + static_cast<int>(rng() % 2); w > 0; --w) {
      std::string text;
      for (int k = 1 + static_cast<int>(rng() % 14); k > 0; --k) {
        if (!text.empty()) text += ' ';
        text += words[rng() % words.size()];
      }
      warnings.push_back(Value(text));
    }
    cases.push_back({"warnings", std::nullopt, Value(warnings)});
    states.push_back(Value::Map({{"m", Value::Map({{"a_|-b_|-b_|-c", Value::Map({{"__run_num__", Value(0)},
                                                                                    {"result", Value(true)},
                                                                                    {"comment", Value("")},
                                                                                    {"changes", Value::EmptyMap()},
                                                                                    {"warnings", Value(warnings)}})}})}}));
  }
  const std::vector<std::string> expected = Oracle(cases);
  for (std::size_t i = 0; i < states.size(); ++i) {
    const std::string text = Render("highstate", states[i], {});
    const std::size_t from = text.find("     Changes:   \n") + 17;
    const std::size_t to = text.find("\n\nSummary for m");
    std::string line = text.substr(from, to - from);
    line.erase(line.find_last_not_of(' ') + 1);  // render.py right-strips its text
    INFO("warnings " << ToJson(cases[i].value));
    CHECK(line + "\n" == expected[i]);
  }
}

TEST_CASE("output: highstate adds only the longest of parallel states to the run time", "[output]") {
  const Value ret = J(R"({"m": {
    "cmd_|-a_|-sleep 1_|-run": {"__run_num__": 0, "result": true, "comment": "", "changes": {}, "duration": 10.0},
    "cmd_|-b_|-sleep 2_|-run": {"__run_num__": 1, "result": true, "comment": "", "changes": {}, "duration": 300.0,
      "__parallel__": true},
    "cmd_|-c_|-sleep 3_|-run": {"__run_num__": 2, "result": true, "comment": "", "changes": {}, "duration": 200.0,
      "__parallel__": true}}})");
  CHECK_THAT(Render("highstate", ret, {}), Catch::EndsWith("Total run time: 310.000 ms\n"));
}

TEST_CASE("output: highstate lists compile errors and reports states without __run_num__", "[output]") {
  CHECK(Render("highstate", J(R"({"m": ["Rendering SLS 'base:x' failed", "second"]})"), {}) ==
        "m:\n    Data failed to compile:\n----------\n    Rendering SLS 'base:x' failed\n----------\n    second\n");
  const std::string text = Render("highstate", J(R"({"m": {"a_|-b_|-c_|-d": {"result": true, "comment": "ok",
    "changes": {}}}})"), {});
  CHECK_THAT(text, Catch::StartsWith("m:\nThe State execution failed to record the order in which all states were "
                                     "executed. The state return missing data is:\n"
                                     "{'changes': {}, 'comment': 'ok', 'result': True}\n----------\n"
                                     "          ID: b\n    Function: a.d\n        Name: c\n"));
}

TEST_CASE("output: highstate unwraps lookup_jid and runner envelopes", "[output]") {
  const Value state = J(R"({"m": {"test_|-t_|-t_|-nop": {"__run_num__": 0, "result": true, "comment": "ok",
    "changes": {}}}})");
  const std::string plain = Render("highstate", state, {});
  CHECK_THAT(plain, Catch::StartsWith("m:\n----------\n          ID: t\n    Function: test.nop\n      Result: True\n"
                                      "     Comment: ok\n     Changes:   \n\nSummary for m\n"));
  Value wrapped = Value::Map({{"data", state}, {"outputter", Value("highstate")}});
  CHECK(Render("highstate", wrapped, {}) == plain);
  Value with_return = Value::Map({{"return", state}});
  CHECK(Render("highstate", with_return, {}) == plain);
  Value orch = state;
  orch.as_map().front().first = "salt_master";
  orch.Set("retcode", Value(0));
  CHECK_THAT(Render("highstate", orch, {}), !Catch::Contains("retcode"));
  CHECK(Render("highstate", J(R"("already text")"), {}) == "already text\n");
  CHECK(Render("highstate", J("null"), {}) == "None\n");
}

TEST_CASE("output: highstate falls back to nested where Salt's outputter fails", "[output]") {
  // No "changes": Salt's KeyError; an int: not text; a list: no .keys(). A
  // state key without four `_|-` parts is an IndexError, which Salt does not
  // catch (salt-run shows a traceback); brine prints nested there too.
  for (const char* text : {R"({"m": {"a_|-b_|-c_|-d": {"__run_num__": 0, "result": true, "comment": ""}}})", "5",
                           "[1, 2]", R"({"m": {"x_|-y": {"__run_num__": 0, "result": true}}})"}) {
    const Value data = J(text);
    INFO(text);
    CHECK(Render("highstate", data, {}) == Render("nested", data, {}));
  }
  CHECK(Render("highstate", J("5"), Colored(1)) == Render("nested", J("5"), Colored(1)));
}

TEST_CASE("output: highstate prints an int or string host return as a change", "[output]") {
  CHECK(Render("highstate", J(R"({"m": "line one\nline two", "n": 3})"), {}) ==
        "m:\n    line one\n    line two\nn:\n    3\n");
}
