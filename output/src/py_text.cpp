#include "py_text.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <cmath>
#include <limits>

#include "brine/core/json.h"
#include "brine/core/utf8.h"

namespace brine::output::py {
namespace {

struct Range {
  char32_t first;
  char32_t last;
};

constexpr Range kPrintable[] = {
#include "unicode_printable.inc"
};

void AppendHex(char32_t v, int digits, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

// Works on the bytes: only the characters at the two ends are decoded, so
// stripping a multi-megabyte output costs nothing. A byte that is not valid
// UTF-8 stands for U+DC80..U+DCFF (surrogateescape), which is never a space.
std::string_view StripView(std::string_view bytes, bool left, bool right) {
  std::size_t begin = 0;
  std::size_t end = bytes.size();
  if (left) {
    while (begin < end) {
      const std::size_t n = Utf8SequenceLength(bytes.substr(begin, end - begin));
      if (n == 0 || !IsSpace(DecodeUtf8(bytes.substr(begin, n)))) break;
      begin += n;
    }
  }
  if (right) {
    while (end > begin) {
      // The last code point starts at most 3 continuation bytes back.
      std::size_t start = end - 1;
      while (start > begin && end - start < 4 && (static_cast<unsigned char>(bytes[start]) & 0xC0) == 0x80) --start;
      const std::size_t n = Utf8SequenceLength(bytes.substr(start, end - start));
      if (n != end - start || !IsSpace(DecodeUtf8(bytes.substr(start, n)))) break;
      end = start;
    }
  }
  return bytes.substr(begin, end - begin);
}

std::string StripImpl(std::string_view bytes, bool left, bool right) {
  return std::string(StripView(bytes, left, right));
}

// Digits with single underscores between them (PEP 515), at least one digit.
bool ConsumeDigits(std::string_view s, std::size_t& i, std::string& clean) {
  const std::size_t start = i;
  bool last_digit = false;
  while (i < s.size()) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      clean += c;
      last_digit = true;
      ++i;
    } else if (c == '_' && last_digit && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') {
      last_digit = false;
      ++i;
    } else {
      break;
    }
  }
  return i > start;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

std::u32string Decode(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) {
      out += static_cast<char32_t>(b);
      ++i;
      continue;
    }
    const std::size_t n = Utf8SequenceLength(bytes.substr(i));
    if (n == 0) {
      out += static_cast<char32_t>(0xDC00 + b);
      ++i;
    } else {
      out += DecodeUtf8(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

void AppendEncoded(char32_t c, std::string& out) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out += static_cast<char>(c - 0xDC00);
  } else {
    AppendUtf8(c, out);
  }
}

std::string Encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) AppendEncoded(c, out);
  return out;
}

std::size_t Length(std::string_view bytes) {
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < bytes.size()) {
    const std::size_t len =
        static_cast<unsigned char>(bytes[i]) < 0x80 ? 1 : Utf8SequenceLength(bytes.substr(i));
    i += len == 0 ? 1 : len;
    ++n;
  }
  return n;
}

bool IsPrintable(char32_t c) {
  const auto* it = std::upper_bound(std::begin(kPrintable), std::end(kPrintable), c,
                                    [](char32_t v, const Range& r) { return v < r.first; });
  if (it == std::begin(kPrintable)) return false;
  --it;
  return c <= it->last;
}

bool IsSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsLineBoundary(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

std::vector<std::string> SplitLines(std::string_view bytes, bool keepends) {
  const std::u32string text = Decode(bytes);
  std::vector<std::string> lines;
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!IsLineBoundary(text[i])) {
      ++i;
      continue;
    }
    std::size_t eol = i + 1;
    if (text[i] == '\r' && eol < text.size() && text[eol] == '\n') ++eol;
    const std::size_t stop = keepends ? eol : i;
    lines.push_back(Encode(std::u32string_view(text).substr(start, stop - start)));
    start = i = eol;
  }
  if (start < text.size()) lines.push_back(Encode(std::u32string_view(text).substr(start)));
  return lines;
}

std::string Strip(std::string_view bytes) { return StripImpl(bytes, true, true); }
std::string RStrip(std::string_view bytes) { return StripImpl(bytes, false, true); }
std::size_t RStripLength(std::string_view bytes) {
  // An ASCII last byte that is not a space ends the text as it is: the '}'
  // of each entry a listing streams.
  if (!bytes.empty()) {
    const auto last = static_cast<unsigned char>(bytes.back());
    if (last < 0x80 && !IsSpace(last)) return bytes.size();
  }
  return StripView(bytes, false, true).size();
}
std::string LStrip(std::string_view bytes) { return StripImpl(bytes, true, false); }

std::string StrRepr(std::string_view bytes) {
  const std::u32string text = Decode(bytes);
  const bool has_single = text.find(U'\'') != std::u32string::npos;
  const bool has_double = text.find(U'"') != std::u32string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out;
  out.reserve(bytes.size() + 2);
  out += quote;
  for (const char32_t c : text) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      AppendHex(c, 2, out);
    } else if (c < 0x7F) {
      out += static_cast<char>(c);
    } else if (IsPrintable(c)) {
      AppendUtf8(c, out);
    } else if (c <= 0xFF) {
      out += "\\x";
      AppendHex(c, 2, out);
    } else if (c <= 0xFFFF) {
      out += "\\u";
      AppendHex(c, 4, out);
    } else {
      out += "\\U";
      AppendHex(c, 8, out);
    }
  }
  out += quote;
  return out;
}

std::string Repr(const Value& v) {
  if (auto scalar = PythonScalarStr(v)) return *scalar;
  switch (v.kind()) {
    case Value::Kind::kString:
      return StrRepr(v.as_string());
    case Value::Kind::kList: {
      std::string out = "[";
      bool first = true;
      for (const Value& item : v.as_list()) {
        if (!first) out += ", ";
        first = false;
        out += Repr(item);
      }
      return out + "]";
    }
    case Value::Kind::kMap: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : v.as_map()) {
        if (!first) out += ", ";
        first = false;
        out += StrRepr(key);
        out += ": ";
        out += Repr(item);
      }
      return out + "}";
    }
    default:  // the scalars, answered above
      break;
  }
  return "";
}

std::string Str(const Value& v) { return v.is_string() ? v.as_string() : Repr(v); }

std::optional<double> ParseFloat(std::string_view bytes) {
  const std::string stripped = Strip(bytes);
  std::string_view s = stripped;
  std::string clean;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
  const std::string_view word = s.substr(i);
  if (EqualsIgnoreCase(word, "inf") || EqualsIgnoreCase(word, "infinity")) {
    return clean == "-" ? -HUGE_VAL : HUGE_VAL;
  }
  if (EqualsIgnoreCase(word, "nan")) return clean == "-" ? -std::numeric_limits<double>::quiet_NaN()
                                                         : std::numeric_limits<double>::quiet_NaN();
  const bool int_digits = ConsumeDigits(s, i, clean);
  bool frac_digits = false;
  if (i < s.size() && s[i] == '.') {
    clean += s[i++];
    frac_digits = ConsumeDigits(s, i, clean);
  }
  if (!int_digits && !frac_digits) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
    if (!ConsumeDigits(s, i, clean)) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

bool CodePointLess(std::string_view a, std::string_view b) {
  // Where the first bytes that differ are both ASCII, the bytes before them
  // are the same and decode alike (no sequence can run on into an ASCII
  // byte), so those two bytes decide: the sorted keys of a listing (jids,
  // minion ids) are settled here without a pass over either string.
  const auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (at_a != a.end() && at_b != b.end() && static_cast<unsigned char>(*at_a) < 0x80 &&
      static_cast<unsigned char>(*at_b) < 0x80) {
    return *at_a < *at_b;
  }
  // UTF-8 byte order is code point order; only bytes that are not valid UTF-8
  // (U+DC80.. in Python's view) need decoding to compare as Python does.
  if (IsValidUtf8(a) && IsValidUtf8(b)) return a < b;
  return Decode(a) < Decode(b);
}

}  // namespace brine::output::py
