// Python's text semantics over brine's byte strings, as Salt's outputters see
// them. A brine string is bytes; Python sees the str that decoding them as
// UTF-8 with surrogateescape gives: valid sequences become their code points,
// every other byte b becomes U+DC00+b. Everything here works on that view, so
// lengths, line splits, stripping and repr() agree with Python's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"

namespace brine::output::py {

// The code points of `bytes` (surrogateescape for invalid UTF-8).
[[nodiscard]] std::u32string Decode(std::string_view bytes);
// The inverse of Decode: U+DC80..U+DCFF become the single byte they stand for.
[[nodiscard]] std::string Encode(std::u32string_view text);
void AppendEncoded(char32_t c, std::string& out);

// len() of the str.
[[nodiscard]] std::size_t Length(std::string_view bytes);

// str.isprintable() of one character (Unicode database of the generator).
[[nodiscard]] bool IsPrintable(char32_t c);
// str.isspace() of one character.
[[nodiscard]] bool IsSpace(char32_t c);
// A str.splitlines() boundary (\r\n counts as one, handled by SplitLines).
[[nodiscard]] bool IsLineBoundary(char32_t c);

// str.splitlines(keepends).
[[nodiscard]] std::vector<std::string> SplitLines(std::string_view bytes, bool keepends = false);
// str.strip(), str.rstrip(), str.lstrip() without arguments.
[[nodiscard]] std::string Strip(std::string_view bytes);
[[nodiscard]] std::string RStrip(std::string_view bytes);
// The length of RStrip(bytes), which is a prefix of `bytes`.
[[nodiscard]] std::size_t RStripLength(std::string_view bytes);
[[nodiscard]] std::string LStrip(std::string_view bytes);

// repr() of a str: quotes chosen as Python does, escapes for non-printables.
[[nodiscard]] std::string StrRepr(std::string_view bytes);
// repr() and str() of a value (dicts in insertion order, as Python prints them).
[[nodiscard]] std::string Repr(const Value& v);
[[nodiscard]] std::string Str(const Value& v);

// float(s) for a str; nullopt where Python raises ValueError. ASCII digits only
// (Python also accepts other Unicode decimal digits).
[[nodiscard]] std::optional<double> ParseFloat(std::string_view bytes);

// Python's sorted() order of str keys: by code point.
[[nodiscard]] bool CodePointLess(std::string_view a, std::string_view b);

}  // namespace brine::output::py
