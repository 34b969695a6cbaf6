#include "times.h"

#include <array>
#include <cctype>
#include <string>

namespace brine::runner {
namespace {

// A cursor over the text with small typed reads; each returns false on mismatch.
struct Reader {
  std::string_view s;
  std::size_t pos = 0;

  bool Digits(std::size_t n, int& out) {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = s[pos + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos += n;
    out = v;
    return true;
  }
  bool Char(char c) {
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  [[nodiscard]] bool Done() const { return pos == s.size(); }
};

std::optional<Micros> Build(int y, int mo, int d, int h, int mi, int se, int us) {
  const date::year_month_day ymd{date::year(y), date::month(static_cast<unsigned>(mo)), date::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || se > 59) return std::nullopt;
  return Micros(date::sys_days(ymd)) + std::chrono::hours(h) + std::chrono::minutes(mi) + std::chrono::seconds(se) +
         std::chrono::microseconds(us);
}

// Reads [.f{1,6}] into microseconds.
bool Fraction(Reader& r, int& us) {
  us = 0;
  if (!r.Char('.')) return true;
  std::size_t n = 0;
  while (r.pos < r.s.size() && std::isdigit(static_cast<unsigned char>(r.s[r.pos])) && n < 6) {
    us = us * 10 + (r.s[r.pos] - '0');
    ++r.pos;
    ++n;
  }
  if (n == 0) return false;
  for (std::size_t i = n; i < 6; ++i) us *= 10;
  // More than 6 digits: dateutil would round; we truncate the rest.
  while (r.pos < r.s.size() && std::isdigit(static_cast<unsigned char>(r.s[r.pos]))) ++r.pos;
  return true;
}

// Reads an optional zone: Z, +HH:MM, +HHMM, +HH. Returns the offset east of UTC.
bool Zone(Reader& r, std::chrono::minutes& offset) {
  offset = std::chrono::minutes(0);
  if (r.Done()) return true;
  if (r.Char('Z') || r.Char('z')) return r.Done();
  const char sign = r.s[r.pos];
  if (sign != '+' && sign != '-') return false;
  ++r.pos;
  int hh = 0, mm = 0;
  if (!r.Digits(2, hh)) return false;
  if (!r.Done()) {
    r.Char(':');
    if (!r.Digits(2, mm)) return false;
  }
  if (!r.Done() || hh > 23 || mm > 59) return false;
  offset = std::chrono::minutes(hh * 60 + mm) * (sign == '-' ? -1 : 1);
  return true;
}

std::optional<Micros> ParseIso(std::string_view text) {
  Reader r{text};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, us = 0;
  if (!r.Digits(4, y) || !r.Char('-') || !r.Digits(2, mo) || !r.Char('-') || !r.Digits(2, d)) return std::nullopt;
  if (r.Done()) return Build(y, mo, d, 0, 0, 0, 0);
  if (!r.Char('T') && !r.Char(' ')) return std::nullopt;
  if (!r.Digits(2, h) || !r.Char(':') || !r.Digits(2, mi)) return std::nullopt;
  if (r.Char(':')) {
    if (!r.Digits(2, se) || !Fraction(r, us)) return std::nullopt;
  }
  std::chrono::minutes offset{0};
  if (!Zone(r, offset)) return std::nullopt;
  auto t = Build(y, mo, d, h, mi, se, us);
  if (!t) return std::nullopt;
  return *t - offset;
}

std::optional<Micros> ParseStartTime(std::string_view text) {
  // 2024, Jan 01 12:00:00.123456
  static constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  Reader r{text};
  int y = 0, d = 0, h = 0, mi = 0, se = 0, us = 0;
  if (!r.Digits(4, y) || !r.Char(',') || !r.Char(' ')) return std::nullopt;
  if (r.pos + 3 > text.size()) return std::nullopt;
  int mo = 0;
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (text.substr(r.pos, 3) == kMonths[i]) mo = static_cast<int>(i) + 1;
  }
  if (mo == 0) return std::nullopt;
  r.pos += 3;
  if (!r.Char(' ') || !r.Digits(2, d) || !r.Char(' ') || !r.Digits(2, h) || !r.Char(':') || !r.Digits(2, mi) ||
      !r.Char(':') || !r.Digits(2, se) || !Fraction(r, us) || !r.Done()) {
    return std::nullopt;
  }
  return Build(y, mo, d, h, mi, se, us);
}

}  // namespace

std::optional<Micros> ParseTimeArg(std::string_view text) {
  if (auto t = ParseIso(text)) return t;
  return ParseStartTime(text);
}

}  // namespace brine::runner
