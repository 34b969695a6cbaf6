// Prepared statements kept for the life of one connection.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <memory>
#include <unordered_map>

namespace brine::store::detail {

// Keyed by the address of the SQL literal, so each call site prepares once.
// Must be destroyed before its Database (declare it after the Database).
class StatementCache {
 public:
  // The statement for `sql` (a string literal), reset and with no bindings.
  SQLite::Statement& Get(SQLite::Database& db, const char* sql) {
    auto& slot = statements_[sql];
    if (!slot) {
      slot = std::make_unique<SQLite::Statement>(db, sql);
    } else {
      slot->reset();
      slot->clearBindings();
    }
    return *slot;
  }

  // Resets every statement, so none keeps a read snapshot or a lock open.
  void ResetAll() noexcept {
    for (auto& [sql, stmt] : statements_) {
      try {
        stmt->reset();
      } catch (...) {
      }
    }
  }

 private:
  std::unordered_map<const char*, std::unique_ptr<SQLite::Statement>> statements_;
};

}  // namespace brine::store::detail
