// Python's fnmatch.fnmatchcase, which Salt uses for tag and target globs on
// POSIX: `*`, `?`, `[seq]`, `[!seq]`, case-sensitive; a `[` without a closing
// `]` is a literal.
#pragma once

#include <string_view>

namespace brine {

[[nodiscard]] bool FnMatch(std::string_view pattern, std::string_view text);

// True when `pattern` has no glob metacharacters, so it matches only itself.
[[nodiscard]] bool IsLiteralGlob(std::string_view pattern);

}  // namespace brine
