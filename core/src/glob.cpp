#include "brine/core/glob.h"

#include <cstddef>

namespace brine {
namespace {

// Length of the bracket expression starting at pattern[i] == '[', or 0 when
// there is no closing ']' (then the '[' is literal, as in Python's translate).
std::size_t BracketLength(std::string_view p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == '!') ++j;
  if (j < p.size() && p[j] == ']') ++j;
  while (j < p.size() && p[j] != ']') ++j;
  return j < p.size() ? j - i + 1 : 0;
}

bool BracketMatches(std::string_view set, char c) {
  // set is the text between '[' and ']'.
  bool negate = false;
  std::size_t k = 0;
  if (!set.empty() && set[0] == '!') {
    negate = true;
    k = 1;
  }
  bool hit = false;
  while (k < set.size()) {
    const char lo = set[k];
    if (k + 2 < set.size() && set[k + 1] == '-') {
      const char hi = set[k + 2];
      if (lo <= c && c <= hi) hit = true;
      k += 3;
    } else {
      if (lo == c) hit = true;
      ++k;
    }
  }
  return hit != negate;
}

}  // namespace

bool FnMatch(std::string_view p, std::string_view t) {
  std::size_t pi = 0, ti = 0;
  std::size_t star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size()) {
      const char pc = p[pi];
      if (pc == '*') {
        star_p = ++pi;
        star_t = ti;
        continue;
      }
      if (pc == '?') {
        ++pi;
        ++ti;
        continue;
      }
      if (pc == '[') {
        const std::size_t len = BracketLength(p, pi);
        if (len > 0) {
          if (BracketMatches(p.substr(pi + 1, len - 2), t[ti])) {
            pi += len;
            ++ti;
            continue;
          }
        } else if (t[ti] == '[') {
          ++pi;
          ++ti;
          continue;
        }
      } else if (pc == t[ti]) {
        ++pi;
        ++ti;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool IsLiteralGlob(std::string_view pattern) {
  return pattern.find_first_of("*?[") == std::string_view::npos;
}

}  // namespace brine
