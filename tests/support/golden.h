// Golden files: tests/golden/<name> pins output byte for byte. Run a test with
// BRINE_REGEN_GOLDEN=1 to rewrite the files, then review the diff in the commit.
#pragma once

#include <string>

namespace brine::test {

// Compares `actual` with tests/golden/<name> (or rewrites it when
// BRINE_REGEN_GOLDEN is set). Returns "" when equal, else a description of
// the first difference.
[[nodiscard]] std::string CheckGolden(const std::string& name, const std::string& actual);

}  // namespace brine::test
