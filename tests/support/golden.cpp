#include "support/golden.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace brine::test {

std::string CheckGolden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = std::filesystem::path(BRINE_SOURCE_DIR) / "tests/golden" / name;
  if (std::getenv("BRINE_REGEN_GOLDEN") != nullptr) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return "";
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return "missing golden file " + path.string() + " (run with BRINE_REGEN_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string expected = ss.str();
  if (expected == actual) return "";
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  return path.string() + " differs at byte " + std::to_string(i) + ": expected \"" +
         expected.substr(i, 80) + "\", got \"" + actual.substr(i, 80) + "\"";
}

}  // namespace brine::test
