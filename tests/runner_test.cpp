// brine-run: salt-run's command line over the store. Most cases drive the CLI
// in-process (brine::runner::Main) over a store built through the store API;
// the [e2e] cases start a real brine-master, push the events Salt fires, and
// run the real brine-run binary.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/output/outputters.h"
#include "brine/runner/cli.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"
#include "support/value_printer.h"
#include "support/golden.h"
#include "support/master_process.h"
#include "support/process.h"
#include "support/temp_dir.h"

#include "brine/args/arguments.h"

using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::ValueMap;
using brine::test::TempDir;
namespace fs = std::filesystem;


namespace {

constexpr const char* kNoJob = "Cannot contact returner or no job with this jid";

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// brine-run ARGS..., in-process, stdout not a terminal (unless said).
CliResult Cli(const std::vector<std::string>& args,
              brine::runner::Terminal terminal = brine::runner::Terminal::kNotTty) {
  std::vector<std::string> words = {"brine-run"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  const int code = brine::runner::Main(static_cast<int>(words.size()), argv.data(), out, err, terminal);
  return {code, out.str(), err.str()};
}

std::size_t Lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::vector<std::string> Keys(const Value& v) {
  std::vector<std::string> out;
  if (v.is_map()) {
    for (const auto& [k, _] : v.as_map()) out.push_back(k);
  }
  return out;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A master config folder (`master` sets cachedir and brine.database) over a
// store built through the store API, in a temp dir of its own.
class Site {
 public:
  explicit Site(const std::string& extra_config = "") {
    fs::create_directories(dir_ / "cache");
    WriteConf("conf", extra_config);
  }

  // Another config folder on the same store.
  fs::path WriteConf(const std::string& name, const std::string& extra_config) {
    fs::create_directories(dir_ / name);
    std::ofstream(dir_ / name / "master") << "cachedir: " << (dir_ / "cache").string() << "\n"
                                          << "brine.database: " << db().string() << "\n"
                                          << extra_config << "\n";
    return dir_ / name;
  }

  [[nodiscard]] fs::path dir() const { return dir_.path(); }
  [[nodiscard]] fs::path conf() const { return dir_ / "conf"; }
  [[nodiscard]] fs::path db() const { return dir_ / "brine.sqlite"; }

  brine::store::Store& Store() {
    if (!store_) store_ = brine::store::OpenStore(db());
    return *store_;
  }

  // The publish load of a job (Salt's save_load input) and its expected minions.
  void Publish(const std::string& jid, const std::string& fun, Value arg, Value tgt, const std::string& tgt_type,
               const std::string& user, const std::vector<std::string>& minions, const Value& extra = Value::EmptyMap()) {
    Value load = Value::Map({{"jid", jid},
                             {"fun", fun},
                             {"arg", std::move(arg)},
                             {"tgt", std::move(tgt)},
                             {"tgt_type", tgt_type},
                             {"user", user}});
    for (const auto& [k, v] : extra.as_map()) load.Set(k, v);
    Store().SaveLoad(jid, load, minions.empty() ? std::nullopt : std::optional(minions));
  }

  // One minion's return load (Salt's store_job input).
  void Return(const std::string& jid, const std::string& minion, const std::string& fun, Value ret, int retcode = 0,
              bool success = true, const Value& extra = Value::EmptyMap()) {
    Value load = Value::Map({{"jid", jid},
                             {"id", minion},
                             {"fun", fun},
                             {"fun_args", Value::EmptyList()},
                             {"return", std::move(ret)},
                             {"retcode", retcode},
                             {"success", success}});
    for (const auto& [k, v] : extra.as_map()) load.Set(k, v);
    const auto outcome = Store().Returner(load);
    REQUIRE(outcome.kind == brine::store::ReturnOutcome::Kind::kStored);
  }

  // brine-run -c <conf> ARGS... (the writer is closed first).
  CliResult Run(std::vector<std::string> args, const fs::path& conf_dir = {}) {
    store_.reset();
    args.insert(args.begin(), {"-c", (conf_dir.empty() ? conf() : conf_dir).string()});
    return Cli(args);
  }

  // The --out json answer of a successful call, parsed.
  Value Json(std::vector<std::string> args, const fs::path& conf_dir = {}) {
    args.emplace_back("--out=json");
    const CliResult r = Run(std::move(args), conf_dir);
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.code == 0);
    REQUIRE(r.err.empty());
    return ParseJson(r.out);
  }

  std::vector<std::string> JsonKeys(std::vector<std::string> args) { return Keys(Json(std::move(args))); }

 private:
  TempDir dir_;
  std::unique_ptr<brine::store::Store> store_;
};

// A job record as jobs.list_jobs shows it (format_jid_instance's key order).
Value Record(const std::string& fun, Value args, Value tgt, const std::string& tgt_type, const std::string& user,
             const std::string& start, const Value& metadata = Value()) {
  Value r = Value::Map({{"Function", fun},
                        {"Arguments", std::move(args)},
                        {"Target", std::move(tgt)},
                        {"Target-type", tgt_type},
                        {"User", user}});
  if (!metadata.is_null()) r.Set("Metadata", metadata);
  r.Set("StartTime", start);
  return r;
}

// The two jobs of spec salt-jobs.md 12.2's examples.
const std::string kPing = "20240101120000123456";
const std::string kUptime = "20240101120500654321";

void BuildSpecJobs(Site& s) {
  s.Publish(kPing, "test.ping", Value::EmptyList(), "*", "glob", "root", {});
  s.Publish(kUptime, "cmd.run", Value::List({"uptime"}), "web*", "glob", "sudo_alice", {"web1", "web2"});
  s.Return(kUptime, "web1", "cmd.run", " 12:05:01 up 3 days", 0, true);
}

// The text of the fenced block that follows `marker` in a spec file.
std::string SpecBlock(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  const auto open = text.find("```\n", at);
  REQUIRE(open != std::string::npos);
  const auto body = open + 4;
  const auto close = text.find("```", body);
  REQUIRE(close != std::string::npos);
  return text.substr(body, close - body);
}

// Salt's yaml (salt.utils.yaml.safe_dump: CSafeDumper), raw and txt
// outputters, then display_output (right-strip, one newline), on the value in
// the JSON file argv[2]; argv[1] names the outputter.
constexpr const char* kSaltOutputters = R"(import json, pprint, sys, yaml
out = sys.argv[1]
v = json.load(open(sys.argv[2], encoding='utf-8'))
if out == 'yaml':
    t = yaml.dump(v, Dumper=yaml.CSafeDumper, default_flow_style=False, allow_unicode=True)
elif out == 'raw':
    t = str(v)
elif isinstance(v, dict):
    t = ''
    for key, value in v.items():
        try:
            for line in value.splitlines():
                t += f'{key}: {line}\n'
        except AttributeError:
            t += f'{key}: {value}\n'
elif isinstance(v, str):
    t = v
else:
    t = pprint.pformat(v)
t = t.rstrip()
sys.stdout.buffer.write((t + '\n').encode('utf-8') if t else b'')
)";

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

using Jids = std::vector<std::string>;

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

// ---------------------------------------------------------------------------
// 5. list_job, print_job, lookup_jid, exit_success, last_run, list_jobs_filter.

namespace {

const std::string kJA = "20240301100000000000";  // cmd.run on web1-3: web1 "up", web2 "", web3 silent, web4 extra
const std::string kJB = "20240301110000000000";  // state.apply, a highstate return
const std::string kJC = "20240301120000000000";  // saltutil.find_job
const std::string kJD = "20240301130000000000";  // test.ping
const std::string kUnknown = "20240301000000000000";

Value StateReturn() {
  return Value::Map({{"test_|-t1_|-t1_|-succeed_without_changes",
                      Value::Map({{"name", "t1"},
                                  {"changes", Value::EmptyMap()},
                                  {"result", true},
                                  {"comment", "Success!"},
                                  {"__sls__", "demo"},
                                  {"__run_num__", 0},
                                  {"start_time", "11:00:00.100000"},
                                  {"duration", 1.5},
                                  {"__id__", "t1"}})}});
}

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

// ---------------------------------------------------------------------------
// 7. Nested text: spec 12.2's examples verbatim, then goldens for every function.

TEST_CASE("runner: spec 12.2's three nested examples, byte for byte", "[runner][golden]") {
  Site s;
  BuildSpecJobs(s);
  const std::string spec = Slurp(std::string(BRINE_FIXTURES_DIR) + "/salt-jobs-spec-12.md");
  REQUIRE_FALSE(spec.empty());
  const std::string list_jobs = SpecBlock(spec, "Example (`salt-run jobs.list_jobs`, no color):");
  const std::string list_job = SpecBlock(spec, "Example (`salt-run jobs.list_job 20240101120500654321`):");
  const std::string lookup = SpecBlock(spec, "Example (`salt-run jobs.lookup_jid 20240101120500654321 missing=True`):");
  CHECK(s.Run({"jobs.list_jobs"}).out == list_jobs);
  CHECK(s.Run({"jobs.list_job", kUptime}).out == list_job);
  CHECK(s.Run({"jobs.lookup_jid", kUptime, "missing=True"}).out == lookup);
  // The same with the real binary.
  const auto bin = brine::test::Run({brine::test::Binary("brine-run").string(), "-c", s.conf().string(),
                                     "jobs.lookup_jid", kUptime, "missing=True"});
  CHECK(bin.exit_code == 0);
  CHECK(bin.out == lookup);
  // And the spec's json example (12.3).
  CHECK(s.Run({"jobs.list_job", kUptime, "--out", "json"}).out == SpecBlock(spec, "### 12.3 `json` outputter"));
}

TEST_CASE("runner: every function's output matches its goldens and Salt's yaml, raw and txt outputters",
          "[runner][golden]") {
  Site s("brine.active_window_s: 3153600000");  // 100 years: the spec jobs count as young
  BuildSpecJobs(s);
  s.Publish("20240101121000000000", "state.apply", Value::EmptyList(), "web1", "glob", "root", {"web1"},
            Value::Map({{"metadata", Value::Map({{"ticket", "OPS-1"}, {"note", "ünïcode"}})}}));
  s.Return("20240101121000000000", "web1", "state.apply", StateReturn(), 0, true, Value::Map({{"out", "highstate"}}));
  s.Store().PutCounters({{"received", 5}, {"stored", 5}});
  struct Call {
    std::string name;
    std::vector<std::string> args;
    int code = 0;
  };
  const std::vector<Call> calls = {
      {"list_jobs", {"jobs.list_jobs"}},
      {"list_jobs_filter", {"jobs.list_jobs_filter", "2"}},
      {"list_job", {"jobs.list_job", kUptime}},
      {"list_job_unknown", {"jobs.list_job", "20240101000000000000"}},
      {"lookup_jid", {"jobs.lookup_jid", kUptime, "missing=True"}},
      {"lookup_jid_highstate", {"jobs.lookup_jid", "20240101121000000000"}},
      {"print_job", {"jobs.print_job", kUptime}},
      {"exit_success", {"jobs.exit_success", kUptime}},
      {"last_run", {"jobs.last_run"}},
      {"active", {"jobs.active"}},
      {"master", {"jobs.master"}},
      {"usage_error", {"jobs.list_job"}, 2},
  };
  const TempDir tmp;
  for (const auto& c : calls) {
    std::string json_text;
    for (const std::string& out : std::vector<std::string>{"nested", "json", "yaml", "raw", "txt", "color"}) {
      std::vector<std::string> args = c.args;
      if (out == "color") {
        args.emplace_back("--force-color");
      } else if (out != "nested") {
        args.insert(args.end(), {"--out", out});
      }
      const CliResult r = s.Run(args);
      INFO(c.name << " " << out << "\n" << r.err);
      CHECK(r.code == c.code);
      if (out != "raw" && out != "txt") {
        CHECK(brine::test::CheckGolden("runner/" + c.name + "." + out + ".txt", r.out) == "");
      }
      if (out == "json") json_text = r.out;
      if (out == "color" && c.name != "master") CHECK(r.out.find("\x1b[0;") != std::string::npos);
      if ((out == "yaml" || out == "raw" || out == "txt") && !json_text.empty()) {
        // The text is what Salt's outputter of that name makes of the same data.
        std::ofstream(tmp / "data.json", std::ios::binary) << json_text;
        const auto oracle =
            brine::test::Run({"/usr/bin/python3", "-c", kSaltOutputters, out, (tmp / "data.json").string()});
        INFO(oracle.err);
        REQUIRE(oracle.exit_code == 0);
        CHECK(r.out == oracle.out);
      }
    }
  }
}

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
