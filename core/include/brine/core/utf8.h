// UTF-8 helpers with Python's rules: overlong forms, encoded surrogates
// (U+D800..U+DFFF) and code points above U+10FFFF are not valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brine {

// Length (1-4) of the valid UTF-8 sequence that starts `s`, or 0 when `s` is
// empty or does not start with one.
[[nodiscard]] std::size_t Utf8SequenceLength(std::string_view s);
// True when all of `s` is valid UTF-8.
[[nodiscard]] bool IsValidUtf8(std::string_view s);
// The code point of one valid sequence (as measured by Utf8SequenceLength).
[[nodiscard]] char32_t DecodeUtf8(std::string_view seq);
// Appends the UTF-8 encoding of `cp`. Lone surrogates are encoded as three
// bytes (WTF-8) so that nothing is lost.
void AppendUtf8(char32_t cp, std::string& out);

}  // namespace brine
