#include "brine/core/value.h"

#include <limits>

namespace brine {

Value::Value(unsigned long long u) {
  if (u <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
    v_ = static_cast<std::int64_t>(u);
  } else {
    v_ = static_cast<std::uint64_t>(u);
  }
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kNull: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kUint: return true;  // only values above INT64_MAX are kUint
    case Kind::kFloat: return as_float() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !as_list().empty();
    case Kind::kMap: return !as_map().empty();
  }
  return false;
}

const Value* Value::Find(std::string_view key) const {
  if (!is_map()) return nullptr;
  for (const auto& [k, v] : as_map()) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* Value::Find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->Find(key));
}

const std::string* Value::FindString(std::string_view key) const {
  const Value* v = Find(key);
  return v != nullptr && v->is_string() ? &v->as_string() : nullptr;
}

void Value::Set(std::string key, Value value) {
  auto& m = as_map();
  for (auto& [k, v] : m) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  m.emplace_back(std::move(key), std::move(value));
}

bool Value::Erase(std::string_view key) {
  if (!is_map()) return false;
  auto& m = as_map();
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it->first == key) {
      m.erase(it);
      return true;
    }
  }
  return false;
}

bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

bool EqualExceptKey(const Value& a, const Value& b, std::string_view ignored_key) {
  if (!a.is_map() || !b.is_map()) return false;
  const auto& ma = a.as_map();
  const auto& mb = b.as_map();
  if (ma.size() != mb.size()) return false;
  for (std::size_t i = 0; i < ma.size(); ++i) {
    if (ma[i].first != mb[i].first) return false;
    if (ma[i].first == ignored_key) continue;
    if (!(ma[i].second == mb[i].second)) return false;
  }
  return true;
}

}  // namespace brine
