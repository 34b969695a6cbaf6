// RunEach (sql_batch.h).
#include "sql_batch.h"

#include <cctype>

namespace brine::store::detail {
namespace {

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// `sql` with every `:name` of `set` written `:name_<n>`.
std::string Renamed(const std::string& sql, const ValueMap& set, std::size_t n) {
  std::string out;
  out.reserve(sql.size() + 16);
  for (std::size_t i = 0; i < sql.size();) {
    if (sql[i] == ':' && i + 1 < sql.size() && IsNameChar(sql[i + 1]) && (i == 0 || sql[i - 1] != ':')) {
      std::size_t end = i + 1;
      while (end < sql.size() && IsNameChar(sql[end])) ++end;
      const std::string name = sql.substr(i + 1, end - i - 1);
      out += ':' + name;
      for (const auto& [key, value] : set) {
        if (key == name) {
          out += '_' + std::to_string(n);
          break;
        }
      }
      i = end;
      continue;
    }
    out += sql[i++];
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::vector<Value>>> RunEach(const SqlEngine& engine, const std::string& sql,
                                                     const std::vector<ValueMap>& sets,
                                                     std::chrono::milliseconds timeout) {
  std::vector<std::vector<std::vector<Value>>> out;
  if (sets.empty()) return out;
  std::string text;
  ValueMap params;
  for (std::size_t n = 0; n < sets.size(); ++n) {
    text += Renamed(sql, sets[n], n) + ";\n";
    for (const auto& [key, value] : sets[n]) params.emplace_back(key + "_" + std::to_string(n), value);
  }
  engine.Run(text, params,
             {.timeout = timeout, .row_limit = 100000, .statements = SqlOptions::Statements::kMany},
             [&](SqlResult&& r) { out.push_back(std::move(r.rows)); });
  return out;
}

}  // namespace brine::store::detail
