#include "brine/output/rows.h"

#include <algorithm>

#include "brine/core/json.h"

namespace brine::output {
namespace {

// A cell as plain text: "" for NULL, true/false, digits, Python's float repr.
std::string CellText(const Value& v) {
  if (v.is_null()) return "";
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_string()) return v.as_string();
  if (auto s = PythonScalarStr(v)) return *s;
  return ToJson(v);
}

std::string CsvField(const std::string& text, bool neutralize) {
  std::string s = text;
  if (neutralize && !s.empty() &&
      (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r')) {
    s.insert(s.begin(), '\'');
  }
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (const char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::size_t Width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string Shown(const Value& v) {
  std::string out;
  for (const char c : CellText(v)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string CsvTable(const std::vector<std::string>& columns, const std::vector<std::vector<Value>>& rows) {
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c) out += (c > 0 ? "," : "") + CsvField(columns[c], true);
  out += "\r\n";
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += ',';
      out += CsvField(CellText(row[c]), row[c].is_string());
    }
    out += "\r\n";
  }
  return out;
}

std::string AlignedTable(const std::vector<std::string>& columns, const std::vector<std::vector<Value>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& c : columns) widths.push_back(Width(c));
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    cells.emplace_back();
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      cells.back().push_back(Shown(row[c]));
      widths[c] = std::max(widths[c], Width(cells.back().back()));
    }
  }
  auto line = [&](const std::vector<std::string>& texts, const std::vector<Value>* values) {
    std::string out;
    for (std::size_t c = 0; c < texts.size(); ++c) {
      const std::string pad(widths[c] - Width(texts[c]), ' ');
      const bool right = values != nullptr && (*values)[c].is_number();
      const bool last = c + 1 == texts.size();
      if (c > 0) out += "  ";
      out += right ? pad + texts[c] : texts[c] + (last ? "" : pad);
    }
    return out + "\n";
  };
  std::string out = line(columns, nullptr);
  std::vector<std::string> rule;
  for (const std::size_t w : widths) rule.emplace_back(w, '-');
  out += line(rule, nullptr);
  for (std::size_t r = 0; r < rows.size(); ++r) out += line(cells[r], &rows[r]);
  return out;
}

Value RowObjects(const std::vector<std::string>& columns, const std::vector<std::vector<Value>>& rows) {
  std::vector<std::string> keys;
  for (const auto& name : columns) {
    std::string key = name;
    for (int n = 2; std::find(keys.begin(), keys.end(), key) != keys.end(); ++n) key = name + "_" + std::to_string(n);
    keys.push_back(key);
  }
  ValueList out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    ValueMap object;
    object.reserve(keys.size());
    for (std::size_t c = 0; c < keys.size() && c < row.size(); ++c) object.emplace_back(keys[c], row[c]);
    out.emplace_back(std::move(object));
  }
  return Value(std::move(out));
}

}  // namespace brine::output
