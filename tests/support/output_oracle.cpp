#include "support/output_oracle.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "brine/core/json.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace brine::test {

using output::OutputOptions;
using output::Render;

Value J(const std::string& text) { return ParseJson(text); }

OutputOptions Indent(std::optional<int> indent) {
  OutputOptions o;
  o.indent = indent;
  return o;
}

OutputOptions Colored(int retcode) {
  OutputOptions o;
  o.color = OutputOptions::Color::kOn;
  o.retcode = retcode;
  return o;
}

// Runs tests/oracle/render.py once for all cases; returns what Python prints
// for each. python3 with PyYAML (built with libyaml) must be installed.
std::vector<std::string> Oracle(const std::vector<Case>& cases) {
  TempDir dir;
  ValueList batch;
  for (const Case& c : cases) {
    batch.push_back(Value::List({c.oracle, c.indent ? Value(*c.indent) : Value(), c.value}));
  }
  std::ofstream(dir / "cases.json", std::ios::binary) << ToJson(Value(batch));
  const char* python = std::getenv("BRINE_PYTHON");
  const std::string command = std::string(python != nullptr ? python : "/usr/bin/python3") + " '" BRINE_SOURCE_DIR
                              "/tests/oracle/render.py' < '" + (dir / "cases.json").string() + "' > '" +
                              (dir / "results").string() + "'";
  const int rc = std::system(command.c_str());
  INFO("oracle command: " << command);
  REQUIRE(rc == 0);
  const std::string results = ReadFile(dir / "results");
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < results.size()) {
    const std::size_t nl = results.find('\n', pos);
    REQUIRE(nl != std::string::npos);
    const std::size_t len = std::stoul(results.substr(pos, nl - pos));
    out.push_back(results.substr(nl + 1, len));
    pos = nl + 1 + len;
  }
  REQUIRE(out.size() == cases.size());
  return out;
}

// Renders every case with brine and requires Python's bytes for each.
void CheckAgainstOracle(const std::vector<Case>& cases, const OutputOptions& base) {
  const std::vector<std::string> expected = Oracle(cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    OutputOptions options = base;
    options.indent = cases[i].indent;
    std::string name = cases[i].oracle;
    if (name == "yaml-pure") {
      name = "yaml";
      options.yaml_emitter = OutputOptions::YamlEmitter::kPyYaml;
    }
    INFO("case " << i << ": " << cases[i].oracle << " indent "
                 << (cases[i].indent ? std::to_string(*cases[i].indent) : "none") << " value "
                 << ToJson(cases[i].value));
    CHECK(Render(name, cases[i].value, options) == expected[i]);
  }
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace brine::test
