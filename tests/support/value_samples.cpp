#include "support/value_samples.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

namespace brine::test {

using namespace std::string_literals;

std::vector<double> FiniteFloats() {
  return {4.0,    12.5,    1e16,   1e15,        1e-05,   0.0001,  0.1,     1.0 / 3.0,
          -0.0,   1e300,   5e-324, 123456789.123456789, 0.0, -1.5, 1e22, 1e21, 1e17,
          9999999999999998.0, 0.001, 123e-7, DBL_MAX, DBL_MIN, -2.5e-310, 9007199254740993.0,
          100.0,  -12345.678, 2.0e-4};
}

std::vector<Value> IntSamples() {
  return {Value(0),
          Value(1),
          Value(-1),
          Value(42),
          Value(9007199254740993LL),   // 2^53 + 1: not a double
          Value(-9007199254740993LL),
          Value(kI64Max),
          Value(kI64Min),
          Value(static_cast<std::uint64_t>(kI64Max) + 1),
          Value(kU64Max)};
}

std::vector<std::string> ValidStrings() {
  std::string controls;
  for (int c = 1; c < 0x20; ++c) controls += static_cast<char>(c);
  return {""s,
          "plain"s,
          "h\xc3\xa9llo w\xc3\xb6rld"s,                 // héllo wörld
          "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"s,      // 日本語
          "\xf0\x9f\x98\x80 emoji"s,                    // 😀
          "quote \" backslash \\ slash /"s,
          controls,
          "nul\0inside"s,
          "\0"s,
          "del \x7f end"s,
          "tab\tnl\nret\r"s,
          "\xe2\x80\xa8 \xe2\x80\xa9"s,  // U+2028, U+2029
          "\xef\xbb\xbf"s,               // BOM
          "\xef\xbf\xbf \xf4\x8f\xbf\xbf"s,  // U+FFFF, U+10FFFF
          "\xed\x9f\xbf \xee\x80\x80"s};     // U+D7FF, U+E000
}

std::vector<std::string> InvalidStrings() {
  return {"\x80"s,
          "\xff"s,
          "a\xc3"s,                       // truncated 2-byte sequence
          "\xc0\xaf"s,                    // overlong '/'
          "\xed\xa0\x80"s,                // encoded surrogate U+D800
          "\xf4\x90\x80\x80"s,            // above U+10FFFF
          "ok \xfe then \xc3\xa9"s,
          "\xe2\x82"
          "x"s,
          "\xf0\x9f\x98"s,                // truncated 4-byte sequence
          "\x80\x81\x82\xbf\xc1\xf5"s};
}

Value NestedSample() {
  return Value::Map({
      {"fun", "test.ping"},
      {"arg", Value::List({1, 2.5, "x", Value(), true, Value::EmptyMap(), Value::EmptyList()})},
      {"ret", Value::Map({{"minion1", true},
                          {"z", Value::Map({{"b", 1}, {"a", Value::List({Value::Map({{"k", 4.0}})})}})}})},
      {"B", false},
      {"\xc3\xa9t\xc3\xa9", "summer"},  // été
      {"", Value()},
      {"\xf0\x9f\x98\x80", Value::List({Value::List({Value::List({})})})},
  });
}

Value SortKeysSample() {
  ValueMap m;
  const std::vector<std::string> keys = {"b", "a", "B", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x7f", "",
                                         "A b", "\t", "aa", "\xef\xbf\xbf", "_stamp", "\xe2\x82\xac"};
  int i = 0;
  for (const auto& k : keys) m.emplace_back(k, Value(i++));
  return Value(std::move(m));
}

// Valid UTF-8 throughout: Python can print these with ensure_ascii=False.
std::vector<Value> ValidSamples() {
  std::vector<Value> v = {Value(), Value(true), Value(false)};
  for (const auto& i : IntSamples()) v.push_back(i);
  for (double d : FiniteFloats()) v.emplace_back(d);
  v.emplace_back(kInf);
  v.emplace_back(-kInf);
  v.emplace_back(kNaN);
  for (const auto& s : ValidStrings()) v.emplace_back(s);
  v.push_back(Value::EmptyList());
  v.push_back(Value::EmptyMap());
  v.push_back(Value::List({Value::EmptyList()}));
  v.push_back(Value::List({Value::EmptyMap()}));
  v.push_back(Value::Map({{"a", Value::EmptyMap()}, {"b", Value::EmptyList()}}));
  v.push_back(NestedSample());
  v.push_back(SortKeysSample());
  {
    ValueList floats;
    for (double d : FiniteFloats()) floats.emplace_back(d);
    floats.emplace_back(kInf);
    floats.emplace_back(-kInf);
    v.emplace_back(std::move(floats));
  }
  v.emplace_back(ValueList(IntSamples()));
  {
    ValueMap strings;
    int i = 0;
    for (const auto& s : ValidStrings()) strings.emplace_back("k" + std::to_string(i++) + s, Value(s));
    v.emplace_back(std::move(strings));
  }
  v.push_back(Value::Map({{"nested", Value::Map({{"z", Value::Map({{"y", Value::Map({{"x", 1}, {"w", 2}})}})},
                                                 {"a", Value::List({Value::Map({{"d", 1}, {"c", 2}})})}})}}));
  return v;
}

std::vector<Value> InvalidByteSamples() {
  std::vector<Value> v;
  for (const auto& s : InvalidStrings()) v.emplace_back(s);
  ValueMap m;
  int i = 0;
  for (const auto& s : InvalidStrings()) m.emplace_back("key" + std::to_string(i++) + s, Value(s));
  v.emplace_back(std::move(m));
  v.push_back(Value::List({"\x80"s, Value::Map({{"\xff", "\xfe"s}})}));
  return v;
}

bool HasNonFinite(const Value& v) {
  if (v.is_float()) return !std::isfinite(v.as_float());
  if (v.is_list()) {
    return std::any_of(v.as_list().begin(), v.as_list().end(), HasNonFinite);
  }
  if (v.is_map()) {
    return std::any_of(v.as_map().begin(), v.as_map().end(),
                       [](const auto& e) { return HasNonFinite(e.second); });
  }
  return false;
}

bool HasNaN(const Value& v) {
  if (v.is_float()) return std::isnan(v.as_float());
  if (v.is_list()) return std::any_of(v.as_list().begin(), v.as_list().end(), HasNaN);
  if (v.is_map()) {
    return std::any_of(v.as_map().begin(), v.as_map().end(), [](const auto& e) { return HasNaN(e.second); });
  }
  return false;
}

// Same value, and floats the same bit for bit (== treats -0.0 and 0.0 alike).
bool Identical(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kFloat: {
      const double x = a.as_float(), y = b.as_float();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case Value::Kind::kList: {
      const auto& la = a.as_list();
      const auto& lb = b.as_list();
      if (la.size() != lb.size()) return false;
      for (std::size_t i = 0; i < la.size(); ++i) {
        if (!Identical(la[i], lb[i])) return false;
      }
      return true;
    }
    case Value::Kind::kMap: {
      const auto& ma = a.as_map();
      const auto& mb = b.as_map();
      if (ma.size() != mb.size()) return false;
      for (std::size_t i = 0; i < ma.size(); ++i) {
        if (ma[i].first != mb[i].first || !Identical(ma[i].second, mb[i].second)) return false;
      }
      return true;
    }
    default: return a == b;
  }
}

}  // namespace brine::test
