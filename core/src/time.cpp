#include "brine/core/time.h"

#include <charconv>

namespace brine {

Micros SystemClock::Now() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

std::string FormatStamp(Micros t) {
  const auto day = date::floor<date::days>(t);
  const auto us = (t - day).count() % 1000000;
  const auto secs = date::floor<std::chrono::seconds>(t);
  if (us == 0) return date::format("%Y-%m-%dT%H:%M:%S", secs);
  return date::format("%Y-%m-%dT%H:%M:%S", t);  // %S carries the 6-digit fraction
}

namespace {

bool ReadDigits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::optional<Micros> ParseStamp(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.f{1,6}]
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 19 || !ReadDigits(s, 0, 4, y) || s[4] != '-' || !ReadDigits(s, 5, 2, mo) ||
      s[7] != '-' || !ReadDigits(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') ||
      !ReadDigits(s, 11, 2, h) || s[13] != ':' || !ReadDigits(s, 14, 2, mi) || s[16] != ':' ||
      !ReadDigits(s, 17, 2, se)) {
    return std::nullopt;
  }
  int us = 0;
  if (s.size() > 19) {
    const std::size_t digits = s.size() - 20;
    if (s[19] != '.' || digits < 1 || digits > 6 || !ReadDigits(s, 20, digits, us)) {
      return std::nullopt;
    }
    for (std::size_t i = digits; i < 6; ++i) us *= 10;
  }
  const date::year_month_day ymd{date::year(y), date::month(static_cast<unsigned>(mo)),
                                 date::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || se > 60) return std::nullopt;
  return Micros(date::sys_days(ymd)) + std::chrono::hours(h) + std::chrono::minutes(mi) +
         std::chrono::seconds(se) + std::chrono::microseconds(us);
}

std::string FormatSqliteTime(Micros t) {
  return date::format("%Y-%m-%d %H:%M:%S", date::floor<std::chrono::milliseconds>(t));
}

}  // namespace brine
