// Implicit scalar typing: PyYAML's Resolver regexes (yaml/resolver.py) written
// out as small matchers, and its SafeConstructor scalar constructors
// (yaml/constructor.py), with SaltYamlSafeLoader's changes (salt/utils/yamlloader.py).
//
// The matchers are hand-written rather than std::regex because libstdc++'s
// regex recurses once per character and a long scalar can overflow the stack.
// config_test.cpp checks them against PyYAML itself on thousands of inputs.
#include "yaml_scalar.h"

#include <locale.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/config/config_error.h"
#include "brine/config/yaml.h"

namespace brine::config {
namespace internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsDigitOrUnderscore(char c) { return IsDigit(c) || c == '_'; }

bool AllOf(std::string_view s, bool (*pred)(char)) { return std::all_of(s.begin(), s.end(), pred); }

std::string_view SkipSign(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s;
}

// Index just past `[0-9_]*` starting at `i`.
std::size_t SkipDigitsAndUnderscores(std::string_view s, std::size_t i) {
  while (i < s.size() && IsDigitOrUnderscore(s[i])) ++i;
  return i;
}

// Matches `(?::[0-5]?[0-9])+` at `i`; returns the index after it, or npos
// when there is not at least one group. A group is one digit, or two digits of
// which the first is 0-5; a third digit can never be followed by what the
// callers need next (`:`, `.` or the end), so it fails the match.
std::size_t MatchBase60Groups(std::string_view s, std::size_t i) {
  std::size_t groups = 0;
  while (i < s.size() && s[i] == ':') {
    std::size_t j = i + 1;
    std::size_t digits = 0;
    while (j + digits < s.size() && IsDigit(s[j + digits])) ++digits;
    if (digits == 0 || digits > 2 || (digits == 2 && s[j] > '5')) return std::string_view::npos;
    i = j + digits;
    ++groups;
  }
  return groups > 0 ? i : std::string_view::npos;
}

// `[eE][-+][0-9]+` at `i` through the end, or nothing at all.
bool MatchOptionalExponentToEnd(std::string_view s, std::size_t i) {
  if (i == s.size()) return true;
  if (s[i] != 'e' && s[i] != 'E') return false;
  if (i + 1 >= s.size() || (s[i + 1] != '-' && s[i + 1] != '+')) return false;
  std::string_view digits = s.substr(i + 2);
  return !digits.empty() && AllOf(digits, IsDigit);
}

bool IsNullText(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// The bool regex lists exactly these spellings.
std::optional<bool> MatchBool(std::string_view s) {
  static constexpr std::array<std::string_view, 9> kTrue = {"yes",  "Yes", "YES", "true", "True",
                                                            "TRUE", "on",  "On",  "ON"};
  static constexpr std::array<std::string_view, 9> kFalse = {
      "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  if (std::find(kTrue.begin(), kTrue.end(), s) != kTrue.end()) return true;
  if (std::find(kFalse.begin(), kFalse.end(), s) != kFalse.end()) return false;
  return std::nullopt;
}

// ^(?:[-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*)
//   | [-+]?0x[0-9a-fA-F_]+ | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$
bool MatchesInt(std::string_view s) {
  std::string_view rest = SkipSign(s);
  if (rest.empty()) return false;
  if (rest.starts_with("0b")) {
    return rest.size() > 2 &&
           AllOf(rest.substr(2), [](char c) { return c == '0' || c == '1' || c == '_'; });
  }
  if (rest.starts_with("0x")) {
    return rest.size() > 2 && AllOf(rest.substr(2), [](char c) {
             return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '_';
           });
  }
  if (rest[0] == '0') {
    return AllOf(rest.substr(1), [](char c) { return (c >= '0' && c <= '7') || c == '_'; });
  }
  if (!IsDigit(rest[0])) return false;
  std::size_t i = SkipDigitsAndUnderscores(rest, 1);
  if (i == rest.size()) return true;
  return MatchBase60Groups(rest, i) == rest.size();
}

// ^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
//   | \.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
//   | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
//   | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN))$
bool MatchesFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  if (!s.empty() && s[0] == '.' && s.size() > 1 && IsDigit(s[1])) {
    return MatchOptionalExponentToEnd(s, SkipDigitsAndUnderscores(s, 2));
  }
  std::string_view rest = SkipSign(s);
  if (rest == ".inf" || rest == ".Inf" || rest == ".INF") return true;
  if (rest.empty() || !IsDigit(rest[0])) return false;
  std::size_t i = SkipDigitsAndUnderscores(rest, 1);
  if (i < rest.size() && rest[i] == '.') {
    return MatchOptionalExponentToEnd(rest, SkipDigitsAndUnderscores(rest, i + 1));
  }
  i = MatchBase60Groups(rest, i);
  if (i == std::string_view::npos || i >= rest.size() || rest[i] != '.') return false;
  return SkipDigitsAndUnderscores(rest, i + 1) == rest.size();
}

// An unsigned magnitude, exact while it fits 64 bits, with a long double kept
// alongside for when it does not (Python ints have no limit; Value does).
struct Magnitude {
  std::uint64_t exact = 0;
  bool overflow = false;
  long double approx = 0;

  void MulAdd(std::uint64_t base, std::uint64_t digit) {
    approx = approx * static_cast<long double>(base) + static_cast<long double>(digit);
    if (overflow) return;
    std::uint64_t next = 0;
    if (__builtin_mul_overflow(exact, base, &next) || __builtin_add_overflow(next, digit, &next)) {
      overflow = true;
    } else {
      exact = next;
    }
  }
  void Add(const Magnitude& other) {
    approx += other.approx;
    if (overflow || other.overflow || __builtin_add_overflow(exact, other.exact, &exact)) {
      overflow = true;
    }
  }
};

int DigitValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Python's int(digits, base) for digits that are already sign- and underscore-free.
std::optional<Magnitude> ParseDigits(std::string_view digits, int base) {
  if (digits.empty()) return std::nullopt;
  Magnitude m;
  for (char c : digits) {
    int d = DigitValue(c);
    if (d >= base) return std::nullopt;
    m.MulAdd(static_cast<std::uint64_t>(base), static_cast<std::uint64_t>(d));
  }
  return m;
}

[[noreturn]] void ThrowBadInt(std::string_view text) {
  throw YamlError("invalid literal for an integer: '" + std::string(text) + "'");
}

Value MakeInt(bool negative, const Magnitude& m, std::string_view decimal_digits) {
  if (!m.overflow) {
    if (!negative) return Value(static_cast<unsigned long long>(m.exact));
    constexpr std::uint64_t kMinMagnitude = std::uint64_t{1} << 63;
    if (m.exact < kMinMagnitude) return Value(-static_cast<std::int64_t>(m.exact));
    if (m.exact == kMinMagnitude) return Value(std::numeric_limits<std::int64_t>::min());
  }
  // Too big for Value's integers. Python keeps such an int exact; the nearest
  // thing here is its decimal text (a 20-digit jid must keep every digit), so
  // a decimal integer becomes the string of its digits. Other bases, which
  // carry no decimal digits to keep, become the nearest float.
  if (!decimal_digits.empty()) {
    std::string text(decimal_digits);
    if (negative) text.insert(text.begin(), '-');
    return Value(std::move(text));
  }
  const double d = static_cast<double>(m.approx);
  return Value(negative ? -d : d);
}

// Python's float(text) for the forms YAML hands it: optional surrounding
// blanks and sign, decimal digits with an optional dot and exponent, or
// inf/infinity/nan in any case. Hex floats, which strtod would take, are refused.
std::optional<double> PythonFloat(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text[0] == '-' || text[0] == '+') return std::nullopt;
  double d = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ptr != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `d` alone here; Python rounds to inf or 0 like strtod.
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
    std::string copy(text);
    d = strtod_l(copy.c_str(), nullptr, c_locale);
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -d : d;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts;
}

}  // namespace

Value ConstructYamlInt(std::string_view text) {
  std::string value(text);
  // SALT: SaltYamlSafeLoader.construct_scalar strips the leading zeros of an
  // int written without a sign before PyYAML sees it, so Salt reads 010 as
  // ten where PyYAML reads eight. The sign check is on the raw text, so -010
  // is still octal. Kept: brine must read Salt's files as Salt does.
  if (value != "0" && value.starts_with('0') && !value.starts_with("0b") &&
      !value.starts_with("0x")) {
    value.erase(0, value.find_first_not_of('0'));
    if (value.empty()) value = "0";
  }
  std::erase(value, '_');
  if (value.empty()) {
    // Salt turns "0_" into "_" and then crashes in PyYAML (IndexError); PyYAML
    // alone reads it as 0. Take PyYAML's answer where there was a digit.
    if (std::any_of(text.begin(), text.end(), IsDigit)) return Value(0);
    ThrowBadInt(text);
  }
  bool negative = value[0] == '-';
  std::string_view v = value;
  if (v[0] == '-' || v[0] == '+') v.remove_prefix(1);
  if (v == "0") return Value(0);
  std::optional<Magnitude> m;
  std::string_view decimal;
  if (v.starts_with("0b")) {
    m = ParseDigits(v.substr(2), 2);
  } else if (v.starts_with("0x")) {
    m = ParseDigits(v.substr(2), 16);
  } else if (!v.empty() && v[0] == '0') {
    // Python's int(value, 8) also takes a 0o prefix.
    std::string_view octal = v;
    if (octal.starts_with("0o") || octal.starts_with("0O")) octal.remove_prefix(2);
    m = ParseDigits(octal, 8);
  } else if (v.find(':') != std::string_view::npos) {
    // Base 60, most significant part first: 1:20 = 1*60 + 20.
    Magnitude total;
    Magnitude place;
    place.exact = 1;
    place.approx = 1;
    std::vector<std::string_view> parts = SplitColons(v);
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      std::optional<Magnitude> digit = ParseDigits(*it, 10);
      if (!digit) ThrowBadInt(text);
      Magnitude product;  // digit * 60^i
      product.approx = digit->approx * place.approx;
      product.overflow = digit->overflow || place.overflow ||
                         __builtin_mul_overflow(digit->exact, place.exact, &product.exact);
      total.Add(product);
      place.MulAdd(60, 0);
    }
    m = total;
  } else {
    m = ParseDigits(v, 10);
    decimal = v;
  }
  if (!m) ThrowBadInt(text);
  return MakeInt(negative, *m, decimal);
}

Value ConstructYamlFloat(std::string_view text) {
  std::string value = AsciiLower(text);
  std::erase(value, '_');
  if (value.empty()) throw YamlError("invalid literal for a float: ''");
  double sign = 1.0;
  std::string_view v = value;
  if (v[0] == '-') sign = -1.0;
  if (v[0] == '-' || v[0] == '+') v.remove_prefix(1);
  if (v == ".inf") return Value(sign * std::numeric_limits<double>::infinity());
  if (v == ".nan") return Value(std::numeric_limits<double>::quiet_NaN());
  if (v.find(':') != std::string_view::npos) {
    // Base 60 with a fractional last part, summed in PyYAML's order (least
    // significant first) so the result is the same double.
    std::vector<std::string_view> parts = SplitColons(v);
    double base = 1.0;
    double total = 0.0;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      std::optional<double> digit = PythonFloat(*it);
      if (!digit) throw YamlError("invalid literal for a float: '" + std::string(text) + "'");
      total += *digit * base;
      base *= 60;
    }
    return Value(sign * total);
  }
  std::optional<double> d = PythonFloat(v);
  if (!d) throw YamlError("invalid literal for a float: '" + std::string(text) + "'");
  return Value(sign * *d);
}

bool ConstructYamlBool(std::string_view text) {
  std::string lower = AsciiLower(text);
  if (lower == "yes" || lower == "true" || lower == "on") return true;
  if (lower == "no" || lower == "false" || lower == "off") return false;
  throw YamlError("not a boolean: '" + std::string(text) + "'");
}

}  // namespace internal

Value TypeYamlScalar(std::string_view text) {
  // PyYAML picks candidate resolvers by first character, then takes the first
  // whose regex matches. No text matches two of these regexes, so the order
  // below cannot change an answer. Timestamps are left out on purpose: Salt
  // keeps them as strings, which is what falling through gives.
  if (internal::IsNullText(text)) return Value();
  if (std::optional<bool> b = internal::MatchBool(text)) return Value(*b);
  if (internal::MatchesInt(text)) return internal::ConstructYamlInt(text);
  if (internal::MatchesFloat(text)) return internal::ConstructYamlFloat(text);
  if (text == "=") {
    throw YamlError("could not determine a constructor for the tag 'tag:yaml.org,2002:value'");
  }
  if (text == "<<") {
    throw YamlError("could not determine a constructor for the tag 'tag:yaml.org,2002:merge'");
  }
  return Value(std::string(text));
}

}  // namespace brine::config
