// Rows of a query (brine.sql; next brine-web's /sql page) as text: CSV and
// an aligned table. A cell is a brine Value: null, a bool, an integer, a
// float (Python's repr), or text (a BLOB arrives as hex text).
#pragma once

#include <string>
#include <vector>

#include "brine/core/value.h"

namespace brine::output {

// RFC 4180: a header row of `columns`, then one record per row, each ended
// by CRLF; a field holding a comma, a double quote, CR or LF is quoted, its
// quotes doubled. NULL is an empty field. Text (and a column name) that
// starts with `=`, `+`, `-`, `@`, a tab or CR gets a `'` in front, so a
// spreadsheet shows it rather than running it as a formula (OWASP's CSV
// injection advice); numbers are written as they are.
[[nodiscard]] std::string CsvTable(const std::vector<std::string>& columns, const std::vector<std::vector<Value>>& rows);

// A table for people: the column names, a rule of dashes, then the rows,
// each column as wide as its widest cell (in characters) and separated by
// two spaces; numbers right-aligned, NULL empty, and CR, LF and tab in text
// shown as \r, \n and \t so each row stays on one line.
[[nodiscard]] std::string AlignedTable(const std::vector<std::string>& columns,
                                       const std::vector<std::vector<Value>>& rows);

// The rows as a list of maps, keys in column order; a repeated column name
// gets a suffix: the second `jid` is `jid_2`, the third `jid_3` (a suffixed
// name already taken counts on).
[[nodiscard]] Value RowObjects(const std::vector<std::string>& columns, const std::vector<std::vector<Value>>& rows);

}  // namespace brine::output
