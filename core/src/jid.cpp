#include "brine/core/jid.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace brine {
namespace {

bool IsPySpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python's int(str) on ASCII text: surrounding whitespace, one sign, digits
// with single underscores between them. Returns the value when it fits a long
// long, and whether the text parses at all.
bool PythonIntParses(std::string_view s, long long* value) {
  std::size_t b = 0, e = s.size();
  while (b < e && IsPySpace(s[b])) ++b;
  while (e > b && IsPySpace(s[e - 1])) --e;
  s = s.substr(b, e - b);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() == '_' || s.back() == '_') return false;
  long long v = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (s[i + 1] == '_') return false;
      continue;
    }
    if (c < '0' || c > '9') return false;
    if (v < 100000000000000000LL) v = v * 10 + (c - '0');
  }
  if (value != nullptr) *value = negative ? -v : v;
  return true;
}

bool LengthRule(std::string_view jid) {
  return jid.size() == 20 || (jid.size() > 21 && jid[20] == '_');
}

constexpr std::array<std::string_view, 13> kMonths = {"",    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

JidGenerator::JidGenerator(const Clock& clock, JidUniqueness uniqueness, long pid)
    : clock_(clock), uniqueness_(uniqueness), pid_(pid) {}

std::string JidGenerator::Next() {
  Micros t = clock_.Now();
  if (uniqueness_ == JidUniqueness::kPlain) return FormatJid(t);
  std::lock_guard lock(mu_);
  if (last_ && t <= *last_) t = *last_ + std::chrono::microseconds(1);
  last_ = t;
  return FormatJid(t) + "_" + std::to_string(pid_);
}

std::string FormatJid(Micros t) {
  const auto day = date::floor<date::days>(t);
  const date::year_month_day ymd(day);
  const date::hh_mm_ss<std::chrono::microseconds> hms(t - day);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d%02u%02u%02d%02d%02d%06lld", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()),
                static_cast<long long>(hms.subseconds().count()));
  return buf;
}

bool IsJid(std::string_view jid) {
  return LengthRule(jid) && PythonIntParses(jid.substr(0, 20), nullptr);
}

std::string JidToTime(std::string_view jid) {
  std::string out;
  AppendJidTime(jid, out);
  return out;
}

void AppendJidTime(std::string_view jid, std::string& out) {
  if (!LengthRule(jid)) return;
  const std::string_view month_text = jid.substr(4, 2);
  long long month = 0;
  if (!PythonIntParses(month_text, &month)) {
    throw JidError("invalid literal for int() with base 10: '" + std::string(month_text) + "'");
  }
  // Python indexes its month list with the int, so -1..-12 count from the end.
  if (month > 12 || month < -13) throw JidError("list index out of range");
  const std::string_view name = kMonths[static_cast<std::size_t>(month < 0 ? month + 13 : month)];
  // "YYYY, Mon DD hh:mm:ss.uuuuuu" put together in place: one append.
  char buf[32];
  char* p = buf;
  const auto put = [&p](std::string_view s) { p = std::copy(s.begin(), s.end(), p); };
  put(jid.substr(0, 4));
  put(", ");
  put(name);
  put(" ");
  put(jid.substr(6, 2));
  put(" ");
  put(jid.substr(8, 2));
  put(":");
  put(jid.substr(10, 2));
  put(":");
  put(jid.substr(12, 2));
  put(".");
  put(jid.substr(14, 6));
  out.append(buf, static_cast<std::size_t>(p - buf));
}

std::optional<Micros> JidToMicros(std::string_view jid) {
  if (!LengthRule(jid)) return std::nullopt;
  int f[7] = {};
  const int widths[7] = {4, 2, 2, 2, 2, 2, 6};
  std::size_t pos = 0;
  for (int i = 0; i < 7; ++i) {
    int v = 0;
    for (int k = 0; k < widths[i]; ++k, ++pos) {
      const char c = jid[pos];
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    f[i] = v;
  }
  const date::year_month_day ymd{date::year(f[0]), date::month(static_cast<unsigned>(f[1])),
                                 date::day(static_cast<unsigned>(f[2]))};
  if (!ymd.ok() || f[3] > 23 || f[4] > 59 || f[5] > 59) return std::nullopt;
  return Micros(date::sys_days(ymd)) + std::chrono::hours(f[3]) + std::chrono::minutes(f[4]) +
         std::chrono::seconds(f[5]) + std::chrono::microseconds(f[6]);
}

}  // namespace brine
