// Lets Catch print a brine::Value in failure messages (as one line of JSON).
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "brine/core/json.h"

namespace Catch {
template <>
struct StringMaker<brine::Value> {
  static std::string convert(const brine::Value& v) { return brine::ToJson(v, brine::JsonStyle::Python(-1)); }
};
}  // namespace Catch
