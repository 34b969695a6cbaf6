// brine-run: salt-run's command line over the store, driven in-process
// (brine::runner::Main) over a store built through the store API
// (support/runner_site.h).
// Here: argument typing, usage errors, exit codes and options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "brine/args/arguments.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/runner/cli.h"
#include "brine/store/store.h"
#include "support/golden.h"
#include "support/process.h"
#include "support/runner_site.h"
#include "support/temp_dir.h"
#include "support/value_printer.h"

namespace fs = std::filesystem;

using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::test::CheckGolden;
using brine::test::TempDir;
using brine::test::CliResult;
using brine::test::Cli;
using brine::test::Lines;
using brine::test::Keys;
using brine::test::Slurp;
using brine::test::Site;
using brine::test::kPing;
using brine::test::kUptime;
using brine::test::BuildSpecJobs;

namespace {

std::string SourceFile(const std::string& rel) { return std::string(BRINE_SOURCE_DIR) + "/" + rel; }

}  // namespace

// ---------------------------------------------------------------------------
// 1. Argument typing against Salt's yamlify_arg run by Python itself.

TEST_CASE("runner: CLI words are typed as salt-run's yamlify_arg types them", "[runner]") {
  const std::vector<std::string> words = {
      "yes", "on", "off", "no", "True", "0x1F", "010", "1:20", "~", "None", "null", ".inf", "1.5", "1e5",
      "'quoted'", "\"dq\"", "[1,2]", "['a', 'b']", "{\"a\": 1}", "{a: 1}", "a: 1", "- a", "1_000", "12_34",
      "a#b", "1 #c", "---", "", " ", "20240101120000123456", "-5", "0b101", "2024-01-01",
      // more of the same rules
      "-010", "0777", "-.inf", ".nan", "1.0e+5", "0o10", "08", "yES", "all", "item1", "...", "a\tb",
      "[1, 2] #c", "#x", "2024-01-01 12:00:00", "1:20.5", "{a: 1, a: 2}", "[a, {b: 1}]", "18446744073709551615",
      "{\"name\": \"redis\", \"port\": 6379}", "'[\"item2\",\"item3\"]'", "|", "!", "- a #c", "a: 1 #c",
      // a directive with no document: PyYAML refuses it, so Salt keeps the text
      "%", " %", "%x", "%YAML 1.1", "100%",
      // a ',' outside flow collections (yaml-cpp would hang) and inside plain scalars
      ",", ", {01b", "&a ,", "[a] ,", "\"a\" ,", "--- ,", "a, b", "a ,", "- a, b", "{a: 1, b: [2, 3]}", "k: a, b", "!!bin,ary x", "!!str, a", "&a,b"};
  TempDir tmp;
  ValueList list;
  for (const auto& w : words) list.emplace_back(w);
  std::ofstream(tmp / "words.json", std::ios::binary) << ToJson(Value(list));
  const auto oracle = brine::test::Run(
      {"/usr/bin/python3", SourceFile("tests/oracle/yamlify.py"), (tmp / "words.json").string()});
  INFO(oracle.err);
  REQUIRE(oracle.exit_code == 0);
  std::vector<std::string> expected;
  std::istringstream lines(oracle.out);
  for (std::string line; std::getline(lines, line);) expected.push_back(line);
  REQUIRE(expected.size() == words.size());

  const JsonStyle compact{.indent = -1, .spaced = false, .sort_keys = false, .python_nonfinite = true};
  for (std::size_t i = 0; i < words.size(); ++i) {
    INFO("word [" << words[i] << "]");
    const std::string brine = ToJson(brine::args::YamlifyArg(words[i]), compact);
    if (words[i] == "20240101120000123456") {
      // Python keeps the big int exact; brine keeps the text (a jid must not become a float).
      CHECK(expected[i] == "20240101120000123456");
      CHECK(brine == "\"20240101120000123456\"");
    } else {
      CHECK(brine == expected[i]);
    }
  }
}

// ---------------------------------------------------------------------------
// 2. Usage errors, exit codes and options.

TEST_CASE("runner: lookup_jid without a jid prints salt-run's Passed invalid arguments text and exits 2",
          "[runner][golden]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult r = s.Run({"jobs.lookup_jid"});
  CHECK(r.code == 2);
  const std::string head =
      "\nPassed invalid arguments: lookup_jid() missing 1 required positional argument: 'jid'\n\nUsage:\n";
  CHECK(r.out.substr(0, head.size()) == head);
  CHECK(r.out.find("jobs.lookup_jid 20240101120000123456") != std::string::npos);  // the doc follows
  CHECK(r.out.back() == '\n');
  CHECK(r.err == "brine-run: lookup_jid() missing 1 required positional argument: 'jid'\n");
  CHECK(brine::test::CheckGolden("runner/usage_lookup_jid.txt", r.out) == "");
}

TEST_CASE("runner: an unknown function is not available and exits 2", "[runner]") {
  Site s;
  const CliResult r = s.Run({"jobs.nope"});
  CHECK(r.code == 2);
  CHECK(r.out == "'jobs.nope' is not available.\n");
  CHECK(Lines(r.err) == 1);
  CHECK(r.err.rfind("brine-run: ", 0) == 0);
}

TEST_CASE("runner: bad arguments are usage errors with Python's TypeError text", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  struct Case {
    std::vector<std::string> args;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{"jobs.lookup_jid", kPing, "foo=1"}, "lookup_jid() got an unexpected keyword argument 'foo'"},
      {{"jobs.print_job", kPing, "x", "y"}, "print_job() takes from 1 to 2 positional arguments but 3 were given"},
      {{"jobs.master", "x"}, "master() takes 0 positional arguments but 1 was given"},
      {{"jobs.list_job", kPing, "jid=" + kPing}, "list_job() got multiple values for argument 'jid'"},
  };
  for (const auto& c : cases) {
    INFO(c.args[0]);
    const CliResult r = s.Run(c.args);
    CHECK(r.code == 2);
    CHECK(r.out.rfind("\nPassed invalid arguments: " + c.reason + "\n\nUsage:\n", 0) == 0);
    CHECK(r.err == "brine-run: " + c.reason + "\n");
  }
}

TEST_CASE("runner: a start_time that is not a time exits 2 naming the value", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  for (const std::string& bad :
       std::vector<std::string>{"yesterday", "2024-13-01", "2024-01-01T25:00:00", "2024, Foo 01 12:00:00",
                                "Jan 2024", "Foo 2 2024", "Feb 30 2024", "13:00 PM Jan 1 2024", "2024/01"}) {
    INFO(bad);
    const CliResult r = s.Run({"jobs.list_jobs", "start_time=" + bad});
    CHECK(r.code == 2);
    CHECK(r.out.find("Passed invalid arguments: ") != std::string::npos);
    CHECK(r.out.find("'" + bad + "'") != std::string::npos);
    CHECK(Lines(r.err) == 1);
    CHECK(r.err.find("'" + bad + "'") != std::string::npos);
  }
  const CliResult end = s.Run({"jobs.list_jobs", "end_time=soon"});
  CHECK(end.code == 2);
  CHECK(end.err.find("'soon'") != std::string::npos);
}

TEST_CASE("runner: an unknown option exits 2 with one line on stderr", "[runner]") {
  Site s;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--bogus", "jobs.list_jobs"},
                                               std::vector<std::string>{"jobs.list_jobs", "--bogus"},
                                               std::vector<std::string>{"-x", "jobs.list_jobs"}}) {
    const CliResult r = s.Run(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(Lines(r.err) == 1);
    CHECK(r.err.rfind("brine-run: ", 0) == 0);
  }
}

TEST_CASE("runner: salt-run's -t, --hard-crash and -l are accepted, and bad values exit 2 as optparse says",
          "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult plain = s.Run({"jobs.exit_success", kUptime});
  REQUIRE(plain.code == 0);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"-t", "30"}, std::vector<std::string>{"--timeout=5"},
        std::vector<std::string>{"--hard-crash"}, std::vector<std::string>{"-l", "warning"},
        std::vector<std::string>{"--log-level=QUIET"}}) {
    std::vector<std::string> args = {"jobs.exit_success", kUptime};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = s.Run(args);
    INFO(extra[0]);
    CHECK(r.code == 0);
    CHECK(r.out == plain.out);
    CHECK(r.err.empty());
  }
  const CliResult level = s.Run({"-l", "loud", "jobs.exit_success", kUptime});
  CHECK(level.code == 2);
  CHECK(level.err ==
        "brine-run: option -l: invalid choice: 'loud' (choose from 'all', 'garbage', 'trace', 'debug', 'profile', "
        "'info', 'warning', 'error', 'critical', 'quiet')\n");
  const CliResult timeout = s.Run({"-t", "soon", "jobs.exit_success", kUptime});
  CHECK(timeout.code == 2);
  CHECK(timeout.err == "brine-run: option -t: invalid integer value: 'soon'\n");
}

TEST_CASE("runner: -l debug logs the config, the store, the query and the timing to stderr", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult plain = s.Run({"jobs.list_jobs", "search_function=test.*"});
  const CliResult r = s.Run({"-l", "debug", "jobs.list_jobs", "search_function=test.*"});
  REQUIRE(r.code == 0);
  CHECK(r.out == plain.out);
  INFO(r.err);
  CHECK(r.err.find("[DEBUG   ] config " + s.conf().string() + ": read " + (s.conf() / "master").string()) !=
        std::string::npos);
  CHECK(r.err.find("[DEBUG   ] opening the store " + s.db().string() + " read-only\n") != std::string::npos);
  CHECK(r.err.find("[DEBUG   ] query: jids (oldest) to (newest), functions [\"test.*\"]") != std::string::npos);
  CHECK(r.err.find("[DEBUG   ] jobs.list_jobs took ") != std::string::npos);
  CHECK(r.err.find("[DEBUG   ] calling jobs.list_jobs(ext_source=null, outputter=null, search_metadata=null, "
                   "search_function=\"test.*\"") != std::string::npos);
}

TEST_CASE("runner: with brine.read_database the job functions read it, and queue and backup use brine.database",
          "[runner]") {
  // The read store: a copy of the store taken before a later job (as a
  // replica that lags); brine-run must answer from it, not the primary.
  Site s;
  s.Publish("20240101120000000001", "test.ping", Value::EmptyList(), "*", "glob", "root", {"web1"});
  s.Return("20240101120000000001", "web1", "test.ping", true);
  s.Run({"jobs.list_jobs"});  // closes the writer
  fs::copy_file(s.db(), s.dir() / "replica.sqlite");
  s.Publish("20240101130000000002", "test.ping", Value::EmptyList(), "*", "glob", "root", {"web1"});
  const fs::path conf = s.WriteConf("reader", "brine.read_database: " + (s.dir() / "replica.sqlite").string());
  CHECK(Keys(s.Json({"jobs.list_jobs"})) == std::vector<std::string>{"20240101120000000001", "20240101130000000002"});
  CHECK(Keys(s.Json({"jobs.list_jobs"}, conf)) == std::vector<std::string>{"20240101120000000001"});
  const CliResult debug = s.Run({"-l", "debug", "jobs.list_jobs"}, conf);
  CHECK(debug.err.find("opening the store " + (s.dir() / "replica.sqlite").string() + " read-only") !=
        std::string::npos);
  // Writes and backups go to brine.database.
  CHECK(s.Json({"queue.insert", "q", "item"}, conf) == Value(true));
  CHECK(s.Json({"queue.list_items", "q"}) == ParseJson(R"(["item"])"));
  s.Json({"brine.backup", (s.dir() / "backup.sqlite").string()}, conf);
  CHECK(brine::store::OpenStore(s.dir() / "backup.sqlite", {.access = brine::store::OpenOptions::Access::kReadOnly})
            ->GetLoad("20240101130000000002")
            .is_map());
  CHECK(!brine::store::OpenStore(s.dir() / "backup.sqlite", {.access = brine::store::OpenOptions::Access::kReadOnly})
             ->GetLoad("20240101130000000002")
             .as_map()
             .empty());
}

TEST_CASE("runner: --async prints the jid and salt-run's warning, not the result", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult r = s.Run({"--async", "jobs.exit_success", kUptime});
  CHECK(r.code == 0);
  REQUIRE(r.out.size() == 21);
  CHECK(brine::IsJid(r.out.substr(0, 20)));
  CHECK(r.err == "[WARNING ] Running in asynchronous mode. Results of this execution may be collected by attaching to "
                 "the master event bus or by examining the master job cache, if configured. This execution is "
                 "running under tag salt/run/" +
                     r.out.substr(0, 20) + "\n");
  // A streamed listing prints nothing but the jid either.
  const CliResult listing = s.Run({"jobs.list_jobs", "--async", "--out", "json"});
  CHECK(listing.code == 0);
  CHECK(listing.out.size() == 23);  // "2026...": the jid as a JSON string, and a newline
}

TEST_CASE("runner: --versions-report names brine, SQLite and ZeroMQ without a store", "[runner]") {
  const CliResult r = Cli({"--versions-report"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("Brine Version:\n             brine: ", 0) == 0);
  CHECK(r.out.find("\nDependency Versions:\n            SQLite: 3.") != std::string::npos);
  CHECK(r.out.find("            ZeroMQ: 4.") != std::string::npos);
  CHECK(r.out.find("\nSystem Versions:\n            system: Linux\n") != std::string::npos);
}

TEST_CASE("runner: -c naming a folder that does not exist exits 2 naming it", "[runner]") {
  const CliResult r = Cli({"-c", "/nonexistent/brine-test", "jobs.list_jobs"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "brine-run: -c /nonexistent/brine-test: no such folder\n");
}

TEST_CASE("runner: a missing store exits 1 with one line on stderr", "[runner]") {
  Site s;  // nothing was ever written: no store file
  const CliResult r = s.Run({"jobs.list_jobs"});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(Lines(r.err) == 1);
  CHECK(r.err.rfind("brine-run: ", 0) == 0);
  CHECK_FALSE(fs::exists(s.db()));  // a query never creates the store
}

TEST_CASE("runner: --version, -h and -d answer without a store", "[runner]") {
  const CliResult version = Cli({"--version"});
  CHECK(version.code == 0);
  CHECK(version.out.rfind("brine-run ", 0) == 0);
  CHECK(Lines(version.out) == 1);

  const CliResult help = Cli({"-h"});
  CHECK(help.code == 0);
  CHECK(help.out.rfind("Usage: brine-run [options] FUNCTION", 0) == 0);
  CHECK(help.out.find("--out-file") != std::string::npos);

  const CliResult doc = Cli({"-d", "--out", "json"});
  REQUIRE(doc.code == 0);
  const Value docs = ParseJson(doc.out);
  const std::vector<std::string> names = Keys(docs);
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const char* fn : {"brine.stats", "jobs.active", "jobs.exit_success", "jobs.last_run", "jobs.list_job",
                                "jobs.list_jobs", "jobs.list_jobs_filter", "jobs.lookup_jid", "jobs.master",
                                "jobs.print_job"}) {
    CHECK(std::count(names.begin(), names.end(), std::string(fn)) == 1);
  }
  // Each entry names the function's arguments with their defaults.
  const std::string lookup_doc = *docs.FindString("jobs.lookup_jid");
  CHECK(lookup_doc.rfind("jobs.lookup_jid(jid, ext_source=", 0) == 0);
  CHECK(lookup_doc.find("missing=") != std::string::npos);
  CHECK(docs.FindString("jobs.list_jobs")->find("search_function") != std::string::npos);

  const CliResult one = Cli({"-d", "jobs.lookup_jid", "--out=json"});
  REQUIRE(one.code == 0);
  CHECK(Keys(ParseJson(one.out)) == std::vector<std::string>{"jobs.lookup_jid"});
  // nested (the default) lists them too
  const CliResult nested = Cli({"-d"});
  CHECK(nested.code == 0);
  CHECK(nested.out.find("jobs.list_jobs_filter:\n") != std::string::npos);
}

TEST_CASE("runner: --out=json and --out json agree, and options may follow the function", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult a = s.Run({"--out=json", "jobs.list_job", kUptime});
  const CliResult b = s.Run({"--out", "json", "jobs.list_job", kUptime});
  const CliResult c = Cli({"jobs.list_job", kUptime, "--out", "json", "-c", s.conf().string()});
  const CliResult d = Cli({"jobs.list_job", "--output=json", kUptime, "--config-dir=" + s.conf().string()});
  REQUIRE(a.code == 0);
  CHECK(a.out.rfind("{\n    \"jid\": \"" + kUptime + "\",\n", 0) == 0);
  CHECK(b.out == a.out);
  CHECK(c.out == a.out);
  CHECK(d.out == a.out);
  CHECK((a.err + b.err + c.err + d.err).empty());
}

TEST_CASE("runner: --out-file empties the file first unless --out-file-append, and --out-indent -1 prints one line",
          "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const fs::path file = s.dir() / "out.txt";
  std::ofstream(file) << "before\n";
  const CliResult first = s.Run({"jobs.exit_success", kUptime, "--out", "json", "--out-indent", "-1",
                                 "--out-file", file.string()});
  CHECK(first.code == 0);
  CHECK(first.out.empty());
  CHECK(Slurp(file) == "{\"web1\": true, \"web2\": false}\n");
  const CliResult second = s.Run({"jobs.exit_success", kUptime, "--out=json", "--out-indent=-1",
                                  "--out-file=" + file.string(), "--out-file-append"});
  CHECK(second.code == 0);
  CHECK(Slurp(file) == "{\"web1\": true, \"web2\": false}\n{\"web1\": true, \"web2\": false}\n");
  // A streamed listing is emptied first too.
  CHECK(s.Run({"jobs.list_jobs", "--out=json", "--out-file", file.string()}).code == 0);
  CHECK(ParseJson(Slurp(file)).as_map().size() == 2);

  const CliResult zero = s.Run({"jobs.exit_success", kUptime, "--out", "json", "--out-indent", "0"});
  CHECK(zero.out == "{\n\"web1\": true,\n\"web2\": false\n}\n");
  const CliResult bad = s.Run({"jobs.exit_success", kUptime, "--out-indent", "x"});
  CHECK(bad.code == 2);
}

TEST_CASE("runner: colour is on for a terminal unless --no-color, and --force-color forces it", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const std::vector<std::string> args = {"-c", s.conf().string(), "jobs.exit_success", kUptime};
  const std::string plain = "web1:\n    True\nweb2:\n    False\n";
  const std::string colour =
      "\x1b[0;36mweb1\x1b[0;0m:\n    \x1b[0;1;33mTrue\x1b[0;0m\n\x1b[0;36mweb2\x1b[0;0m:\n    \x1b[0;1;33mFalse\x1b[0;0m\n";
  CHECK(Cli(args).out == plain);
  CHECK(Cli(args, brine::runner::Terminal::kTty).out == colour);
  std::vector<std::string> no_color = args;
  no_color.emplace_back("--no-color");
  CHECK(Cli(no_color, brine::runner::Terminal::kTty).out == plain);
  std::vector<std::string> force = args;
  force.emplace_back("--force-color");
  CHECK(Cli(force).out == colour);
  // An --out-file gets no colour codes.
  force.insert(force.end(), {"--out-file", (s.dir() / "o.txt").string()});
  CHECK(Cli(force, brine::runner::Terminal::kTty).code == 0);
  CHECK(Slurp(s.dir() / "o.txt") == plain);
}

TEST_CASE("runner: an unknown outputter falls back to nested with a warning", "[runner]") {
  Site s;
  BuildSpecJobs(s);
  const CliResult r = s.Run({"jobs.exit_success", kUptime, "--out", "fancy"});
  CHECK(r.code == 0);
  CHECK(r.out == "web1:\n    True\nweb2:\n    False\n");
  CHECK(r.err == "brine-run: Invalid outputter fancy specified, fall back to nested\n");
}
