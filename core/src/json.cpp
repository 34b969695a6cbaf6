#include "brine/core/json.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>

#include "brine/core/utf8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace brine {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendU16Escape(unsigned code, std::string& out) {
  out += "\\u";
  out += kHex[(code >> 12) & 0xF];
  out += kHex[(code >> 8) & 0xF];
  out += kHex[(code >> 4) & 0xF];
  out += kHex[code & 0xF];
}

// Bytes written as they are: printable ASCII except '"' and '\\' (and DEL
// when ensure_ascii).
constexpr auto PlainBytes(bool ensure_ascii) {
  std::array<bool, 256> t{};
  for (int b = 0x20; b < 0x80; ++b) t[b] = b != '"' && b != '\\' && !(b == 0x7F && ensure_ascii);
  return t;
}
constexpr std::array<bool, 256> kPlain = PlainBytes(false);
constexpr std::array<bool, 256> kPlainAscii = PlainBytes(true);

// Word-at-a-time string scanning (SWAR): eight bytes are tested at once for
// the bytes that end a run, so the plain text that is most of a load or a
// return costs one test per word instead of one table lookup per byte. The
// masks below set a lane's high bit where the test holds; a lane above a
// true one may be set falsely (borrows), never a lane below it, so the
// lowest set lane is exact.
constexpr std::uint64_t kLanes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
constexpr std::uint64_t ZeroLanes(std::uint64_t w) { return (w - kLanes) & ~w & kHighs; }
constexpr std::uint64_t EqualLanes(std::uint64_t w, unsigned char c) { return ZeroLanes(w ^ (kLanes * c)); }
constexpr std::uint64_t BelowSpaceLanes(std::uint64_t w) { return (w - kLanes * 0x20) & ~w & kHighs; }

enum class RunKind {
  kStringBytes,  // any byte but '"', '\\' and controls: what may stand in a JSON string
  kAsciiText,    // also not DEL or non-ASCII: what every style writes unchanged
};

// The end of the run of `kind` bytes from `p`: sixteen bytes per test with
// SSE2, else eight per word (SWAR; little-endian lanes: byte i is bits
// 8i..8i+7), then byte by byte for the last few.
template <RunKind kind>
const char* RunEnd(const char* p, const char* end) {
#if defined(__SSE2__)
  // Sixteen bytes per test where the target has SSE2 (every x86-64).
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i below_space = _mm_set1_epi8(0x1F);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
    if constexpr (kind == RunKind::kAsciiText) {
      // Signed: 0x00..0x1F and 0x80..0xFF are below 0x20; and DEL.
      stop = _mm_or_si128(stop, _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
      stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)));
    } else {
      stop = _mm_or_si128(stop, _mm_cmpeq_epi8(_mm_min_epu8(v, below_space), v));  // unsigned <= 0x1F
    }
    if (const int mask = _mm_movemask_epi8(stop); mask != 0) return p + std::countr_zero(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  static_assert(std::endian::native == std::endian::little);
  while (end - p >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    std::uint64_t stop = EqualLanes(w, '"') | EqualLanes(w, '\\') | BelowSpaceLanes(w);
    if constexpr (kind == RunKind::kAsciiText) stop |= (w & kHighs) | EqualLanes(w, 0x7F);
    if (stop != 0) return p + std::countr_zero(stop) / 8;
    p += 8;
  }
  for (; p != end; ++p) {
    const auto b = static_cast<unsigned char>(*p);
    if (b == '"' || b == '\\' || b < 0x20) break;
    if (kind == RunKind::kAsciiText && b >= 0x7F) break;
  }
  return p;
}

// WriteString without the quotes. Written in pieces cut between whole UTF-8
// sequences (or raw bytes), the pieces give the whole string's text.
void WriteStringBody(std::string_view s, const JsonStyle& style, std::string& out) {
  std::size_t i = 0;
  while (i < s.size()) {
    // Copy the run of bytes that need no escaping in one append: most of a
    // return is plain text.
    const auto& plain = style.ensure_ascii ? kPlainAscii : kPlain;
    std::size_t run = static_cast<std::size_t>(RunEnd<RunKind::kAsciiText>(s.data() + i, s.data() + s.size()) - s.data());
    while (run < s.size() && plain[static_cast<unsigned char>(s[run])]) ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      if (i == s.size()) break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          // Python's ensure_ascii=True also escapes DEL (it keeps only ' '..'~').
          if (c < 0x20 || (c == 0x7F && style.ensure_ascii)) {
            AppendU16Escape(c, out);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const std::size_t n = Utf8SequenceLength(s.substr(i));
    if (n == 0) {
      // Not UTF-8: keep the byte, as Python's surrogateescape does.
      AppendU16Escape(0xDC00 + c, out);
      ++i;
      continue;
    }
    if (style.ensure_ascii) {
      const char32_t cp = DecodeUtf8(s.substr(i, n));
      if (cp >= 0x10000) {
        const unsigned v = static_cast<unsigned>(cp) - 0x10000;
        AppendU16Escape(0xD800 + (v >> 10), out);
        AppendU16Escape(0xDC00 + (v & 0x3FF), out);
      } else {
        AppendU16Escape(static_cast<unsigned>(cp), out);
      }
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
}

void WriteString(std::string_view s, const JsonStyle& style, std::string& out) {
  out += '"';
  WriteStringBody(s, style, out);
  out += '"';
}

void WriteFloat(double d, const JsonStyle& style, std::string& out) {
  if (std::isnan(d)) {
    // Storage: a number spelling no finite float is written as (the
    // smallest subnormal is 5e-324), which SQLite's json functions accept
    // (as 0.0) and ParseJson reads back as NaN (json.h).
    out += style.python_nonfinite ? "NaN" : (std::signbit(d) ? "-9e-999" : "9e-999");
  } else if (std::isinf(d)) {
    if (style.python_nonfinite) {
      out += d > 0 ? "Infinity" : "-Infinity";
    } else {
      out += d > 0 ? "9e999" : "-9e999";
    }
  } else {
    out += PythonFloatRepr(d);
  }
}

// A line break and the indent of `level`, after a ',' when `after_item`: one
// copy from a run of spaces, since append(n, ' ') per line costs far more and
// a listing is mostly short lines.
void Newline(const JsonStyle& style, int level, std::string& out, bool after_item = false) {
  static constexpr std::string_view kBreak = ",\n                                                                ";
  const std::size_t n = static_cast<std::size_t>(style.indent) * static_cast<std::size_t>(level) + (after_item ? 2 : 1);
  if (n <= kBreak.size() - (after_item ? 0 : 1)) {
    out.append(kBreak.data() + (after_item ? 0 : 1), n);
  } else {
    out += after_item ? ",\n" : "\n";
    out.append(n - (after_item ? 2 : 1), ' ');
  }
}

void Write(const Value& v, const JsonStyle& style, int level, std::string& out) {
  const bool pretty = style.indent >= 0;
  const char* item_sep = pretty ? "," : (style.spaced ? ", " : ",");
  const char* key_sep = (pretty || style.spaced) ? ": " : ":";
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kUint: out += std::to_string(v.as_uint()); return;
    case Value::Kind::kFloat: WriteFloat(v.as_float(), style, out); return;
    case Value::Kind::kString: WriteString(v.as_string(), style, out); return;
    case Value::Kind::kList: {
      const auto& l = v.as_list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (i > 0) out += item_sep;
        if (pretty) Newline(style, level + 1, out);
        Write(l[i], style, level + 1, out);
      }
      if (pretty) Newline(style, level, out);
      out += ']';
      return;
    }
    case Value::Kind::kMap: {
      const auto& m = v.as_map();
      if (m.empty()) {
        out += "{}";
        return;
      }
      const auto member = [&](std::size_t i, const std::pair<std::string, Value>& e) {
        if (i > 0) out += item_sep;
        if (pretty) Newline(style, level + 1, out);
        WriteString(e.first, style, out);
        out += key_sep;
        Write(e.second, style, level + 1, out);
      };
      out += '{';
      if (style.sort_keys) {
        std::vector<const std::pair<std::string, Value>*> entries;
        entries.reserve(m.size());
        for (const auto& e : m) entries.push_back(&e);
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
        for (std::size_t i = 0; i < entries.size(); ++i) member(i, *entries[i]);
      } else {
        for (std::size_t i = 0; i < m.size(); ++i) member(i, m[i]);
      }
      if (pretty) Newline(style, level, out);
      out += '}';
      return;
    }
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value ParseDocument() {
    SkipWs();
    Value v = ParseValue(0);
    SkipWs();
    if (pos_ != s_.size()) Fail("trailing characters after the JSON value");
    return v;
  }

 private:
  // One value of the document, written as Write would write its parse:
  // containers are re-laid out, strings whose bytes WriteString would emit
  // unchanged are copied, and everything else (numbers, escapes, invalid
  // UTF-8) goes through the parser and the writer, so the result is exact
  // for any JSON text, not only for brine's own.
  void Transcode(const JsonStyle& style, int level, int depth, std::string& out) {
    if (pos_ >= s_.size()) Fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '"') {
      TranscodeString(style, out);
      return;
    }
    if (c != '{' && c != '[') {
      Write(ParseValue(depth), style, level, out);  // a scalar: no allocation
      return;
    }
    if (depth >= kMaxJsonDepth) Fail("nesting too deep");
    if (c == '{' && style.sort_keys) {
      Write(ParseValue(depth), style, level, out);
      return;
    }
    const bool pretty = style.indent >= 0;
    const std::string_view item_sep = pretty ? "," : (style.spaced ? ", " : ",");
    const std::string_view key_sep = (pretty || style.spaced) ? ": " : ":";
    const char close = c == '{' ? '}' : ']';
    ++pos_;
    SkipWs();
    out += c;
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      out += close;
      return;
    }
    for (bool first = true;; first = false) {
      SkipWs();
      if (pretty) {
        Newline(style, level + 1, out, !first);  // item_sep is ","
      } else if (!first) {
        out += item_sep;
      }
      if (c == '{') {
        if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a string key");
        TranscodeString(style, out);
        SkipWs();
        if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
        ++pos_;
        SkipWs();
        out += key_sep;
      }
      Transcode(style, level + 1, depth + 1, out);
      if (NextItem(close)) continue;
      break;
    }
    if (pretty) Newline(style, level, out);
    out += close;
  }

  void TranscodeString(const JsonStyle& style, std::string& out) {
    // One pass: 1 for bytes that stand for themselves in any style, 2 for
    // DEL and non-ASCII bytes, 0 where the run ends ('"', '\\', controls).
    static constexpr auto kClass = [] {
      std::array<unsigned char, 256> t{};
      for (int b = 0x20; b < 256; ++b) t[b] = (b == '"' || b == '\\') ? 0 : (b >= 0x7F ? 2 : 1);
      return t;
    }();
    const std::size_t open = pos_;
    const char* const stop = s_.data() + s_.size();
    const char* p = RunEnd<RunKind::kAsciiText>(s_.data() + open + 1, stop);
    unsigned char seen = 1;
    while (p != stop && kClass[static_cast<unsigned char>(*p)] != 0) seen |= kClass[static_cast<unsigned char>(*p++)];
    const std::size_t end = static_cast<std::size_t>(p - s_.data());
    if (end < s_.size() && s_[end] == '"') {
      // No escape in it: its bytes are written as they are when they are
      // ASCII (DEL aside under ensure_ascii), or valid UTF-8 kept raw.
      const std::string_view body = s_.substr(open + 1, end - open - 1);
      if (seen == 1 || (!style.ensure_ascii && IsValidUtf8(body))) {
        out.append(s_.data() + open, end + 1 - open);
        pos_ = end + 1;
        return;
      }
    }
    // Escapes: decoded and written a piece at a time, so a command's 50 MB
    // of output lines is never held decoded whole beside its text.
    ++pos_;
    out += '"';
    std::string piece;
    while (!DecodeString(kStringPiece, piece)) {
      WriteStringBody(piece, style, out);
      piece.clear();
    }
    WriteStringBody(piece, style, out);
    out += '"';
  }
  static constexpr std::size_t kStringPiece = std::size_t{1} << 16;

  [[noreturn]] void Fail(const char* what) const {
    throw JsonError("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }

  // A long string with escapes (a command's multi-line output) would grow by
  // doubling, briefly holding one and a half times its size; its encoded
  // length bounds its decoded one, so it is found once and reserved.
  static constexpr std::size_t kReserveAbove = 1 << 16;
  void ReserveForString(std::size_t escape, std::string& out) const {
    if (s_.size() - escape < kReserveAbove) return;
    std::size_t p = escape;
    while (p < s_.size() && s_[p] != '"') p += s_[p] == '\\' ? 2 : 1;
    if (p - escape >= kReserveAbove) out.reserve(p - escape + out.size());
  }

  // The end of the run of string bytes from `from` that stand for themselves
  // (not '"', '\\' or a control character), scanned through a table on local
  // pointers: strings are most of what a load or a return holds.
  std::size_t PlainRunEnd(std::size_t from) const {
    static constexpr auto kStringPlain = [] {
      std::array<bool, 256> t{};
      for (int b = 0x20; b < 256; ++b) t[b] = b != '"' && b != '\\';
      return t;
    }();
    const char* const end = s_.data() + s_.size();
    const char* p = RunEnd<RunKind::kStringBytes>(s_.data() + from, end);
    while (p != end && kStringPlain[static_cast<unsigned char>(*p)]) ++p;
    return static_cast<std::size_t>(p - s_.data());
  }

  // After an item of a list or object: true past a ',' (another item
  // follows), false past `close` (the container ended); anything else fails.
  bool NextItem(char close) {
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == ',') {
      ++pos_;
      return true;
    }
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      return false;
    }
    Fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }

  void SkipWs() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  Value ParseValue(int depth) {
    if (pos_ >= s_.size()) Fail("unexpected end of input");
    const char c = s_[pos_];
    // `depth` containers enclose this value; a container here is one more.
    if ((c == '{' || c == '[') && depth >= kMaxJsonDepth) Fail("nesting too deep");
    switch (c) {
      case '{': return ParseObject(depth);
      case '[': return ParseArray(depth);
      case '"': return Value(ParseString());
      case 't':
        if (Consume("true")) return Value(true);
        break;
      case 'f':
        if (Consume("false")) return Value(false);
        break;
      case 'n':
        if (Consume("null")) return Value();
        break;
      case 'N':
        if (Consume("NaN")) return Value(std::numeric_limits<double>::quiet_NaN());
        break;
      case 'I':
        if (Consume("Infinity")) return Value(std::numeric_limits<double>::infinity());
        break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    }
    Fail("unexpected character");
  }

  // Members and items are gathered on scratch stacks shared by every level,
  // then moved into a container of the exact size: one allocation per map or
  // list instead of one per doubling.
  Value ParseObject(int depth) {
    ++pos_;  // {
    const std::size_t base = members_.size();
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return Value(ValueMap{});
    }
    while (true) {
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a string key");
      std::string key = ParseString();
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
      ++pos_;
      SkipWs();
      Value v = ParseValue(depth + 1);
      members_.emplace_back(std::move(key), std::move(v));
      if (NextItem('}')) continue;
      return Value(TakeMembers(base));
    }
  }

  ValueMap TakeMembers(std::size_t base) {
    ValueMap m(std::make_move_iterator(members_.begin() + static_cast<std::ptrdiff_t>(base)),
               std::make_move_iterator(members_.end()));
    members_.resize(base);
    return m;
  }

  Value ParseArray(int depth) {
    ++pos_;  // [
    const std::size_t base = items_.size();
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return Value(ValueList{});
    }
    while (true) {
      SkipWs();
      Value v = ParseValue(depth + 1);
      items_.push_back(std::move(v));
      if (NextItem(']')) continue;
      ValueList l(std::make_move_iterator(items_.begin() + static_cast<std::ptrdiff_t>(base)),
                  std::make_move_iterator(items_.end()));
      items_.resize(base);
      return Value(std::move(l));
    }
  }

  // Skips one value, checking its syntax but building nothing.
  void SkipValue(int depth) {
    if (pos_ >= s_.size()) Fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '"') {
      SkipString();
    } else if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) Fail("nesting too deep");
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        return;
      }
      while (true) {
        SkipWs();
        if (c == '{') {
          if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a string key");
          SkipString();
          SkipWs();
          if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
          ++pos_;
          SkipWs();
        }
        SkipValue(depth + 1);
        if (NextItem(close)) continue;
        return;
      }
    } else {
      (void)ParseValue(depth);  // scalars allocate nothing
    }
  }

  void SkipString() {
    ++pos_;  // "
    while (true) {
      pos_ = PlainRunEnd(pos_);
      if (pos_ >= s_.size()) Fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return;
      if (c != '\\') Fail("control character in string");
      if (pos_ >= s_.size()) Fail("unterminated escape");
      const char e = s_[pos_++];
      if (e == 'u') {
        (void)ParseHex4();
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        Fail("unknown escape");
      }
    }
  }

 public:
  // WriteJsonText: the document written in `style` at `level`.
  void TranscodeDocument(const JsonStyle& style, int level, std::string& out) {
    SkipWs();
    Transcode(style, level, 0, out);
    SkipWs();
    if (pos_ != s_.size()) Fail("trailing characters after the JSON value");
  }

  // The index of `key` in `keys`, or keys.size(). Sizes and first bytes
  // first: most keys of a load are not asked for.
  static std::size_t KeyIndex(std::span<const std::string_view> keys, std::string_view key) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string_view k = keys[i];
      if (k.size() == key.size() && (k.empty() || k[0] == key[0]) && k == key) return i;
    }
    return keys.size();
  }

  // JsonMemberValues: the text of the first member keyed by each of `keys`.
  void MemberValues(std::span<const std::string_view> keys, std::span<std::string_view> values) {
    std::fill(values.begin(), values.end(), std::string_view());
    ForEachMember([&](std::string_view key) {
      const std::size_t start = pos_;
      SkipValue(1);
      const std::size_t i = KeyIndex(keys, key);
      if (i == keys.size()) return;
      std::string_view& value = values[i];
      if (value.empty()) value = s_.substr(start, pos_ - start);
    });
  }

  // JsonMemberLayout: as MemberValues, each first value of a key laid out
  // onto `out` (at depth 1, the depth MemberValues checks it at).
  void MemberLayout(std::span<const std::string_view> keys, const JsonStyle& style, int level, std::string& out,
                    std::span<JsonSpan> spans) {
    std::fill(spans.begin(), spans.end(), JsonSpan{});
    ForEachMember([&](std::string_view key) {
      const std::size_t i = KeyIndex(keys, key);
      JsonSpan* span = i == keys.size() ? nullptr : &spans[i];
      if (span == nullptr || span->begin != std::string::npos) {
        SkipValue(1);
        return;
      }
      const std::size_t begin = out.size();
      Transcode(style, level, 1, out);
      *span = {begin, out.size()};
    });
  }

  // ParseJsonMembers: the members of a top-level object whose keys are in `keys`.
  Value ParseMembers(std::span<const std::string_view> keys) {
    ValueMap m;
    ForEachMember([&](std::string_view key) {
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        Value v = ParseValue(1);
        m.emplace_back(std::string(key), std::move(v));
      } else {
        SkipValue(1);
      }
    });
    return Value(std::move(m));
  }

 private:
  // Walks the members of a document that must be one object: `on_member`
  // gets each key (valid until the next call) with pos_ at its value, and
  // must consume the value. A key without escapes is a slice of the text.
  template <class F>
  void ForEachMember(F&& on_member) {
    std::string decoded_key;
    SkipWs();
    if (pos_ >= s_.size() || s_[pos_] != '{') Fail("expected an object");
    ++pos_;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
    } else {
      while (true) {
        SkipWs();
        if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a string key");
        std::string_view key;
        const std::size_t plain_end = PlainRunEnd(pos_ + 1);
        if (plain_end < s_.size() && s_[plain_end] == '"') {  // what ParseString would give
          key = s_.substr(pos_ + 1, plain_end - pos_ - 1);
          pos_ = plain_end + 1;
        } else {
          decoded_key = ParseString();
          key = decoded_key;
        }
        SkipWs();
        if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
        ++pos_;
        SkipWs();
        on_member(key);
        if (NextItem('}')) continue;
        break;
      }
    }
    SkipWs();
    if (pos_ != s_.size()) Fail("trailing characters after the JSON value");
  }

  unsigned ParseHex4() {
    if (pos_ + 4 > s_.size()) Fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        Fail("bad hex digit in \\u escape");
      }
    }
    return v;
  }

  std::string ParseString() {
    ++pos_;  // "
    std::string out;
    DecodeString(std::string::npos, out);
    return out;
  }

  // Decodes a string's body from pos_ onto `out`: true at its closing quote
  // (consumed); false once `out` grew by `limit` bytes or more, stopped where
  // a piece may end (before a plain byte that starts a UTF-8 sequence, never
  // inside an escape or a run of escapes), to be called again.
  bool DecodeString(std::size_t limit, std::string& out) {
    const std::size_t base = out.size();
    while (true) {
      // Copy the run of plain bytes in one go: returns are mostly plain text.
      const std::size_t start = pos_;
      std::size_t end = PlainRunEnd(pos_);
      bool cut = false;
      const std::size_t room = limit > out.size() - base ? limit - (out.size() - base) : 0;
      if (end - start > room) {
        std::size_t at = start + room;
        while (at > start && (static_cast<unsigned char>(s_[at]) & 0xC0) == 0x80) --at;
        if (at > start) {
          end = at;
          cut = true;
        }
      }
      pos_ = end;
      out.append(s_.data() + start, pos_ - start);
      if (cut) return false;
      if (pos_ >= s_.size()) Fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') Fail("control character in string");
      if (limit == std::string::npos && out.size() == pos_ - 1 - start) ReserveForString(pos_ - 1, out);  // the first escape
      if (pos_ >= s_.size()) Fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = ParseHex4();
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(pos_, 2) == "\\u") {
            const std::size_t save = pos_;
            pos_ += 2;
            const unsigned lo = ParseHex4();
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              AppendUtf8(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), out);
              break;
            }
            pos_ = save;
          }
          if (cp >= 0xDC80 && cp <= 0xDCFF) {
            // Python's surrogateescape: the original byte.
            out += static_cast<char>(cp - 0xDC00);
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            Fail("lone surrogate in \\u escape");
          } else {
            AppendUtf8(cp, out);
          }
          break;
        }
        default: Fail("unknown escape");
      }
      if (out.size() - base >= limit && pos_ < s_.size() && s_[pos_] != '\\' && s_[pos_] != '"' &&
          (static_cast<unsigned char>(s_[pos_]) & 0xC0) != 0x80) {
        return false;
      }
    }
  }

  Value ParseNumber() {
    const std::size_t start = pos_;
    if (s_[pos_] == '-') {
      ++pos_;
      if (Consume("Infinity")) return Value(-std::numeric_limits<double>::infinity());
    }
    // JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const auto digits = [this] {
      const std::size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    bool is_float = false;
    if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) Fail("bad number");
    if (s_[pos_] == '0') {
      ++pos_;  // a leading zero stands alone
    } else {
      digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (digits() == 0) Fail("bad number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) Fail("bad number");
    }
    const std::string_view num = s_.substr(start, pos_ - start);
    if (num == "9e-999" || num == "-9e-999") return Value(std::numeric_limits<double>::quiet_NaN());
    const char* first = num.data();
    const char* last = num.data() + num.size();
    if (!is_float) {
      std::int64_t i = 0;
      auto r = std::from_chars(first, last, i);
      if (r.ec == std::errc() && r.ptr == last) return Value(static_cast<long long>(i));
      std::uint64_t u = 0;
      r = std::from_chars(first, last, u);
      if (r.ec == std::errc() && r.ptr == last) return Value(static_cast<unsigned long long>(u));
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ptr != last) Fail("bad number");
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars leaves d untouched on overflow; Python gives inf or 0.0.
      const bool negative = num.front() == '-';
      const auto e = num.find_first_of("eE");
      const bool tiny = e != std::string_view::npos && num.substr(e + 1).front() == '-';
      d = tiny ? (negative ? -0.0 : 0.0)
               : (negative ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity());
    } else if (r.ec != std::errc()) {
      Fail("bad number");
    }
    return Value(d);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  ValueMap members_;
  ValueList items_;
};

}  // namespace

std::string PythonFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest round-trip digits, in scientific form: [-]D[.DDD]e[+-]XX.
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const auto e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exp10);
  const int decpt = exp10 + 1;  // position of the decimal point relative to digits
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<std::size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<std::size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  out += exp_buf;
  return out;
}

std::optional<std::string> PythonScalarStr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kUint: return std::to_string(v.as_uint());
    case Value::Kind::kFloat: return PythonFloatRepr(v.as_float());
    default: return std::nullopt;
  }
}

void WriteJson(const Value& v, const JsonStyle& style, std::string& out) { Write(v, style, 0, out); }

std::string ToJson(const Value& v, const JsonStyle& style) {
  std::string out;
  WriteJson(v, style, out);
  return out;
}

Value ParseJson(std::string_view text) { return Parser(text).ParseDocument(); }

Value ParseJsonMembers(std::string_view text, std::span<const std::string_view> keys) {
  return Parser(text).ParseMembers(keys);
}

void JsonMemberValues(std::string_view text, std::span<const std::string_view> keys,
                      std::span<std::string_view> values) {
  if (values.size() != keys.size()) throw std::invalid_argument("JsonMemberValues: one value per key");
  Parser(text).MemberValues(keys, values);
}

void JsonMemberLayout(std::string_view text, std::span<const std::string_view> keys, const JsonStyle& style,
                      int level, std::string& out, std::span<JsonSpan> spans) {
  if (spans.size() != keys.size()) throw std::invalid_argument("JsonMemberLayout: one span per key");
  Parser(text).MemberLayout(keys, style, level, out, spans);
}

void WriteJsonString(std::string_view s, const JsonStyle& style, std::string& out) { WriteString(s, style, out); }

void WriteJsonText(std::string_view json, const JsonStyle& style, int level, std::string& out) {
  Parser(json).TranscodeDocument(style, level, out);
}

}  // namespace brine
