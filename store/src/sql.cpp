#include "brine/store/sql.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "brine/core/database.h"
#include "brine/core/json.h"
#include "postgres_connection.h"
#include "sql_internal.h"

namespace brine::store {

const std::vector<std::string>& DocumentedViews() {
  // docs/schema.md's views, in its order (tests/sql_test.cpp checks the
  // list against the page).
  static const std::vector<std::string> kViews = {
      "jids",           "jid_minions",        "jid_missing",           "brine_counters",
      "salt_returns",   "salt_events",        "tagged_events",         "return_events",
      "brine_api_v1_job", "brine_api_v1_job_minion",
      "brine_api_v1_return", "brine_api_v1_fun_latest", "brine_api_v1_returned_minion", "brine_api_v1_endtime",
      "failed_returns", "failed_states",      "minion_job_outcome",    "minion_reliability",
      "return_times",   "user_jobs",          "brine_bus_gaps"};
  return kViews;
}

const std::vector<std::string>& SqlReadOnlyPragmas() {
  // PRAGMAs that only read. Those taking a value to set (user_version,
  // page_size, ...) are allowed only without one (sql_sqlite.cpp).
  // journal_mode is not here: even its reading form is a writing statement
  // to SQLite (sqlite3_stmt_readonly is false).
  static const std::vector<std::string> kPragmas = {
      "application_id", "collation_list", "compile_options", "data_version",  "database_list",
      "encoding",       "foreign_key_check", "foreign_key_list", "freelist_count", "function_list",
      "index_info",     "index_list",     "index_xinfo",     "integrity_check",
      "module_list",    "page_count",     "page_size",       "pragma_list",   "quick_check",
      "schema_version", "table_info",     "table_list",      "table_xinfo",   "user_version"};
  return kPragmas;
}

std::unique_ptr<SqlEngine> OpenSqlEngine(const std::string& database) {
  if (IsServerDatabaseUri(database)) return detail::OpenPostgresSqlEngine(database);
  return detail::OpenSqliteSqlEngine(database);
}

}  // namespace brine::store

namespace brine::store::detail {

std::pair<int, int> LineAndColumn(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

std::string_view TrimSql(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

namespace {

bool IdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || (c & 0x80) != 0; }
bool IdentChar(char c) { return IdentStart(c) || std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '$'; }

// Where a quoted run that opens at s[i] (`quote`) ends: past its closing
// quote, a doubled quote being one quote inside it (and, with `escapes`, a
// backslash escaping the next byte); the end of `s` when it never closes.
std::size_t PastQuoted(std::string_view s, std::size_t i, char quote, bool escapes) {
  const std::size_t n = s.size();
  ++i;
  while (i < n) {
    if (escapes && s[i] == '\\') {
      i += 2;
    } else if (s[i] == quote) {
      if (i + 1 < n && s[i + 1] == quote) {
        i += 2;
      } else {
        return i + 1;
      }
    } else {
      ++i;
    }
  }
  return n;
}

// PostgreSQL's lexical structure, as far as finding statement ends and
// parameters needs it. Calls on_semicolon(i) and on_param(start, end) for
// what lies outside quotes and comments; `code(i)` for each byte of code
// that is not a comment (to tell a statement of comments only).
template <typename Semicolon, typename Param, typename Code>
void ScanPostgres(std::string_view s, Semicolon on_semicolon, Param on_param, Code code) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      int depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
          ++depth;
          i += 2;
        } else if (s[i] == '*' && i + 1 < n && s[i + 1] == '/') {
          --depth;
          i += 2;
        } else {
          ++i;
        }
      }
    } else if (c == '\'') {
      // E'...' takes backslash escapes; '' is a quote in every form.
      const bool escapes = i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') && (i < 2 || !IdentChar(s[i - 2]));
      code(i);
      i = PastQuoted(s, i, '\'', escapes);
    } else if (c == '"') {
      code(i);
      i = PastQuoted(s, i, '"', false);
    } else if (c == '$' && (i == 0 || !IdentChar(s[i - 1])) && i + 1 < n &&
               std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0) {
      // $1: a positional parameter.
      std::size_t j = i + 1;
      while (j < n && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      code(i);
      on_param(i, j);
      i = j;
    } else if (c == '$' && (i == 0 || !IdentChar(s[i - 1])) && i + 1 < n &&
               (s[i + 1] == '$' || (IdentStart(s[i + 1]) && s[i + 1] != '$'))) {
      // $tag$ ... $tag$ (a tag is an identifier without '$'); $1 is a parameter.
      std::size_t j = i + 1;
      while (j < n && s[j] != '$' && (IdentChar(s[j]))) ++j;
      code(i);
      if (j < n && s[j] == '$') {
        const std::string_view tag = s.substr(i, j - i + 1);
        const std::size_t close = s.find(tag, j + 1);
        i = close == std::string_view::npos ? n : close + tag.size();
      } else {
        i = j;
      }
    } else if (c == ':' && i + 1 < n && s[i + 1] == ':') {
      code(i);
      i += 2;
    } else if (c == ':' && i + 1 < n && IdentStart(s[i + 1]) && (s[i + 1] & 0x80) == 0) {
      std::size_t j = i + 1;
      while (j < n && (std::isalnum(static_cast<unsigned char>(s[j])) != 0 || s[j] == '_')) ++j;
      code(i);
      on_param(i, j);
      i = j;
    } else if (c == ';') {
      on_semicolon(i);
      ++i;
    } else if (IdentStart(c)) {
      // A whole word at once, so E'..' and a$b are seen as words.
      code(i);
      while (i < n && IdentChar(s[i])) ++i;
    } else {
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') code(i);
      ++i;
    }
  }
}

}  // namespace

std::vector<ScriptStatement> SplitPostgresScript(std::string_view text) {
  std::vector<ScriptStatement> out;
  std::size_t start = 0;
  bool has_code = false;
  auto finish = [&](std::size_t end) {
    if (has_code) {
      std::string_view piece = text.substr(start, end - start);
      std::size_t lead = 0;
      while (lead < piece.size() && std::isspace(static_cast<unsigned char>(piece[lead])) != 0) ++lead;
      out.push_back({TrimSql(piece), start + lead});
    }
    start = end + 1;
    has_code = false;
  };
  ScanPostgres(text, finish, [](std::size_t, std::size_t) {}, [&](std::size_t) { has_code = true; });
  finish(text.size());
  return out;
}

TranslatedStatement TranslateNamedParameters(std::string_view text) {
  TranslatedStatement t;
  std::size_t copied = 0;  // bytes of `text` handled so far
  t.pieces.emplace_back(0, 0);
  ScanPostgres(
      text, [](std::size_t) {},
      [&](std::size_t begin, std::size_t end) {
        if (text[begin] == '$') {
          if (!t.positional) t.positional = begin;
          return;
        }
        t.text.append(text.substr(copied, begin - copied));
        const std::string name(text.substr(begin + 1, end - begin - 1));
        auto it = std::find(t.names.begin(), t.names.end(), name);
        if (it == t.names.end()) it = t.names.insert(t.names.end(), name);
        t.pieces.emplace_back(t.text.size(), begin);
        t.text += "$" + std::to_string(it - t.names.begin() + 1);
        copied = end;
        t.pieces.emplace_back(t.text.size(), end);
      },
      [](std::size_t) {});
  t.text.append(text.substr(copied));
  return t;
}

std::string RenameNamedParameters(std::string_view text,
                                  const std::function<std::string(const std::string&)>& rename) {
  std::string out;
  std::size_t copied = 0;
  ScanPostgres(
      text, [](std::size_t) {},
      [&](std::size_t begin, std::size_t end) {
        if (text[begin] == '$') return;
        out.append(text.substr(copied, begin - copied));
        out += ':' + rename(std::string(text.substr(begin + 1, end - begin - 1)));
        copied = end;
      },
      [](std::size_t) {});
  out.append(text.substr(copied));
  return out;
}

std::size_t TranslatedStatement::OriginalOffset(std::size_t translated) const {
  std::pair<std::size_t, std::size_t> at{0, 0};
  for (const auto& p : pieces) {
    if (p.first > translated) break;
    at = p;
  }
  return at.second + (translated - at.first);
}

std::optional<std::string> SqlParamText(const Value& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_bool()) return std::string(v.as_bool() ? "true" : "false");
  if (v.is_string()) return v.as_string();
  if (auto s = PythonScalarStr(v)) return *s;
  return ToJson(v);
}

std::string HexText(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

}  // namespace brine::store::detail
