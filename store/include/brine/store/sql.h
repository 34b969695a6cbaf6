// brine::store SQL console: ad-hoc, read-only, time-bounded SQL on a live
// store (`brine.sql`, `brine.sql_file`, `brine.sql_views`, and brine-web's
// /sql page). The only SQL text brine runs that it did not write itself, so
// what keeps it harmless is the database, never a parse of the text:
//
// SQLite:
//   - the file is opened `mode=ro` with `PRAGMA query_only = ON`;
//   - every statement must be sqlite3_stmt_readonly() (this refuses every
//     write, VACUUM and VACUUM INTO, and a writing PRAGMA);
//   - an authorizer refuses every write action, ATTACH, DETACH, creating a
//     virtual table, and every PRAGMA but the read-only ones of
//     `SqlReadOnlyPragmas()` (table_info, index_list, database_list, ...),
//     which are allowed only in their reading form (a value-taking PRAGMA
//     such as `user_version` or `page_size` only without a value);
//   - the time budget and cancellation are SQLite's progress handler;
//   - a statement is reset and finalized before the next one, and a
//     transaction a `BEGIN` opened is rolled back, so no WAL snapshot
//     outlives its statement and brine-master's checkpoints are never held.
// PostgreSQL:
//   - each statement is sent alone through the extended protocol
//     (PQsendQueryParams, which refuses text holding several statements),
//     inside `BEGIN READ ONLY` with a query already run (so `SET TRANSACTION
//     READ WRITE` in the text is refused), and rolled back after it;
//   - the time budget and cancellation are a client-side PQcancel from a
//     watchdog thread, so `SET statement_timeout` in the text cannot lift it;
//   - what READ ONLY does not stop (functions with side effects such as
//     pg_terminate_backend, advisory locks, dblink) a SELECT-only role stops:
//     docs/day-two.md, "brine.sql".
// Named parameters are `:name` in the text (SQLite binds `:name`, `@name`
// and `$name` natively; on PostgreSQL a small lexer turns `:name` into `$N`,
// skipping quoted strings and identifiers, comments, dollar-quoted strings
// and `::` casts). Values are always bound, never spliced into the text.
//
// Threading: an SqlEngine keeps no connection; each Run opens its own and
// closes it, so any number of threads may call Run on one engine at once
// with no lock. Cancel a running call from another thread with its
// SqlCancel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/errors.h"

namespace brine::store {

// A flag another thread sets to stop a running call (a browser that went
// away). Checked by SQLite's progress handler and by the PostgreSQL
// watchdog every few tens of milliseconds.
class SqlCancel {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

struct SqlOptions {
  enum class Statements { kOne, kMany };
  // The budget of the whole call (every statement of a script together).
  std::chrono::milliseconds timeout{30000};
  // Rows kept per statement; more are not read (SqlResult::truncated).
  std::int64_t row_limit = 10000;
  // kOne: the text must be one statement (an error otherwise). kMany: the
  // statements are run one after another, each with its own result.
  Statements statements = Statements::kOne;
};

// One statement's answer.
struct SqlResult {
  std::vector<std::string> columns;        // in the statement's order, names as the database gives them
  std::vector<std::vector<Value>> rows;     // NULL: null; integers; reals; text; a BLOB/bytea as hex text
  bool truncated = false;                   // rows were cut at the row limit: there were more
  std::string statement;                    // the statement's text as written (trimmed)
};

// The database refused or failed the statement. what() is the database's
// message, prefixed with "line L, column C: " when it gave a position;
// line and column count from 1 in the whole text given to Run (0: unknown).
class SqlError : public StoreError {
 public:
  SqlError(const std::string& message, int line, int column)
      : StoreError(line > 0 ? "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message
                            : message),
        message_(message),
        line_(line),
        column_(column) {}
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] int column() const { return column_; }

 private:
  std::string message_;
  int line_;
  int column_;
};

// The call ran out of its time budget and was stopped.
class SqlTimeoutError : public StoreError {
 public:
  using StoreError::StoreError;
};

// The call was stopped through its SqlCancel.
class SqlCancelledError : public StoreError {
 public:
  using StoreError::StoreError;
};

// A documented view and its columns, as the database's catalog has them.
struct SqlView {
  std::string name;
  std::vector<std::string> columns;
};

// The views docs/schema.md documents, in its order: the one list brine.sql_views reads.
[[nodiscard]] const std::vector<std::string>& DocumentedViews();
// The PRAGMAs a brine.sql statement may run on SQLite (reading forms only).
[[nodiscard]] const std::vector<std::string>& SqlReadOnlyPragmas();

class SqlEngine {
 public:
  virtual ~SqlEngine() = default;

  // Runs `text` with `params` (name without its `:` -> value; names the
  // text does not use are ignored), calling `each` with every statement's
  // result as it completes (an empty text or one of comments only gives
  // none). Throws:
  //   SqlError: the database's refusal (a write, a syntax error, a missing
  //     parameter named as ":name", several statements under kOne), with its
  //     position; the statements before it were run and handed to `each`;
  //   SqlTimeoutError: the budget ran out;
  //   SqlCancelledError: `cancel` was set;
  //   StoreError: the database cannot be opened or the connection failed.
  // `cancel`, when given, must outlive the call. Thread-safe (see above).
  virtual void Run(std::string_view text, const ValueMap& params, const SqlOptions& options,
                   const std::function<void(SqlResult&&)>& each, const SqlCancel* cancel = nullptr) const = 0;

  // The documented views this database has, each with its columns in order.
  // Throws StoreError.
  [[nodiscard]] virtual std::vector<SqlView> Views() const = 0;
};

// An engine over `database`, the same string OpenStore takes (a SQLite file
// path or a postgresql:// URI); opened read-only on every call. Throws
// StoreError when a SQLite file does not exist.
[[nodiscard]] std::unique_ptr<SqlEngine> OpenSqlEngine(const std::string& database);

}  // namespace brine::store
