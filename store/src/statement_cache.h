// Prepared statements kept for the life of one connection.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

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
    used_.push_back(slot.get());
    if (used_.size() > 2 * statements_.size() + 16) {
      // A caller that never resets (reads only) keeps the list this short.
      std::sort(used_.begin(), used_.end());
      used_.erase(std::unique(used_.begin(), used_.end()), used_.end());
    }
    return *slot;
  }

  // Resets every statement, so none keeps a read snapshot or a lock open.
  // Only those handed out since the last call can have stepped: the writer
  // calls this after every write call, and walking all of them (some forty)
  // each time was 2.5 % of brine-master's instructions.
  void ResetAll() noexcept {
    for (SQLite::Statement* stmt : used_) {
      try {
        stmt->reset();
      } catch (...) {
      }
    }
    used_.clear();
  }

 private:
  std::unordered_map<const char*, std::unique_ptr<SQLite::Statement>> statements_;
  std::vector<SQLite::Statement*> used_;  // handed out since the last ResetAll
};

}  // namespace brine::store::detail
