// The fenced code blocks of a Markdown document, so that tests run the
// queries the docs show exactly as written (docs/schema.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brine::test {

// The bodies of the blocks fenced "```<language>" ... "```" (indented fences
// too, as inside list items), in order, each line ending in "\n".
std::vector<std::string> FencedBlocks(const std::string& markdown, std::string_view language);

}  // namespace brine::test
