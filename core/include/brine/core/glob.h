// Python's fnmatch.fnmatchcase, which Salt uses for tag and target globs on
// POSIX: `*`, `?`, `[seq]`, `[!seq]`, case-sensitive; a `[` without a closing
// `]` is a literal.
#pragma once

#include <string_view>

namespace brine {

[[nodiscard]] bool FnMatch(std::string_view pattern, std::string_view text);

// True when `pattern` has no glob metacharacters, so it matches only itself.
[[nodiscard]] bool IsLiteralGlob(std::string_view pattern);

// The text of `pattern` before its first metacharacter: every text the glob
// matches starts with it (the part of a glob an index can serve).
[[nodiscard]] std::string_view GlobLiteralPrefix(std::string_view pattern);

}  // namespace brine
