// Sample values for the core tests (core_value_test.cpp, core_json_test.cpp):
// the awkward numbers, strings and nestings that the Value and JSON cases run
// through brine and through Python alike.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "brine/core/value.h"

namespace brine::test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// Finite doubles whose repr and JSON forms are easy to get wrong.
[[nodiscard]] std::vector<double> FiniteFloats();
// Ints and uints at and around the 2^53, int64 and uint64 limits.
[[nodiscard]] std::vector<Value> IntSamples();
// Valid UTF-8 (controls, NUL, U+2028, BOM, the plane limits), and byte strings
// that are not UTF-8 (overlong, surrogates, truncated, above U+10FFFF).
[[nodiscard]] std::vector<std::string> ValidStrings();
[[nodiscard]] std::vector<std::string> InvalidStrings();
[[nodiscard]] Value NestedSample();
// A map whose insertion order differs from every sort order.
[[nodiscard]] Value SortKeysSample();
// Every kind of value, valid UTF-8 throughout: Python can print these with
// ensure_ascii=False.
[[nodiscard]] std::vector<Value> ValidSamples();
// Strings, keys and nestings holding bytes that are not UTF-8.
[[nodiscard]] std::vector<Value> InvalidByteSamples();
// Whether `v` holds an inf or NaN / a NaN anywhere.
[[nodiscard]] bool HasNonFinite(const Value& v);
[[nodiscard]] bool HasNaN(const Value& v);
// Same value, and floats the same bit for bit (== treats -0.0 and 0.0 alike).
[[nodiscard]] bool Identical(const Value& a, const Value& b);

}  // namespace brine::test
