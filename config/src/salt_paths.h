// Salt's path helpers, as salt/config/__init__.py uses them, over plain
// strings (Python str paths) so the results match Salt's byte for byte.
// Internal to brine_config.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brine::config::internal {

// posixpath.normpath: collapses `//`, `.` and `..`; "" -> "."; keeps exactly
// two leading slashes (POSIX allows them a meaning) and folds three or more.
[[nodiscard]] std::string NormPath(std::string_view path);

// os.path.abspath: NormPath of the path joined to the current directory when relative.
[[nodiscard]] std::string AbsPath(std::string_view path);

// salt.utils.path.join(root, path): both normalised, `path`'s leading slashes
// dropped, joined, normalised again. join("/srv", "/var/x") == "/srv/var/x".
[[nodiscard]] std::string SaltPathJoin(std::string_view root, std::string_view path);

// salt.config.prepend_root_dir for one option's value, with Salt's default
// root "/" (whose rstripped form is ""): a path already under `root_dir` has
// that prefix removed first, then every path is joined under abspath(root_dir).
[[nodiscard]] std::string PrependRootDir(std::string_view root_dir, std::string_view path);

// os.path.expanduser: "~" and "~/..." from $HOME (the passwd entry when unset),
// "~user/..." from that user's passwd entry; unchanged when it cannot expand.
[[nodiscard]] std::string ExpandUser(std::string_view path);

// glob.glob(pattern) then sorted(): `*`, `?` and `[...]` within one path
// component, a leading `.` only matched explicitly, backslash literal, no
// brace or tilde expansion. Paths are sorted by bytes, as Python sorts str.
// Unreadable directories just yield no matches, as in Python.
[[nodiscard]] std::vector<std::string> GlobSorted(const std::string& pattern);

}  // namespace brine::config::internal
