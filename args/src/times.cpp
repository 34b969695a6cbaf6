#include "brine/args/times.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace brine::args {
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

std::string Lower(std::string_view s) {
  std::string out;
  for (const char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits on `sep`; every part must be digits.
bool DigitParts(std::string_view s, char sep, std::vector<std::string_view>& parts) {
  parts.clear();
  std::size_t start = 0;
  while (true) {
    const auto at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (!AllDigits(parts.back())) return false;
    if (at == std::string_view::npos) return true;
    start = at + 1;
  }
}

int ToInt(std::string_view s) {
  int v = 0;
  for (const char c : s) v = v * 10 + (c - '0');
  return v;
}

// The forms people type that dateutil.parser.parse (what Salt's list_jobs
// uses) reads, taken word by word: a month name (Jan or January, any case),
// a day, a four-digit year, YYYY/MM/DD, MM/DD/YYYY (dateutil's month-first
// default), HH:MM[:SS[.ffffff]] with an optional AM/PM, and weekday names,
// commas, "UTC", "GMT" and "Z", which change nothing here.
std::optional<Micros> ParseWords(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kMonths = {"jan", "feb", "mar", "apr", "may", "jun",
                                                              "jul", "aug", "sep", "oct", "nov", "dec"};
  static constexpr std::array<std::string_view, 12> kMonthNames = {
      "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
      "december"};
  static constexpr std::array<std::string_view, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  int y = -1, mo = -1, d = -1, h = 0, mi = 0, se = 0, us = 0;
  bool have_time = false;
  std::optional<bool> pm;
  std::vector<std::string_view> parts;
  std::string words(text);
  for (char& c : words) {
    if (c == ',') c = ' ';
  }
  std::size_t pos = 0;
  while (pos < words.size()) {
    const auto b = words.find_first_not_of(" \t", pos);
    if (b == std::string::npos) break;
    auto e = words.find_first_of(" \t", b);
    if (e == std::string::npos) e = words.size();
    const std::string_view w = std::string_view(words).substr(b, e - b);
    pos = e;
    const std::string lw = Lower(w);
    if (std::isalpha(static_cast<unsigned char>(w[0]))) {
      int found = -1;
      for (std::size_t i = 0; i < 12; ++i) {
        if (lw == kMonths[i] || lw == kMonthNames[i] || (lw.size() == 4 && lw == "sept" && i == 8)) {
          found = static_cast<int>(i) + 1;
        }
      }
      if (found > 0) {
        if (mo > 0) return std::nullopt;
        mo = found;
      } else if (lw == "am" || lw == "pm") {
        pm = lw == "pm";
      } else if (lw == "utc" || lw == "gmt" || lw == "z") {
      } else if (lw.size() >= 3 && std::find(kDays.begin(), kDays.end(), lw.substr(0, 3)) != kDays.end()) {
      } else {
        return std::nullopt;
      }
    } else if (w.find(':') != std::string_view::npos) {
      if (have_time) return std::nullopt;
      Reader r{w};
      if (!r.Digits(2, h) && !r.Digits(1, h)) return std::nullopt;
      if (!r.Char(':') || !r.Digits(2, mi)) return std::nullopt;
      if (r.Char(':') && (!r.Digits(2, se) || !Fraction(r, us))) return std::nullopt;
      if (!r.Done()) return std::nullopt;
      have_time = true;
    } else if (w.find('/') != std::string_view::npos) {
      if (y >= 0 || !DigitParts(w, '/', parts) || parts.size() != 3) return std::nullopt;
      if (parts[0].size() == 4) {
        y = ToInt(parts[0]), mo = ToInt(parts[1]), d = ToInt(parts[2]);
      } else if (parts[2].size() == 4) {
        mo = ToInt(parts[0]), d = ToInt(parts[1]), y = ToInt(parts[2]);
      } else {
        return std::nullopt;
      }
    } else if (AllDigits(w) && w.size() <= 2 && d < 0) {
      d = ToInt(w);
    } else if (AllDigits(w) && w.size() == 4 && y < 0) {
      y = ToInt(w);
    } else {
      return std::nullopt;
    }
  }
  if (y < 0 || mo < 0 || d < 0) return std::nullopt;
  if (pm) {
    if (h < 1 || h > 12) return std::nullopt;
    h = h % 12 + (*pm ? 12 : 0);
  }
  return Build(y, mo, d, h, mi, se, us);
}

}  // namespace

std::optional<Micros> ParseTimeArg(std::string_view text) {
  if (auto t = ParseIso(text)) return t;
  if (auto t = ParseStartTime(text)) return t;
  return ParseWords(text);
}

}  // namespace brine::args
