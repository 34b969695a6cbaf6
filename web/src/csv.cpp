#include "brine/web/csv.h"

namespace brine::web {

std::string CsvCell(const std::optional<std::string>& cell) {
  if (!cell) return "";
  std::string text = *cell;
  if (!text.empty() && (text[0] == '=' || text[0] == '+' || text[0] == '-' || text[0] == '@' || text[0] == '\t' ||
                        text[0] == '\r')) {
    text.insert(0, 1, '\'');
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::string CsvTable(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::optional<std::string>>>& rows) {
  std::string out;
  auto line = [&out](const auto& cells) {
    bool first = true;
    for (const auto& cell : cells) {
      if (!first) out += ',';
      first = false;
      out += CsvCell(std::optional<std::string>(cell));
    }
    out += "\r\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

}  // namespace brine::web
