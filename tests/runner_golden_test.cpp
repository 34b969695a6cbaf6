// brine-run: salt-run's command line over the store, driven in-process
// (brine::runner::Main) over a store built through the store API
// (support/runner_site.h).
// Here: the nested text of spec 12.2's examples, and every function's output
// against its golden files and Salt's own yaml, raw and txt outputters.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "support/golden.h"
#include "support/process.h"
#include "support/runner_site.h"
#include "support/temp_dir.h"
#include "support/value_printer.h"

using brine::Value;
using brine::test::CheckGolden;
using brine::test::TempDir;
using brine::test::CliResult;
using brine::test::Slurp;
using brine::test::Site;
using brine::test::kUptime;
using brine::test::BuildSpecJobs;
using brine::test::StateReturn;

namespace {

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

}  // namespace

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
