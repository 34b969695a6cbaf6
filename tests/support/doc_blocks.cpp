#include "support/doc_blocks.h"

#include <sstream>

namespace brine::test {

std::vector<std::string> FencedBlocks(const std::string& markdown, std::string_view language) {
  const std::string open = "```" + std::string(language);
  std::vector<std::string> blocks;
  std::istringstream in(markdown);
  std::string line, current;
  bool inside = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    const std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    if (!inside && trimmed == open) {
      inside = true;
      current.clear();
    } else if (inside && trimmed == "```") {
      inside = false;
      blocks.push_back(current);
    } else if (inside) {
      current += line + "\n";
    }
  }
  return blocks;
}

}  // namespace brine::test
