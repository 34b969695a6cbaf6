// JSON text <-> brine::Value.
//
// Two writers share one encoder:
//   - the storage form (JsonStyle::Storage()): compact, `,` and `:` without
//     spaces, raw UTF-8, and nothing SQLite 3.40's json functions reject (an
//     infinite float is written as `9e999`, which reads back as infinity; NaN as
//     `9e-999`, a spelling no finite float gets, which ParseJson reads back as
//     NaN and SQLite as 0.0, since JSON has no NaN);
//   - Python's json.dumps forms (JsonStyle::Python(indent)), byte for byte as
//     Salt's json outputter prints them: `", "`/`": "` separators when not
//     indented, `","`/`": "` when indented, `Infinity`/`NaN`, floats as Python's
//     repr (`4.0`, `1e+16`, `1e-05`).
// Strings are bytes. Valid UTF-8 is written raw (ensure_ascii=False); each byte
// that is not part of valid UTF-8 is written as `\udcXX` (Python's
// surrogateescape), and the parser turns a lone `\udc80`..`\udcff` back into
// that byte, so any byte string round-trips.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/core/value.h"

namespace brine {

struct JsonStyle {
  // Spaces per level; negative means all on one line.
  int indent = -1;
  // One-line separators: Python's `", "`/`": "` (true) or compact `,`/`:`.
  bool spaced = false;
  // Sort map keys by byte value (Python's sort_keys=True on str keys).
  bool sort_keys = false;
  // Python spellings for non-finite floats (Infinity, NaN) instead of the storage ones.
  bool python_nonfinite = false;
  // Escape everything outside ASCII as \uXXXX (Python's ensure_ascii=True).
  bool ensure_ascii = false;

  static JsonStyle Storage() { return {}; }
  // json.dumps(v, indent=indent, ensure_ascii=False); indent < 0 is indent=None.
  static JsonStyle Python(int indent) {
    return {.indent = indent, .spaced = true, .sort_keys = false, .python_nonfinite = true};
  }
};

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends the JSON text of `v` to `out`. Never throws except std::bad_alloc.
void WriteJson(const Value& v, const JsonStyle& style, std::string& out);
[[nodiscard]] std::string ToJson(const Value& v, const JsonStyle& style = JsonStyle::Storage());

// Python's repr() of a float: the shortest text that reads back to `d`
// (`4.0`, `0.1`, `1e+16`, `1e-05`, `inf`, `nan`).
[[nodiscard]] std::string PythonFloatRepr(double d);

// Python's str() (and repr(), which is the same for these) of a non-string
// scalar: None, True, False, an int's digits, a float's repr. nullopt for
// strings, lists and maps.
[[nodiscard]] std::optional<std::string> PythonScalarStr(const Value& v);

// Parses one JSON document (surrounding whitespace allowed). Also accepts
// Python's `Infinity`, `-Infinity` and `NaN`. Integers that fit 64 bits stay
// integers; others become floats. Nesting deeper than kMaxJsonDepth is refused.
// Throws JsonError with the byte offset on malformed input.
inline constexpr int kMaxJsonDepth = 1000;
[[nodiscard]] Value ParseJson(std::string_view text);

// Only the members of a top-level JSON object whose keys are in `keys`, in
// document order, as a map; the other members are checked for syntax and
// skipped without building anything (a job listing reads five keys of each
// load). Throws JsonError as ParseJson does, and when the text is not an object.
[[nodiscard]] Value ParseJsonMembers(std::string_view text, std::span<const std::string_view> keys);

// The text of the first member of a top-level JSON object keyed by each of
// `keys`, as slices of `text`: values[i] for keys[i], empty when no member
// has that key (a value's text is never empty). The rest is checked for
// syntax and skipped, building nothing (a job listing reads five keys of each
// load). Throws JsonError as ParseJsonMembers does, and std::invalid_argument
// when `values` is not as long as `keys`.
void JsonMemberValues(std::string_view text, std::span<const std::string_view> keys,
                      std::span<std::string_view> values);

// Where JsonMemberLayout put a member's value in its output: [begin, end),
// or npos for both when no member has that key.
struct JsonSpan {
  std::size_t begin = std::string::npos;
  std::size_t end = std::string::npos;
};

// JsonMemberValues with each value found laid out, as WriteJsonText(value,
// style, level) lays it out, onto `out` as the scan meets it: one pass over
// the text for a listing that would otherwise scan it and then lay out what
// it found. spans[i] locates keys[i]'s value in `out`. Throws as
// JsonMemberValues does (`out` then holds part of the layout).
void JsonMemberLayout(std::string_view text, std::span<const std::string_view> keys, const JsonStyle& style,
                      int level, std::string& out, std::span<JsonSpan> spans);

// Appends `s` as a JSON string in `style`: what WriteJson(Value(std::string(s)), style, out) appends.
void WriteJsonString(std::string_view s, const JsonStyle& style, std::string& out);

// Appends exactly what WriteJson(ParseJson(json), style, out) would, as the
// value at nesting `level` of an enclosing document (the indent of its inner
// lines), without building a Value: listings copy stored JSON into their
// output this way. Throws JsonError as ParseJson does.
void WriteJsonText(std::string_view json, const JsonStyle& style, int level, std::string& out);

}  // namespace brine
