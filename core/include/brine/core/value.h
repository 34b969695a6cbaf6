// brine::Value: the JSON-like value that crosses every module boundary.
//
// Salt's payloads are msgpack/JSON documents produced by Python. To store and
// re-print them faithfully a value must:
//   - keep map keys in the order they were received (Python dicts are ordered,
//     and Salt's json outputter prints insertion order);
//   - keep integers and floats apart (`4.0` stays a float, `4` an int);
//   - keep integers exact up to 64 bits (signed, and unsigned above INT64_MAX);
//   - hold strings as raw bytes: valid UTF-8 normally, but a byte that is not
//     valid UTF-8 is kept as is (the JSON codec writes it as `\udcXX`).
//
// A Value is a regular type: copyable, movable, comparable with ==.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace brine {

class Value;

// Map entries in received order. Lookups are linear: Salt's maps are small,
// and the few big ones (a 500k-key return) are only ever walked, not searched.
using ValueList = std::vector<Value>;
using ValueMap = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kString, kList, kMap };

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}
  Value(long i) : v_(static_cast<std::int64_t>(i)) {}
  Value(long long i) : v_(static_cast<std::int64_t>(i)) {}
  // Unsigned values that fit in int64 are stored as kInt, so equal numbers compare equal.
  Value(unsigned long long u);
  Value(unsigned long u) : Value(static_cast<unsigned long long>(u)) {}
  Value(unsigned u) : v_(static_cast<std::int64_t>(u)) {}
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(ValueList l) : v_(std::move(l)) {}
  Value(ValueMap m) : v_(std::move(m)) {}

  static Value List(std::initializer_list<Value> items) { return Value(ValueList(items)); }
  static Value Map(std::initializer_list<std::pair<std::string, Value>> items) {
    return Value(ValueMap(items));
  }
  static Value EmptyMap() { return Value(ValueMap{}); }
  static Value EmptyList() { return Value(ValueList{}); }

  [[nodiscard]] Kind kind() const { return static_cast<Kind>(v_.index()); }
  [[nodiscard]] bool is_null() const { return kind() == Kind::kNull; }
  [[nodiscard]] bool is_bool() const { return kind() == Kind::kBool; }
  [[nodiscard]] bool is_int() const { return kind() == Kind::kInt || kind() == Kind::kUint; }
  [[nodiscard]] bool is_float() const { return kind() == Kind::kFloat; }
  [[nodiscard]] bool is_number() const { return is_int() || is_float(); }
  [[nodiscard]] bool is_string() const { return kind() == Kind::kString; }
  [[nodiscard]] bool is_list() const { return kind() == Kind::kList; }
  [[nodiscard]] bool is_map() const { return kind() == Kind::kMap; }

  // Accessors; each throws std::bad_variant_access on the wrong kind.
  [[nodiscard]] bool as_bool() const { return std::get<bool>(v_); }
  [[nodiscard]] std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
  [[nodiscard]] std::uint64_t as_uint() const { return std::get<std::uint64_t>(v_); }
  [[nodiscard]] double as_float() const { return std::get<double>(v_); }
  [[nodiscard]] const std::string& as_string() const { return std::get<std::string>(v_); }
  [[nodiscard]] std::string& as_string() { return std::get<std::string>(v_); }
  [[nodiscard]] const ValueList& as_list() const { return std::get<ValueList>(v_); }
  [[nodiscard]] ValueList& as_list() { return std::get<ValueList>(v_); }
  [[nodiscard]] const ValueMap& as_map() const { return std::get<ValueMap>(v_); }
  [[nodiscard]] ValueMap& as_map() { return std::get<ValueMap>(v_); }

  // Python truthiness: None, False, 0, 0.0, "", [], {} are false.
  [[nodiscard]] bool Truthy() const;

  // Map lookup by key; nullptr when this is not a map or has no such key.
  [[nodiscard]] const Value* Find(std::string_view key) const;
  [[nodiscard]] Value* Find(std::string_view key);
  // The string at `key`, or nullptr when absent or not a string.
  [[nodiscard]] const std::string* FindString(std::string_view key) const;

  // Sets `key` (replacing in place, or appending). Throws std::bad_variant_access
  // when this is not a map.
  void Set(std::string key, Value value);
  // Removes `key` if present; returns whether it was. No-op on non-maps.
  bool Erase(std::string_view key);

  friend bool operator==(const Value& a, const Value& b);

 private:
  // The alternative order matches Kind.
  std::variant<std::monostate, bool, std::int64_t, std::uint64_t, double, std::string, ValueList,
               ValueMap>
      v_;
};

// True when `a` and `b` are maps with the same keys in the same order and equal
// values, except that the values under `ignored_key` may differ (both must have
// it, at the same position, or neither). Used for "same return apart from _stamp".
[[nodiscard]] bool EqualExceptKey(const Value& a, const Value& b, std::string_view ignored_key);

}  // namespace brine
