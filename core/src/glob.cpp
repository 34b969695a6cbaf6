#include "brine/core/glob.h"

#include <cstddef>
#include <string>

#include "brine/core/utf8.h"

namespace brine {
namespace {

// The matcher works on characters: bytes when both sides are ASCII, else code
// points (Python matches str characters, so `?` is one `é`, not one byte).
template <typename Char>
using View = std::basic_string_view<Char>;

// Length of the bracket expression starting at pattern[i] == '[', or 0 when
// there is no closing ']' (then the '[' is literal, as in Python's translate).
template <typename Char>
std::size_t BracketLength(View<Char> p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == Char('!')) ++j;
  if (j < p.size() && p[j] == Char(']')) ++j;
  while (j < p.size() && p[j] != Char(']')) ++j;
  return j < p.size() ? j - i + 1 : 0;
}

template <typename Char>
bool BracketMatches(View<Char> set, Char c) {
  // set is the text between '[' and ']'.
  bool negate = false;
  std::size_t k = 0;
  if (!set.empty() && set[0] == Char('!')) {
    negate = true;
    k = 1;
  }
  bool hit = false;
  while (k < set.size()) {
    const Char lo = set[k];
    if (k + 2 < set.size() && set[k + 1] == Char('-')) {
      const Char hi = set[k + 2];
      if (lo <= c && c <= hi) hit = true;
      k += 3;
    } else {
      if (lo == c) hit = true;
      ++k;
    }
  }
  return hit != negate;
}

template <typename Char>
bool Match(View<Char> p, View<Char> t) {
  std::size_t pi = 0, ti = 0;
  std::size_t star_p = View<Char>::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size()) {
      const Char pc = p[pi];
      if (pc == Char('*')) {
        star_p = ++pi;
        star_t = ti;
        continue;
      }
      if (pc == Char('?')) {
        ++pi;
        ++ti;
        continue;
      }
      if (pc == Char('[')) {
        const std::size_t len = BracketLength(p, pi);
        if (len > 0) {
          if (BracketMatches(p.substr(pi + 1, len - 2), t[ti])) {
            pi += len;
            ++ti;
            continue;
          }
        } else if (t[ti] == Char('[')) {
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
    if (star_p == View<Char>::npos) return false;
    pi = star_p;
    ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == Char('*')) ++pi;
  return pi == p.size();
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// The characters Python sees: UTF-8 code points, and a byte that is not
// UTF-8 as U+DC80..U+DCFF (surrogateescape).
std::u32string CodePoints(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const std::size_t n = Utf8SequenceLength(s);
    if (n == 0) {
      out += static_cast<char32_t>(0xDC00 + static_cast<unsigned char>(s[0]));
      s.remove_prefix(1);
    } else {
      out += DecodeUtf8(s.substr(0, n));
      s.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace

bool FnMatch(std::string_view p, std::string_view t) {
  if (IsAscii(p) && IsAscii(t)) return Match(p, t);
  const std::u32string pc = CodePoints(p);
  const std::u32string tc = CodePoints(t);
  return Match(std::u32string_view(pc), std::u32string_view(tc));
}

bool IsLiteralGlob(std::string_view pattern) {
  return pattern.find_first_of("*?[") == std::string_view::npos;
}

std::string_view GlobLiteralPrefix(std::string_view pattern) { return pattern.substr(0, pattern.find_first_of("*?[")); }

}  // namespace brine
