// The SQL console on a SQLite store (contract: brine/store/sql.h). Uses
// SQLite's C API directly: the progress handler, the authorizer,
// sqlite3_stmt_readonly and sqlite3_error_offset are not in SQLiteCpp.
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <string>

#include "connection.h"
#include "sql_internal.h"

namespace brine::store::detail {
namespace {

using Clock = std::chrono::steady_clock;

// "file:" URI of `path` with `mode=ro`: SQLite then opens the file read-only
// whatever the flags (and refuses to create it).
std::string ReadOnlyUri(const std::string& path) { return FileUri(path) + "?mode=ro"; }

// Why the progress handler stopped a statement.
struct Budget {
  Clock::time_point deadline;
  const SqlCancel* cancel = nullptr;
  enum class Stop { kNone, kTimeout, kCancel } stop = Stop::kNone;
};

int OnProgress(void* arg) {
  auto* b = static_cast<Budget*>(arg);
  if (b->cancel != nullptr && b->cancel->cancelled()) {
    b->stop = Budget::Stop::kCancel;
    return 1;
  }
  if (Clock::now() >= b->deadline) {
    b->stop = Budget::Stop::kTimeout;
    return 1;
  }
  return 0;
}

bool IsReadOnlyPragma(const char* name) {
  if (name == nullptr) return false;
  std::string lower;
  for (const char* p = name; *p != '\0'; ++p) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  const auto& allowed = SqlReadOnlyPragmas();
  return std::find(allowed.begin(), allowed.end(), lower) != allowed.end();
}

// Pragmas whose argument names what to read (a table, an index, a schema
// check's limit); for every other allowed pragma an argument sets a value.
bool PragmaArgumentReads(const char* name) {
  static const char* const kReading[] = {"foreign_key_check", "foreign_key_list", "index_info", "index_list",
                                         "index_xinfo",       "integrity_check",  "quick_check", "table_info",
                                         "table_list",        "table_xinfo"};
  for (const char* r : kReading) {
    if (sqlite3_stricmp(name, r) == 0) return true;
  }
  return false;
}

// The authorizer: reading is allowed, and nothing else (sql.h). `flag`
// points to a bool set when the statement being prepared is a BEGIN,
// COMMIT, ROLLBACK, SAVEPOINT or RELEASE, which Run skips: each statement
// already runs in a read transaction of its own.
int Authorize(void* flag, int action, const char* a, const char* b, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      *static_cast<bool*>(flag) = true;
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (IsReadOnlyPragma(a) && (b == nullptr || PragmaArgumentReads(a))) return SQLITE_OK;
      return SQLITE_DENY;
    default:
      // Every write (INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, REINDEX,
      // ANALYZE), ATTACH, DETACH, CREATE VIRTUAL TABLE.
      return SQLITE_DENY;
  }
}

class Connection {
 public:
  explicit Connection(const std::string& path) {
    if (!std::filesystem::exists(path)) throw StoreError("no brine store at " + path);
    std::string message;
    if (!Open(ReadOnlyUri(path), message)) {
      // A WAL store with no -shm in a folder this user cannot write (brine-master
      // is not running on it, or it would exist): read it as immutable, as the
      // store's read-only open does (connection.cpp).
      std::string ignored;
      if (!Open(ReadOnlyUri(path) + "&immutable=1", ignored)) throw StoreError("opening " + path + ": " + message);
    }
    sqlite3_extended_result_codes(db_, 1);
    Exec("PRAGMA query_only = ON");
    // A WAL reader waits for a lock only while a checkpoint resets the WAL index.
    sqlite3_busy_timeout(db_, 5000);
    sqlite3_set_authorizer(db_, Authorize, &transaction_control_);
  }
  ~Connection() { sqlite3_close_v2(db_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens `uri` and reads the schema; false (with the message) when either fails.
  bool Open(const std::string& uri, std::string& message) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    const int rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    if (rc == SQLITE_OK &&
        sqlite3_exec(db_, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr) == SQLITE_OK) {
      return true;
    }
    message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    return false;
  }

  void Exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error != nullptr ? error : sqlite3_errmsg(db_);
      sqlite3_free(error);
      throw StoreError(std::string(sql) + ": " + message);
    }
  }
  sqlite3* get() const { return db_; }
  // Whether the last statement prepared is transaction control (Authorize).
  bool& transaction_control() { return transaction_control_; }

 private:
  sqlite3* db_ = nullptr;
  bool transaction_control_ = false;
};

// Owns a prepared statement.
struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

class SqliteSqlEngine final : public SqlEngine {
 public:
  explicit SqliteSqlEngine(std::string path) : path_(std::move(path)) {
    if (!std::filesystem::exists(path_)) throw StoreError("no brine store at " + path_);
  }

  void Run(std::string_view text, const ValueMap& params, const SqlOptions& options,
           const std::function<void(SqlResult&&)>& each, const SqlCancel* cancel) const override {
    Connection conn(path_);
    sqlite3* db = conn.get();
    Budget budget{Clock::now() + options.timeout, cancel};
    sqlite3_progress_handler(db, 1000, OnProgress, &budget);
    auto stopped = [&]() {
      if (budget.stop == Budget::Stop::kCancel) throw SqlCancelledError("the query was cancelled");
      if (budget.stop == Budget::Stop::kTimeout) {
        throw SqlTimeoutError("the query ran out of time: it was stopped after its budget of " +
                              Seconds(options.timeout));
      }
    };
    auto fail = [&](std::size_t start, std::string message, bool with_offset) -> void {
      stopped();
      int offset = with_offset ? sqlite3_error_offset(db) : -1;
      if (offset >= 0) {
        const auto [line, column] = LineAndColumn(text, start + static_cast<std::size_t>(offset));
        throw SqlError(message, line, column);
      }
      // No position inside the statement: name where the statement starts.
      const auto [line, column] = LineAndColumn(text, start + LeadingBlanks(text.substr(start)));
      if (message.empty()) message = sqlite3_errmsg(db);
      throw SqlError(message, line, column);
    };
    std::size_t at = 0;
    int statements = 0;
    while (at < text.size()) {
      Statement st;
      const char* begin = text.data() + at;
      const char* tail = nullptr;
      conn.transaction_control() = false;
      const int rc = sqlite3_prepare_v3(db, begin, static_cast<int>(text.size() - at), 0, &st.stmt, &tail);
      if (rc != SQLITE_OK) {
        std::string message = sqlite3_errmsg(db);
        if (budget.stop == Budget::Stop::kNone && message.find("not authorized") != std::string::npos) {
          message += " (brine.sql is read-only)";
        }
        fail(at, message, true);
      }
      const std::size_t start = at;
      at = static_cast<std::size_t>(tail - text.data());
      if (st.stmt == nullptr) continue;  // blanks or comments only
      if (++statements > 1 && options.statements == SqlOptions::Statements::kOne) {
        const auto [line, column] = LineAndColumn(text, start + LeadingBlanks(text.substr(start)));
        throw SqlError("more than one statement (brine.sql_file runs several, one after another)", line, column);
      }
      if (sqlite3_stmt_readonly(st.stmt) == 0) {
        const auto [line, column] = LineAndColumn(text, start + LeadingBlanks(text.substr(start)));
        throw SqlError("attempt to write: brine.sql is read-only", line, column);
      }
      if (options.statements == SqlOptions::Statements::kOne) {
        // Refuse a second statement before running the first.
        std::size_t rest = at;
        while (rest < text.size()) {
          Statement next;
          const char* next_tail = nullptr;
          if (sqlite3_prepare_v3(db, text.data() + rest, static_cast<int>(text.size() - rest), 0, &next.stmt,
                                 &next_tail) != SQLITE_OK ||
              next.stmt != nullptr) {
            const auto [line, column] = LineAndColumn(text, rest + LeadingBlanks(text.substr(rest)));
            throw SqlError("more than one statement (brine.sql_file runs several, one after another)", line, column);
          }
          rest = static_cast<std::size_t>(next_tail - text.data());
        }
      }
      SqlResult result;
      result.statement = std::string(TrimSql(std::string_view(begin, static_cast<std::size_t>(tail - begin))));
      if (conn.transaction_control()) {
        // BEGIN, COMMIT, SAVEPOINT...: nothing to do, no rows.
        each(std::move(result));
        continue;
      }
      Bind(st.stmt, params, text, start);
      const int columns = sqlite3_column_count(st.stmt);
      for (int c = 0; c < columns; ++c) {
        const char* name = sqlite3_column_name(st.stmt, c);
        result.columns.emplace_back(name != nullptr ? name : "");
      }
      for (;;) {
        const int step = sqlite3_step(st.stmt);
        if (step == SQLITE_DONE) break;
        if (step != SQLITE_ROW) {
          const std::string message = sqlite3_errmsg(db);
          sqlite3_reset(st.stmt);
          EndTransaction(conn);
          fail(start, message, false);
        }
        if (static_cast<std::int64_t>(result.rows.size()) >= options.row_limit) {
          result.truncated = true;
          break;
        }
        std::vector<Value> row;
        row.reserve(static_cast<std::size_t>(columns));
        for (int c = 0; c < columns; ++c) row.push_back(ColumnValue(st.stmt, c));
        result.rows.push_back(std::move(row));
      }
      // No snapshot outlives its statement: reset ends the statement's read
      // transaction, and a transaction the text opened is rolled back.
      sqlite3_reset(st.stmt);
      EndTransaction(conn);
      each(std::move(result));
    }
    stopped();
  }

  std::vector<SqlView> Views() const override {
    Connection conn(path_);
    std::vector<SqlView> out;
    for (const std::string& name : DocumentedViews()) {
      Statement st;
      // The PRAGMA form: the authorizer refuses the pragma_table_info()
      // function (it asks to update sqlite_schema). The names are brine's own.
      const std::string sql = "PRAGMA table_info(\"" + name + "\")";
      if (sqlite3_prepare_v2(conn.get(), sql.c_str(), -1, &st.stmt, nullptr) != SQLITE_OK) {
        throw StoreError(std::string("reading the views: ") + sqlite3_errmsg(conn.get()));
      }
      SqlView view{name, {}};
      int rc = 0;
      while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) {
        view.columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.stmt, 1)));
      }
      if (rc != SQLITE_DONE) throw StoreError(std::string("reading the views: ") + sqlite3_errmsg(conn.get()));
      if (!view.columns.empty()) out.push_back(std::move(view));
    }
    return out;
  }

 private:
  std::string path_;

  static std::string Seconds(std::chrono::milliseconds ms) {
    const auto n = ms.count();
    if (n % 1000 == 0) return std::to_string(n / 1000) + " s";
    return std::to_string(n) + " ms";
  }

  static std::size_t LeadingBlanks(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
    return i;
  }

  static void EndTransaction(Connection& conn) {
    if (sqlite3_get_autocommit(conn.get()) == 0) {
      // The text's BEGIN or SAVEPOINT: the authorizer allows ROLLBACK.
      sqlite3_exec(conn.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }

  static void Bind(sqlite3_stmt* stmt, const ValueMap& params, std::string_view text, std::size_t start) {
    const int n = sqlite3_bind_parameter_count(stmt);
    for (int i = 1; i <= n; ++i) {
      const char* raw = sqlite3_bind_parameter_name(stmt, i);
      // Where the parameter is written (for the message only).
      const std::size_t at = raw != nullptr ? text.find(raw, start) : std::string_view::npos;
      const auto [line, column] =
          LineAndColumn(text, at != std::string_view::npos ? at : start + LeadingBlanks(text.substr(start)));
      if (raw == nullptr || raw[0] == '?') {
        throw SqlError("positional parameters (?) are not supported: name them, :name, and give name=VALUE", line,
                       column);
      }
      const std::string name(raw + 1);
      const Value* value = nullptr;
      for (const auto& [key, v] : params) {
        if (key == name) value = &v;
      }
      if (value == nullptr) {
        throw SqlError("parameter " + std::string(raw) + " has no value (give " + name + "=VALUE)", line, column);
      }
      int rc = SQLITE_OK;
      if (value->is_null()) {
        rc = sqlite3_bind_null(stmt, i);
      } else if (value->is_bool()) {
        rc = sqlite3_bind_int64(stmt, i, value->as_bool() ? 1 : 0);
      } else if (value->kind() == Value::Kind::kInt) {
        rc = sqlite3_bind_int64(stmt, i, value->as_int());
      } else if (value->is_float()) {
        rc = sqlite3_bind_double(stmt, i, value->as_float());
      } else {
        const std::string s = *SqlParamText(*value);
        rc = sqlite3_bind_text(stmt, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) throw SqlError("binding " + std::string(raw) + ": " + sqlite3_errstr(rc), line, column);
    }
  }

  static Value ColumnValue(sqlite3_stmt* stmt, int c) {
    switch (sqlite3_column_type(stmt, c)) {
      case SQLITE_NULL: return Value();
      case SQLITE_INTEGER: return Value(static_cast<long long>(sqlite3_column_int64(stmt, c)));
      case SQLITE_FLOAT: return Value(sqlite3_column_double(stmt, c));
      case SQLITE_BLOB: {
        const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt, c));
        return Value(HexText(std::string_view(bytes != nullptr ? bytes : "",
                                              static_cast<std::size_t>(sqlite3_column_bytes(stmt, c)))));
      }
      default: {
        const auto* chars = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        return Value(std::string(chars != nullptr ? chars : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, c))));
      }
    }
  }
};

}  // namespace

std::unique_ptr<SqlEngine> OpenSqliteSqlEngine(const std::string& path) {
  return std::make_unique<SqliteSqlEngine>(path);
}

}  // namespace brine::store::detail
