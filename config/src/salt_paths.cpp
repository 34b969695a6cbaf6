#include "salt_paths.h"

#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

namespace brine::config::internal {

std::string NormPath(std::string_view path) {
  if (path.empty()) return ".";
  std::size_t leading = 0;
  while (leading < path.size() && path[leading] == '/') ++leading;
  // POSIX: "//x" may mean something else than "/x", so Python keeps two.
  std::string prefix = leading == 0 ? "" : (leading == 2 ? "//" : "/");
  std::vector<std::string_view> parts;
  std::size_t i = leading;
  while (i <= path.size()) {
    std::size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(i, slash - i);
    if (part.empty() || part == ".") {
      // nothing
    } else if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (prefix.empty()) {
        parts.push_back(part);  // a relative path may climb; "/.." is "/"
      }
    } else {
      parts.push_back(part);
    }
    i = slash + 1;
  }
  std::string out = prefix;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) out += '/';
    out += parts[k];
  }
  return out.empty() ? "." : out;
}

std::string AbsPath(std::string_view path) {
  if (!path.empty() && path[0] == '/') return NormPath(path);
  std::string cwd = std::filesystem::current_path().string();
  return NormPath(cwd + "/" + std::string(path));
}

std::string SaltPathJoin(std::string_view root, std::string_view path) {
  std::string r = NormPath(root);
  std::string p = NormPath(path);
  p.erase(0, p.find_first_not_of('/'));
  if (p.empty()) return NormPath(r);
  return NormPath(r.ends_with('/') ? r + p : r + "/" + p);
}

std::string PrependRootDir(std::string_view root_dir_option, std::string_view path) {
  // salt.config.prepend_root_dir, step by step. def_root_dir is
  // salt.syspaths.ROOT_DIR ("/") with its trailing slash stripped: "".
  const std::string root_dir = AbsPath(root_dir_option);
  const std::string def_root_dir;
  std::optional<std::string> tmp_path_def_root_dir;
  std::optional<std::string> tmp_path_root_dir;
  std::string p(path);
  if (p == def_root_dir || p.starts_with(def_root_dir + "/")) {
    tmp_path_def_root_dir = p.substr(def_root_dir.size());
  }
  if (!root_dir.empty() && (p == root_dir || p.starts_with(root_dir + "/"))) {
    tmp_path_root_dir = p.substr(root_dir.size());
  }
  // Python tests these for truth, so "" counts as unset.
  bool def_set = tmp_path_def_root_dir && !tmp_path_def_root_dir->empty();
  bool root_set = tmp_path_root_dir && !tmp_path_root_dir->empty();
  if (def_set && !root_set) {
    p = *tmp_path_def_root_dir;
  } else if (root_set && !def_set) {
    p = *tmp_path_root_dir;
  } else if (def_set && root_set) {
    // Both matched: Salt keeps the more specific root. "" is in every string,
    // so with the default root that is always root_dir.
    p = *tmp_path_root_dir;
  }
  // (Salt's remaining branch, an absolute path under neither root, cannot
  // happen here: with def_root_dir "" every absolute path matched above.)
  return SaltPathJoin(root_dir, p);
}

std::string ExpandUser(std::string_view path) {
  if (path.empty() || path[0] != '~') return std::string(path);
  std::size_t slash = path.find('/');
  std::string_view user = path.substr(1, slash == std::string_view::npos ? path.npos : slash - 1);
  std::string home;
  if (user.empty()) {
    if (const char* env = std::getenv("HOME")) {
      home = env;
    } else if (const passwd* pw = getpwuid(getuid())) {
      home = pw->pw_dir;
    } else {
      return std::string(path);
    }
  } else {
    const passwd* pw = getpwnam(std::string(user).c_str());
    if (pw == nullptr) return std::string(path);
    home = pw->pw_dir;
  }
  // Python strips the home's trailing slashes ("/" stays "/" via `or root`).
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  std::string rest = slash == std::string_view::npos ? "" : std::string(path.substr(slash));
  if (home == "/" && !rest.empty()) return rest;
  return home + rest;
}

std::vector<std::string> GlobSorted(const std::string& pattern) {
  glob_t g{};
  // NOESCAPE: Python's glob treats a backslash as an ordinary character.
  int rc = glob(pattern.c_str(), GLOB_NOESCAPE | GLOB_NOSORT, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace brine::config::internal
