// Python as the oracle for Salt's outputters (output_test.cpp,
// output_highstate_test.cpp): tests/oracle/render.py renders values with
// Python's json, PyYAML (with and without libyaml), str() and pprint, and the
// cases compare brine::output's bytes with Python's. Needs python3 with PyYAML
// built with libyaml ($BRINE_PYTHON, else /usr/bin/python3). The helpers
// REQUIRE (Catch2) that the oracle ran.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/output/outputters.h"

namespace brine::test {

// ParseJson(text), short for building values in a case.
[[nodiscard]] Value J(const std::string& text);
// Output options with this --out-indent / with colours on and this retcode.
[[nodiscard]] output::OutputOptions Indent(std::optional<int> indent);
[[nodiscard]] output::OutputOptions Colored(int retcode = 0);
// `s` repeated `n` times.
[[nodiscard]] std::string Repeat(const std::string& s, int n);

struct Case {
  std::string oracle;  // render.py's outputter name
  std::optional<int> indent;
  Value value;
};

// Runs tests/oracle/render.py once for all cases; returns what Python prints
// for each.
[[nodiscard]] std::vector<std::string> Oracle(const std::vector<Case>& cases);

// Renders every case with brine and requires Python's bytes for each.
void CheckAgainstOracle(const std::vector<Case>& cases, const output::OutputOptions& base = {});

}  // namespace brine::test
