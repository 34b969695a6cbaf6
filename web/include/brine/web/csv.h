// CSV as brine-web writes it (the rules brine.sql's CSV follows): RFC 4180
// lines ending "\r\n"; a header row first; a NULL is an empty cell; a cell is
// quoted (and its quotes doubled) when it holds a comma, a quote, CR or LF;
// and a cell that starts with = + - @, a tab or CR is prefixed with ' so that
// a spreadsheet shows it as text instead of running it as a formula (OWASP's
// "CSV injection").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brine::web {

// One cell, guarded and quoted as above. nullopt is NULL (an empty cell).
[[nodiscard]] std::string CsvCell(const std::optional<std::string>& cell);

// A table: the header row, then each row; every row should have the header's
// width (shorter rows are written as they are).
[[nodiscard]] std::string CsvTable(const std::vector<std::string>& header,
                                   const std::vector<std::vector<std::optional<std::string>>>& rows);

}  // namespace brine::web
