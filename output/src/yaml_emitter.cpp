// The emitter follows the state machine that PyYAML's emitter.py and libyaml's
// emitter.c share (libyaml is the C original of the same design), written as
// a recursion over the value instead of an event queue: each collection or
// scalar does, in the same order, the same indicator, indent and text writes
// as the two state machines, so column and whitespace bookkeeping (which
// decides line folding and indentless sequences) comes out the same.
//
// Where the two emitters differ, `YamlDialect` picks one:
//   - printable: libyaml treats U+0085 and everything above U+FFFF as not
//     printable (double-quoted, escaped); PyYAML prints them as they are.
//   - line breaks: libyaml also counts \r as a line break (which makes the
//     scalar multiline, so it cannot be a simple key: `? "a\rb"`).
//   - simple keys: PyYAML allows a key that is not empty and, with its tag
//     `!!str` counted, shorter than 128 characters (so up to 122); libyaml
//     one of at most 128 UTF-8 bytes, the empty key included.
//   - folding double-quoted scalars: libyaml breaks at a space once past
//     column 80 and drops that space; PyYAML breaks before a space or after
//     an escape, ending the line with `\`.
//   - document end: PyYAML writes `...` after a plain top-level scalar;
//     libyaml 0.2.5 does not.
#include "yaml_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

#include "brine/core/json.h"
#include "py_text.h"

namespace brine::output {
namespace {

using U32View = std::u32string_view;

bool IsDigit(char32_t c) { return c >= '0' && c <= '9'; }

// --- PyYAML's implicit resolvers (yaml/resolver.py), as full matches. ------

bool MatchesBool(U32View s) {
  static constexpr U32View kWords[] = {U"yes",  U"Yes",  U"YES",  U"no",    U"No",    U"NO",
                                       U"true", U"True", U"TRUE", U"false", U"False", U"FALSE",
                                       U"on",   U"On",   U"ON",   U"off",   U"Off",   U"OFF"};
  return std::find(std::begin(kWords), std::end(kWords), s) != std::end(kWords);
}

bool MatchesNull(U32View s) {
  return s.empty() || s == U"~" || s == U"null" || s == U"Null" || s == U"NULL";
}

// Skips a run of characters for which `pred` holds; returns how many.
template <typename Pred>
std::size_t Run(U32View s, std::size_t& i, Pred pred) {
  const std::size_t start = i;
  while (i < s.size() && pred(s[i])) ++i;
  return i - start;
}

bool DigitOrUnderscore(char32_t c) { return IsDigit(c) || c == '_'; }

// (?::[0-5]?[0-9])+ : at least one `:` group of one digit or two digits
// whose first is 0-5. A digit run is always one whole group.
bool SexagesimalGroups(U32View s, std::size_t& i) {
  std::size_t groups = 0;
  while (i < s.size() && s[i] == ':') {
    ++i;
    const std::size_t start = i;
    const std::size_t n = Run(s, i, IsDigit);
    if (n == 0 || n > 2 || (n == 2 && s[start] > '5')) return false;
    ++groups;
  }
  return groups > 0;
}

bool MatchesInt(U32View s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  const U32View body = s.substr(i);
  if (body.empty()) return false;
  auto all = [](U32View t, auto pred) { return !t.empty() && std::all_of(t.begin(), t.end(), pred); };
  if (body.size() > 2 && body[0] == '0' && body[1] == 'b') {
    return all(body.substr(2), [](char32_t c) { return c == '0' || c == '1' || c == '_'; });
  }
  if (body.size() > 2 && body[0] == '0' && body[1] == 'x') {
    return all(body.substr(2), [](char32_t c) {
      return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '_';
    });
  }
  if (body[0] == '0') {
    return body.size() == 1 ||
           all(body.substr(1), [](char32_t c) { return (c >= '0' && c <= '7') || c == '_'; });
  }
  if (body[0] < '1' || body[0] > '9') return false;
  std::size_t j = 1;
  Run(body, j, DigitOrUnderscore);
  if (j == body.size()) return true;
  return SexagesimalGroups(body, j) && j == body.size();
}

bool OptionalExponent(U32View s, std::size_t& i) {
  if (i == s.size()) return true;
  if (s[i] != 'e' && s[i] != 'E') return false;
  ++i;
  if (i == s.size() || (s[i] != '-' && s[i] != '+')) return false;
  ++i;
  return Run(s, i, IsDigit) > 0 && i == s.size();
}

bool MatchesFloat(U32View s) {
  if (s == U".nan" || s == U".NaN" || s == U".NAN") return true;
  std::size_t i = 0;
  const bool signed_ = i < s.size() && (s[i] == '-' || s[i] == '+');
  if (signed_) ++i;
  const U32View body = s.substr(i);
  if (body == U".inf" || body == U".Inf" || body == U".INF") return true;
  if (body.empty()) return false;
  std::size_t j = 0;
  if (body[0] == '.') {
    // \.[0-9][0-9_]*(?:[eE][-+][0-9]+)?, unsigned only.
    if (signed_ || body.size() < 2 || !IsDigit(body[1])) return false;
    j = 2;
    Run(body, j, DigitOrUnderscore);
    return OptionalExponent(body, j);
  }
  if (!IsDigit(body[0])) return false;
  j = 1;
  Run(body, j, DigitOrUnderscore);
  if (j < body.size() && body[j] == '.') {
    ++j;
    Run(body, j, DigitOrUnderscore);
    return OptionalExponent(body, j);
  }
  // [0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
  if (!SexagesimalGroups(body, j)) return false;
  if (j == body.size() || body[j] != '.') return false;
  ++j;
  Run(body, j, DigitOrUnderscore);
  return j == body.size();
}

bool MatchesTimestamp(U32View s) {
  std::size_t i = 0;
  auto digits = [&](std::size_t min, std::size_t max) {
    const std::size_t start = i;
    while (i < s.size() && IsDigit(s[i]) && i - start < max) ++i;
    return i - start >= min && (i == s.size() || !IsDigit(s[i]));
  };
  auto literal = [&](char32_t c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  if (!digits(4, 4) || !literal('-')) return false;
  const std::size_t month_start = i;
  if (!digits(1, 2) || !literal('-')) return false;
  const std::size_t day_start = i;
  if (!digits(1, 2)) return false;
  const bool short_date = i - month_start == 5 && i - day_start == 2;
  if (i == s.size()) return short_date;  // YYYY-MM-DD only
  // (?:[Tt]|[ \t]+)
  if (s[i] == 'T' || s[i] == 't') {
    ++i;
  } else if (Run(s, i, [](char32_t c) { return c == ' ' || c == '\t'; }) == 0) {
    return false;
  }
  if (!digits(1, 2) || !literal(':') || !digits(2, 2) || !literal(':') || !digits(2, 2)) return false;
  if (literal('.')) Run(s, i, IsDigit);
  if (i == s.size()) return true;
  Run(s, i, [](char32_t c) { return c == ' ' || c == '\t'; });
  if (literal('Z')) return i == s.size();
  if (!literal('-') && !literal('+')) return false;
  if (!digits(1, 2)) return false;
  if (literal(':') && !digits(2, 2)) return false;
  return i == s.size();
}

// True when a plain scalar `s` would be read back as a str (the Resolver finds
// no other implicit tag), i.e. PyYAML's `implicit[0]` for a str node.
bool ResolvesToStr(U32View s) {
  return !(MatchesBool(s) || MatchesFloat(s) || MatchesInt(s) || s == U"<<" || MatchesNull(s) ||
           MatchesTimestamp(s) || s == U"=" || s == U"!" || s == U"&" || s == U"*");
}

// --- Scalars as the SafeRepresenter makes them. -----------------------------

struct Scalar {
  std::u32string text;
  bool plain_implicit = true;  // a plain scalar resolves to the node's own tag
  std::size_t utf8_length = 0;
};

Scalar Represent(const Value& v) {
  Scalar s;
  std::string text;
  switch (v.kind()) {
    case Value::Kind::kNull:
      text = "null";
      break;
    case Value::Kind::kBool:
      text = v.as_bool() ? "true" : "false";
      break;
    case Value::Kind::kInt:
      text = std::to_string(v.as_int());
      break;
    case Value::Kind::kUint:
      text = std::to_string(v.as_uint());
      break;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      if (d != d) {
        text = ".nan";
      } else if (d == HUGE_VAL) {
        text = ".inf";
      } else if (d == -HUGE_VAL) {
        text = "-.inf";
      } else {
        text = PythonFloatRepr(d);
        std::transform(text.begin(), text.end(), text.begin(),
                       [](char c) { return c == 'E' ? 'e' : c; });
        // repr(1e16) is '1e+16', not a YAML float; PyYAML adds '.0'.
        const std::size_t e = text.find('e');
        if (text.find('.') == std::string::npos && e != std::string::npos) text.insert(e, ".0");
      }
      break;
    }
    case Value::Kind::kString:
      s.text = py::Decode(v.as_string());
      s.plain_implicit = ResolvesToStr(s.text);
      s.utf8_length = v.as_string().size();
      return s;
    case Value::Kind::kList:
    case Value::Kind::kMap:
      break;
  }
  s.text.assign(text.begin(), text.end());
  s.utf8_length = text.size();
  return s;
}

struct Analysis {
  bool empty = false;
  bool multiline = false;
  bool flow_plain = true;
  bool block_plain = true;
  bool single_quoted = true;
  bool block = true;
};

class Emitter {
 public:
  explicit Emitter(const YamlStyle& style)
      : libyaml_(style.dialect == YamlDialect::kLibyaml),
        flow_(style.flow),
        best_indent_(style.indent > 1 && style.indent < 10 ? style.indent : 2) {}

  std::string Dump(const Value& root) {
    // The document start is implicit: the representer always sets a tag, so
    // PyYAML's check_empty_document never asks for an explicit `---`.
    Node(root, Context{.root = true});
    // Document end (implicit) and stream end.
    WriteIndent();
    if (!libyaml_ && open_ended_) {
      WriteIndicator(U"...", true);
      WriteIndent();
    }
    return std::move(out_);
  }

 private:
  struct Context {
    bool root = false;
    bool mapping = false;
    bool simple_key = false;
  };
  enum class Style { kPlain, kSingle, kDouble };

  // --- Character classes (the dialect differences). -------------------------

  bool IsBreak(char32_t c) const {
    return c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029 || (libyaml_ && c == '\r');
  }
  static bool IsBlankZ(char32_t c) {
    return c == 0 || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0x85 || c == 0x2028 ||
           c == 0x2029;
  }
  // May appear unescaped in a scalar (allow_unicode=True).
  bool IsPrintable(char32_t c) const {
    if (c == '\n' || (c >= 0x20 && c <= 0x7E)) return true;
    if (c == 0xFEFF) return false;
    if ((c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD)) return true;
    return !libyaml_ && (c == 0x85 || (c >= 0x10000 && c < 0x10FFFF));
  }
  // Written as an escape inside double quotes (the same set in both).
  static bool NeedsEscape(char32_t c) {
    if (c == '"' || c == '\\' || c == 0x85 || c == 0x2028 || c == 0x2029 || c == 0xFEFF) return true;
    return !((c >= 0x20 && c <= 0x7E) || (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD));
  }

  // --- Low-level writers. ----------------------------------------------------

  void Write(U32View text) {
    for (const char32_t c : text) py::AppendEncoded(c, out_);
    column_ += static_cast<int>(text.size());
  }
  void WriteAscii(std::string_view text) {
    out_ += text;
    column_ += static_cast<int>(text.size());
  }

  void WriteIndicator(U32View indicator, bool need_whitespace, bool is_whitespace = false,
                      bool is_indention = false) {
    if (need_whitespace && !whitespace_) WriteAscii(" ");
    Write(indicator);
    whitespace_ = is_whitespace;
    indention_ = indention_ && is_indention;
    open_ended_ = false;
  }

  void WriteLineBreak(char32_t br = '\n') {
    py::AppendEncoded(br, out_);
    column_ = 0;
    whitespace_ = true;
    indention_ = true;
  }

  void WriteIndent() {
    const int indent = std::max(indent_, 0);
    if (!indention_ || column_ > indent || (column_ == indent && !whitespace_)) WriteLineBreak();
    if (column_ < indent) WriteAscii(std::string(static_cast<std::size_t>(indent - column_), ' '));
    whitespace_ = true;
    indention_ = true;
  }

  void IncreaseIndent(bool flow, bool indentless = false) {
    indents_.push_back(indent_);
    if (indent_ < 0) {
      indent_ = flow ? best_indent_ : 0;
    } else if (!indentless) {
      indent_ += best_indent_;
    }
  }
  void PopIndent() {
    indent_ = indents_.back();
    indents_.pop_back();
  }

  // --- Nodes. ------------------------------------------------------------------

  void Node(const Value& v, Context ctx) {
    if (v.is_list()) {
      if (flow_level_ > 0 || flow_ || v.as_list().empty()) {
        FlowSequence(v.as_list());
      } else {
        BlockSequence(v.as_list(), ctx);
      }
    } else if (v.is_map()) {
      if (flow_level_ > 0 || flow_ || v.as_map().empty()) {
        FlowMapping(v.as_map());
      } else {
        BlockMapping(v.as_map());
      }
    } else {
      ScalarNode(Represent(v), ctx);
    }
  }

  std::vector<const std::pair<std::string, Value>*> SortedEntries(const ValueMap& map) const {
    std::vector<const std::pair<std::string, Value>*> entries;
    entries.reserve(map.size());
    for (const auto& entry : map) entries.push_back(&entry);
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto* a, const auto* b) { return py::CodePointLess(a->first, b->first); });
    return entries;
  }

  bool CheckSimpleKey(const Scalar& key) const {
    const Analysis a = Analyze(key.text);
    if (libyaml_) return !a.multiline && key.utf8_length <= 128;
    // PyYAML counts the prepared tag too: keys are str nodes, tag `!!str`.
    return key.text.size() + 5 < 128 && !a.empty && !a.multiline;
  }

  void FlowSequence(const ValueList& list) {
    WriteIndicator(U"[", true, true);
    ++flow_level_;
    IncreaseIndent(true);
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i > 0) WriteIndicator(U",", false);
      if (column_ > kBestWidth) WriteIndent();
      Node(list[i], Context{});
    }
    PopIndent();
    --flow_level_;
    WriteIndicator(U"]", false);
  }

  void FlowMapping(const ValueMap& map) {
    WriteIndicator(U"{", true, true);
    ++flow_level_;
    IncreaseIndent(true);
    bool first = true;
    for (const auto* entry : SortedEntries(map)) {
      if (!first) WriteIndicator(U",", false);
      first = false;
      if (column_ > kBestWidth) WriteIndent();
      const Scalar key = Represent(Value(entry->first));
      if (CheckSimpleKey(key)) {
        ScalarNode(key, Context{.mapping = true, .simple_key = true});
        WriteIndicator(U":", false);
      } else {
        WriteIndicator(U"?", true);
        ScalarNode(key, Context{.mapping = true});
        if (column_ > kBestWidth) WriteIndent();
        WriteIndicator(U":", true);
      }
      Node(entry->second, Context{.mapping = true});
    }
    PopIndent();
    --flow_level_;
    WriteIndicator(U"}", false);
  }

  void BlockSequence(const ValueList& list, Context ctx) {
    IncreaseIndent(false, ctx.mapping && !indention_);
    for (const Value& item : list) {
      WriteIndent();
      WriteIndicator(U"-", true, false, true);
      Node(item, Context{});
    }
    PopIndent();
  }

  void BlockMapping(const ValueMap& map) {
    IncreaseIndent(false);
    for (const auto* entry : SortedEntries(map)) {
      WriteIndent();
      const Scalar key = Represent(Value(entry->first));
      if (CheckSimpleKey(key)) {
        ScalarNode(key, Context{.mapping = true, .simple_key = true});
        WriteIndicator(U":", false);
      } else {
        WriteIndicator(U"?", true, false, true);
        ScalarNode(key, Context{.mapping = true});
        WriteIndent();
        WriteIndicator(U":", true, false, true);
      }
      Node(entry->second, Context{.mapping = true});
    }
    PopIndent();
  }

  // --- Scalars. ----------------------------------------------------------------

  Analysis Analyze(U32View s) const {
    Analysis a;
    if (s.empty()) {
      a.empty = true;
      a.flow_plain = false;
      a.block = false;
      return a;
    }
    bool block_indicators = false;
    bool flow_indicators = false;
    bool line_breaks = false;
    bool special = false;
    bool leading_space = false;
    bool leading_break = false;
    bool trailing_space = false;
    bool trailing_break = false;
    bool break_space = false;
    bool space_break = false;
    if (s.substr(0, 3) == U"---" || s.substr(0, 3) == U"...") block_indicators = flow_indicators = true;
    bool preceded_by_whitespace = true;
    bool followed_by_whitespace = s.size() == 1 || IsBlankZ(s[1]);
    bool previous_space = false;
    bool previous_break = false;
    const std::u32string_view kLeading = U"#,[]{}&*!|>'\"%@`";
    const std::u32string_view kInner = U",?[]{}";
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char32_t ch = s[i];
      if (i == 0) {
        if (kLeading.find(ch) != U32View::npos) flow_indicators = block_indicators = true;
        if (ch == '?' || ch == ':') {
          flow_indicators = true;
          if (followed_by_whitespace) block_indicators = true;
        }
        if (ch == '-' && followed_by_whitespace) flow_indicators = block_indicators = true;
      } else {
        if (kInner.find(ch) != U32View::npos) flow_indicators = true;
        if (ch == ':') {
          flow_indicators = true;
          if (followed_by_whitespace) block_indicators = true;
        }
        if (ch == '#' && preceded_by_whitespace) flow_indicators = block_indicators = true;
      }
      if (IsBreak(ch)) line_breaks = true;
      if (!IsPrintable(ch)) special = true;
      if (ch == ' ') {
        if (i == 0) leading_space = true;
        if (i + 1 == s.size()) trailing_space = true;
        if (previous_break) break_space = true;
        previous_space = true;
        previous_break = false;
      } else if (IsBreak(ch)) {
        if (i == 0) leading_break = true;
        if (i + 1 == s.size()) trailing_break = true;
        if (previous_space) space_break = true;
        previous_space = false;
        previous_break = true;
      } else {
        previous_space = previous_break = false;
      }
      preceded_by_whitespace = IsBlankZ(ch);
      followed_by_whitespace = i + 2 >= s.size() || IsBlankZ(s[i + 2]);
    }
    a.multiline = line_breaks;
    if (leading_space || leading_break || trailing_space || trailing_break) a.flow_plain = a.block_plain = false;
    if (trailing_space) a.block = false;
    if (break_space) a.flow_plain = a.block_plain = a.single_quoted = false;
    if (space_break || special) a.flow_plain = a.block_plain = a.single_quoted = a.block = false;
    if (line_breaks) a.flow_plain = a.block_plain = false;
    if (flow_indicators) a.flow_plain = false;
    if (block_indicators) a.block_plain = false;
    return a;
  }

  Style ChooseStyle(const Scalar& s, const Analysis& a, bool simple_key) const {
    const bool plain_allowed = flow_level_ > 0 ? a.flow_plain : a.block_plain;
    if (libyaml_) {
      if (simple_key && a.multiline) return Style::kDouble;
      if (plain_allowed && !(a.empty && (flow_level_ > 0 || simple_key)) && s.plain_implicit) {
        return Style::kPlain;
      }
      return a.single_quoted ? Style::kSingle : Style::kDouble;
    }
    if (s.plain_implicit && !(simple_key && (a.empty || a.multiline)) && plain_allowed) {
      return Style::kPlain;
    }
    if (a.single_quoted && !(simple_key && a.multiline)) return Style::kSingle;
    return Style::kDouble;
  }

  void ScalarNode(const Scalar& s, Context ctx) {
    const Analysis a = Analyze(s.text);
    const Style style = ChooseStyle(s, a, ctx.simple_key);
    IncreaseIndent(true);
    const bool split = !ctx.simple_key;
    switch (style) {
      case Style::kPlain:
        WritePlain(s.text, split, ctx.root);
        break;
      case Style::kSingle:
        WriteSingleQuoted(s.text, split);
        break;
      case Style::kDouble:
        if (libyaml_) {
          WriteDoubleQuotedLibyaml(s.text, split);
        } else {
          WriteDoubleQuotedPyYaml(s.text, split);
        }
        break;
    }
    PopIndent();
  }

  // Writes the line breaks text[start, end) the way both emitters do inside
  // plain and single-quoted scalars: an extra break first when the run starts
  // with \n (a single \n would fold into a space), then the breaks themselves.
  void WriteBreaks(U32View text, std::size_t start, std::size_t end) {
    if (text[start] == '\n') WriteLineBreak();
    for (std::size_t k = start; k < end; ++k) WriteLineBreak(text[k]);
    WriteIndent();
  }

  void WritePlain(U32View text, bool split, bool root) {
    if (root && !libyaml_) open_ended_ = true;
    if (text.empty()) return;
    if (!whitespace_) WriteAscii(" ");
    whitespace_ = indention_ = false;
    bool spaces = false;
    bool breaks = false;
    std::size_t start = 0;
    for (std::size_t end = 0; end <= text.size(); ++end) {
      const bool at_end = end == text.size();
      const char32_t ch = at_end ? 0 : text[end];
      if (spaces) {
        if (at_end || ch != ' ') {
          if (start + 1 == end && column_ > kBestWidth && split) {
            WriteIndent();
            whitespace_ = indention_ = false;
          } else {
            Write(text.substr(start, end - start));
          }
          start = end;
        }
      } else if (breaks) {
        if (at_end || !IsBreak(ch)) {
          WriteBreaks(text, start, end);
          whitespace_ = indention_ = false;
          start = end;
        }
      } else if (at_end || ch == ' ' || IsBreak(ch)) {
        Write(text.substr(start, end - start));
        start = end;
      }
      if (!at_end) {
        spaces = ch == ' ';
        breaks = IsBreak(ch);
      }
    }
  }

  void WriteSingleQuoted(U32View text, bool split) {
    WriteIndicator(U"'", true);
    bool spaces = false;
    bool breaks = false;
    std::size_t start = 0;
    for (std::size_t end = 0; end <= text.size(); ++end) {
      const bool at_end = end == text.size();
      const char32_t ch = at_end ? 0 : text[end];
      if (spaces) {
        if (at_end || ch != ' ') {
          if (start + 1 == end && column_ > kBestWidth && split && start != 0 && end != text.size()) {
            WriteIndent();
          } else {
            Write(text.substr(start, end - start));
          }
          start = end;
        }
      } else if (breaks) {
        if (at_end || !IsBreak(ch)) {
          WriteBreaks(text, start, end);
          start = end;
        }
      } else if (at_end || ch == ' ' || IsBreak(ch) || ch == '\'') {
        if (start < end) {
          Write(text.substr(start, end - start));
          start = end;
        }
      }
      if (ch == '\'' && !at_end) {
        WriteAscii("''");
        start = end + 1;
      }
      if (!at_end) {
        spaces = ch == ' ';
        breaks = IsBreak(ch);
      }
    }
    WriteIndicator(U"'", false);
  }

  void WriteEscape(char32_t ch) {
    std::string data = "\\";
    switch (ch) {
      case 0x00: data += '0'; break;
      case 0x07: data += 'a'; break;
      case 0x08: data += 'b'; break;
      case 0x09: data += 't'; break;
      case 0x0A: data += 'n'; break;
      case 0x0B: data += 'v'; break;
      case 0x0C: data += 'f'; break;
      case 0x0D: data += 'r'; break;
      case 0x1B: data += 'e'; break;
      case '"': data += '"'; break;
      case '\\': data += '\\'; break;
      case 0x85: data += 'N'; break;
      case 0xA0: data += '_'; break;
      case 0x2028: data += 'L'; break;
      case 0x2029: data += 'P'; break;
      default: {
        char buf[16];
        if (ch <= 0xFF) {
          std::snprintf(buf, sizeof buf, "x%02X", static_cast<unsigned>(ch));
        } else if (ch <= 0xFFFF) {
          std::snprintf(buf, sizeof buf, "u%04X", static_cast<unsigned>(ch));
        } else {
          std::snprintf(buf, sizeof buf, "U%08X", static_cast<unsigned>(ch));
        }
        data += buf;
      }
    }
    WriteAscii(data);
  }

  // PyYAML's write_double_quoted: may break before a space or right after an
  // escape, ending the line with `\`; a space that starts the next line is
  // written as `\ `.
  void WriteDoubleQuotedPyYaml(U32View text, bool split) {
    WriteIndicator(U"\"", true);
    const long n = static_cast<long>(text.size());
    long start = 0;
    for (long end = 0; end <= n; ++end) {
      const bool at_end = end == n;
      const char32_t ch = at_end ? 0 : text[static_cast<std::size_t>(end)];
      if (at_end || NeedsEscape(ch)) {
        if (start < end) {
          Write(text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
          start = end;
        }
        if (!at_end) {
          WriteEscape(ch);
          start = end + 1;
        }
      }
      if (0 < end && end < n - 1 && (ch == ' ' || start >= end) && column_ + (end - start) > kBestWidth &&
          split) {
        if (start < end) {
          Write(text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
          start = end;
        }
        WriteAscii("\\");
        WriteIndent();
        whitespace_ = indention_ = false;
        if (text[static_cast<std::size_t>(start)] == ' ') WriteAscii("\\");
      }
    }
    WriteIndicator(U"\"", false);
  }

  // libyaml's yaml_emitter_write_double_quoted_scalar: breaks at a single
  // space once past the width, dropping it; `\` keeps a following space.
  void WriteDoubleQuotedLibyaml(U32View text, bool split) {
    WriteIndicator(U"\"", true);
    bool spaces = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char32_t ch = text[i];
      if (NeedsEscape(ch)) {
        WriteEscape(ch);
        spaces = false;
      } else if (ch == ' ') {
        if (split && !spaces && column_ > kBestWidth && i != 0 && i + 1 != text.size()) {
          WriteIndent();
          if (text[i + 1] == ' ') WriteAscii("\\");
        } else {
          WriteAscii(" ");
        }
        spaces = true;
      } else {
        Write(text.substr(i, 1));
        spaces = false;
      }
    }
    WriteIndicator(U"\"", false);
  }

  static constexpr int kBestWidth = 80;

  const bool libyaml_;
  const bool flow_;
  const int best_indent_;
  std::string out_;
  int column_ = 0;
  bool whitespace_ = true;
  bool indention_ = true;
  bool open_ended_ = false;
  int indent_ = -1;  // -1 is PyYAML's None
  std::vector<int> indents_;
  int flow_level_ = 0;
};

}  // namespace

std::string DumpYaml(const Value& data, const YamlStyle& style) { return Emitter(style).Dump(data); }

}  // namespace brine::output
