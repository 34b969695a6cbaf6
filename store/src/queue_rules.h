// The rules every Queues backend applies before touching its database.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"
#include "backend.h"
#include "brine/store/errors.h"
#include "brine/store/queues.h"

namespace brine::store::detail {

// Throws std::invalid_argument unless IsValidQueueName(queue).
void CheckName(const std::string& queue);

// Throws std::invalid_argument for a limit below kAllItems (-1).
void CheckLimit(std::int64_t limit);

// The storage JSON of each item. Throws std::invalid_argument for an item
// nested deeper than kMaxJsonDepth (ParseJson could not read it back).
std::vector<std::string> ItemTexts(std::span<const Value> items);

// What both queue backends do around their statements: every call one
// transaction of its own, a pop that may be held open, and no more writes
// after a failed commit. A backend supplies the transaction verbs, its error
// translation and the statements of a pop.
class TransactionalQueues : public Queues {
 protected:
  // Starts the write transaction (taking the write lock where the database has one).
  virtual void BeginTxn() = 0;
  virtual void CommitTxn() = 0;
  // Rolls back whatever is open (the database may already have done so).
  virtual void RollbackTxn() noexcept = 0;
  // Rethrows the exception being handled as a store error (errors.h).
  [[noreturn]] virtual void Rethrow(std::string_view context, Op op) = 0;
  // Inside the open transaction: records `queue` and removes and returns up
  // to `quantity` of its oldest items (0: none; negative: all), oldest first.
  virtual std::vector<Value> PopHead(const std::string& queue, std::int64_t quantity) = 0;

  void CheckWritable(const char* what) const {
    if (read_only_) throw StoreError(std::string("cannot ") + what + ": the queues were opened read-only");
    if (failed_) throw StoreError(std::string("cannot ") + what + ": an earlier commit failed; reopen the queues");
  }

  void CheckIdle(const char* what) const {
    if (pop_open_) throw StoreError(std::string("cannot ") + what + ": a pop is open on this connection");
  }

  // Runs `f` in a transaction of its own and commits. Any failure rolls
  // back; a failed COMMIT also leaves the Queues refusing writes.
  template <class F>
  void Write(const char* what, F&& f) {
    CheckIdle(what);
    CheckWritable(what);
    try {
      BeginTxn();
      f();
    } catch (...) {
      RollbackTxn();
      Rethrow(what, Op::kWrite);
    }
    try {
      CommitTxn();
    } catch (...) {
      RollbackTxn();
      failed_ = true;
      Rethrow(what, Op::kWrite);
    }
  }

  std::vector<Value> BeginPopImpl(const std::string& queue, std::int64_t quantity) override {
    CheckName(queue);
    CheckWritable("pop");
    if (pop_open_) throw StoreError("cannot pop: a pop is already open on this connection");
    std::vector<Value> items;
    try {
      BeginTxn();
      items = PopHead(queue, quantity);
    } catch (...) {
      RollbackTxn();
      Rethrow("queue pop", Op::kWrite);
    }
    pop_open_ = true;
    return items;
  }

  void CommitPopImpl() override {
    if (!pop_open_) return;
    pop_open_ = false;
    try {
      CommitTxn();
    } catch (...) {
      RollbackTxn();
      failed_ = true;
      Rethrow("queue pop commit", Op::kWrite);
    }
  }

  void RollbackPopImpl() noexcept override {
    if (!pop_open_) return;
    pop_open_ = false;
    RollbackTxn();
  }

  // Set by a backend opened read-only (OpenQueues): every write is refused.
  bool read_only_ = false;

  // For a destructor: rolls back a pop still open (RollbackTxn is virtual,
  // so the derived class must call this while it still exists).
  void CloseOpenPop() noexcept {
    if (pop_open_) RollbackPopImpl();
  }

 private:
  bool pop_open_ = false;
  bool failed_ = false;
};

}  // namespace brine::store::detail

namespace brine::store {

// The queues of the PostgreSQL database at libpq URI `uri` (postgres_queues.cpp);
// throws as OpenQueues documents.
std::unique_ptr<Queues> OpenPostgresQueues(const std::string& uri, const OpenOptions& options);

}  // namespace brine::store
