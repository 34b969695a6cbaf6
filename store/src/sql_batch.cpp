// RunEach (sql_batch.h).
#include "sql_batch.h"

#include <algorithm>

#include "sql_internal.h"

namespace brine::store::detail {

std::vector<std::vector<std::vector<Value>>> RunEach(const SqlEngine& engine, const std::string& sql,
                                                     const std::vector<ValueMap>& sets,
                                                     std::chrono::milliseconds timeout) {
  std::vector<std::vector<std::vector<Value>>> out;
  if (sets.empty()) return out;
  std::string text;
  ValueMap params;
  for (std::size_t n = 0; n < sets.size(); ++n) {
    const std::string suffix = "_" + std::to_string(n);
    const ValueMap& set = sets[n];
    text += RenameNamedParameters(sql, [&](const std::string& name) {
      const bool in_set = std::any_of(set.begin(), set.end(), [&](const auto& p) { return p.first == name; });
      return in_set ? name + suffix : name;
    });
    text += ";\n";
    for (const auto& [key, value] : set) params.emplace_back(key + suffix, value);
  }
  engine.Run(text, params,
             {.timeout = timeout, .row_limit = 100000, .statements = SqlOptions::Statements::kMany},
             [&](SqlResult&& r) { out.push_back(std::move(r.rows)); });
  return out;
}

}  // namespace brine::store::detail
