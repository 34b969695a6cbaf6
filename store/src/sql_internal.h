// What the two SQL console engines (sql_sqlite.cpp, sql_postgres.cpp) share.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/store/sql.h"

namespace brine::store::detail {

// Line and column (from 1; the column counts UTF-8 characters) of byte
// `offset` in `text`.
[[nodiscard]] std::pair<int, int> LineAndColumn(std::string_view text, std::size_t offset);

// A statement of a PostgreSQL script: its text and where it starts in the script.
struct ScriptStatement {
  std::string_view text;
  std::size_t offset = 0;
};

// Splits `text` at the semicolons outside quoted strings, quoted
// identifiers, comments and dollar-quoted strings. Statements of only
// blanks and comments are left out. The semicolon is not part of a statement.
[[nodiscard]] std::vector<ScriptStatement> SplitPostgresScript(std::string_view text);

// `text` with each `:name` outside quotes, comments and dollar quotes
// replaced by `$N` (N numbering the distinct names from 1; `::` is a cast,
// not a parameter).
struct TranslatedStatement {
  std::string text;
  std::vector<std::string> names;  // names[N-1] is $N's name
  // (byte offset in `text`, byte offset in the original) at the start of
  // each piece copied unchanged, in order: maps a position back.
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  // Where the text has a `$1` of its own (not supported: it would take a
  // named parameter's value), if it does.
  std::optional<std::size_t> positional;
  [[nodiscard]] std::size_t OriginalOffset(std::size_t translated) const;
};
[[nodiscard]] TranslatedStatement TranslateNamedParameters(std::string_view text);

// `text` with each `:name` outside quotes, comments and dollar quotes (as
// TranslateNamedParameters finds them) written `:` + rename(name).
[[nodiscard]] std::string RenameNamedParameters(std::string_view text,
                                                const std::function<std::string(const std::string&)>& rename);

// `text` without leading and trailing blanks.
[[nodiscard]] std::string_view TrimSql(std::string_view text);

// A parameter value as text for the database (bool: "true"/"false"; a
// number in Python's form; a list or a map as JSON); nullopt for null.
[[nodiscard]] std::optional<std::string> SqlParamText(const Value& v);

// Lowercase hex of `bytes`.
[[nodiscard]] std::string HexText(std::string_view bytes);

std::unique_ptr<SqlEngine> OpenSqliteSqlEngine(const std::string& path);
std::unique_ptr<SqlEngine> OpenPostgresSqlEngine(const std::string& uri);

}  // namespace brine::store::detail
