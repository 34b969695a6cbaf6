// The SQLite implementation of brine::store::Queues. Tables: migrations/0002_queue.sql.
//
// Salt's sqlite backend (spec 1.3) selects without a transaction and deletes
// with `WHERE name IN ("...")`, so two pops can return the same rows and an
// item named `name` empties the queue. Here every write is one BEGIN
// IMMEDIATE transaction that selects the head of the queue by id and deletes
// exactly those rows, and names and items are only ever bound parameters.
//
// A queue write waits for brine-master's write lock with a busy handler of
// its own (PollWriteLock below), not SQLite's default one.
#include <sqlite3.h>
#include <time.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "connection.h"
#include "queue_rules.h"
#include "statement_cache.h"

namespace brine::store {
namespace {

using detail::CheckName;
using detail::ItemTexts;
using detail::Op;
using detail::RethrowAsStoreError;

// How long a lock wait has lasted, for PollWriteLock.
struct LockWait {
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point since;
};

// The busy handler of a queue connection: tries again every millisecond
// until `timeout` (the OpenOptions' busy_timeout) has passed.
//
// SQLite's default handler sleeps 100 ms between tries once it has waited a
// third of a second. brine-master ingesting at full speed holds the write
// lock from one batch's BEGIN IMMEDIATE to its COMMIT and takes it again as
// soon as the next frame is there, so it is free only for the moments between
// batches. Tries 100 ms apart almost never fell into one: `brine-run
// queue.pop` failed with "database is locked" after the whole busy_timeout
// while the master ingested (issue 25, item 16). A try a millisecond gets
// the lock at the master's next pause of a millisecond or more.
int PollWriteLock(void* arg, int tries) noexcept {
  auto* wait = static_cast<LockWait*>(arg);
  const auto now = std::chrono::steady_clock::now();
  if (tries == 0) wait->since = now;
  if (now - wait->since >= wait->timeout) return 0;  // SQLITE_BUSY to the caller
  timespec one_ms{.tv_sec = 0, .tv_nsec = 1'000'000};
  nanosleep(&one_ms, nullptr);  // not sqlite3_sleep: without usleep, SQLite rounds that up to a second
  return 1;
}

class SqliteQueues final : public detail::TransactionalQueues {
 public:
  using Queues::Items;

  SqliteQueues(const std::filesystem::path& path, const OpenOptions& options) {
    read_only_ = options.access == OpenOptions::Access::kReadOnly;
    db_ = detail::OpenConnection(path, options);
    lock_wait_.timeout = options.busy_timeout;
    sqlite3_busy_handler(db_->getHandle(), &PollWriteLock, &lock_wait_);
  }

  ~SqliteQueues() override { CloseOpenPop(); }

  InsertOutcome Insert(const std::string& queue, std::span<const Value> items) override {
    CheckName(queue);
    CheckWritable("insert");
    const std::vector<std::string> texts = ItemTexts(items);
    InsertOutcome outcome;
    Write("queue insert", [&] {
      const std::int64_t queue_id = EnsureQueue(queue);
      // A duplicate undoes the items but keeps the name: Salt records a queue
      // whatever the insert did (G9).
      db_->exec("SAVEPOINT queue_insert");
      auto& ins = Stmt("INSERT INTO queue_item (queue_id, item) VALUES (?, ?) ON CONFLICT DO NOTHING");
      for (std::size_t i = 0; i < texts.size(); ++i) {
        ins.reset();
        ins.clearBindings();
        ins.bind(1, queue_id);
        ins.bind(2, texts[i]);
        if (ins.exec() == 0) {
          outcome = {.kind = InsertOutcome::Kind::kDuplicate, .duplicate_index = i};
          break;
        }
      }
      ins.reset();
      if (outcome.kind == InsertOutcome::Kind::kDuplicate) db_->exec("ROLLBACK TO queue_insert");
      db_->exec("RELEASE queue_insert");
    });
    return outcome;
  }

  std::int64_t Delete(const std::string& queue, std::span<const Value> items) override {
    CheckName(queue);
    CheckWritable("delete");
    const std::vector<std::string> texts = ItemTexts(items);
    std::int64_t removed = 0;
    Write("queue delete", [&] {
      const std::int64_t queue_id = EnsureQueue(queue);
      auto& del = Stmt("DELETE FROM queue_item WHERE queue_id = ? AND item = ?");
      for (const std::string& text : texts) {
        del.reset();
        del.clearBindings();
        del.bind(1, queue_id);
        del.bind(2, text);
        removed += del.exec();
      }
      del.reset();
    });
    return removed;
  }

  std::vector<std::string> ListQueues() override {
    return Read("list queues", [&] {
      std::vector<std::string> names;
      auto& q = Stmt("SELECT name FROM queue ORDER BY name");
      while (q.executeStep()) names.push_back(q.getColumn(0).getString());
      return names;
    });
  }

  std::int64_t Length(const std::string& queue) override {
    CheckName(queue);
    auto count = [&](std::int64_t queue_id) {
      auto& q = Stmt("SELECT count(*) FROM queue_item WHERE queue_id = ?");
      q.bind(1, queue_id);
      q.executeStep();
      return q.getColumn(0).getInt64();
    };
    if (const auto id = Read("queue length", [&] { return FindQueue(queue); })) {
      return Read("queue length", [&] { return count(*id); });
    }
    if (read_only_) return 0;
    std::int64_t n = 0;
    Write("queue length", [&] { n = count(EnsureQueue(queue)); });
    return n;
  }

  std::vector<Value> Items(const std::string& queue, std::int64_t limit) override {
    CheckName(queue);
    detail::CheckLimit(limit);
    if (const auto id = Read("queue items", [&] { return FindQueue(queue); })) {
      return Read("queue items", [&] { return SelectItems(*id, limit).items; });
    }
    if (read_only_) return {};
    std::vector<Value> items;
    Write("queue items", [&] { items = SelectItems(EnsureQueue(queue), limit).items; });
    return items;
  }

 protected:
  void BeginTxn() override { db_->exec("BEGIN IMMEDIATE"); }

  void CommitTxn() override {
    ResetStatements();
    db_->exec("COMMIT");
  }

  // Rolls back whatever transaction is open (SQLite may already have done so).
  void RollbackTxn() noexcept override {
    ResetStatements();
    try {
      if (sqlite3_get_autocommit(db_->getHandle()) == 0) db_->exec("ROLLBACK");
    } catch (...) {
    }
  }

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowAsStoreError(context, op); }

  std::vector<Value> PopHead(const std::string& queue, std::int64_t quantity) override {
    Selected selected;
    const std::int64_t queue_id = EnsureQueue(queue);
    if (quantity != 0) selected = SelectItems(queue_id, quantity);
    if (!selected.items.empty()) {
      // The selected rows are the queue's oldest, and the write lock keeps
      // anyone from adding older ones, so "id <= last" is exactly them.
      auto& del = Stmt("DELETE FROM queue_item WHERE queue_id = ? AND id <= ?");
      del.bind(1, queue_id);
      del.bind(2, selected.last_id);
      const int removed = del.exec();
      del.reset();
      if (removed != static_cast<int>(selected.items.size())) {
        throw StoreError("pop removed " + std::to_string(removed) + " rows for " +
                         std::to_string(selected.items.size()) + " items");
      }
    }
    ResetStatements();
    return std::move(selected.items);
  }

 private:
  struct Selected {
    std::vector<Value> items;
    std::int64_t last_id = 0;
  };

  SQLite::Statement& Stmt(const char* sql) { return statements_.Get(*db_, sql); }

  void ResetStatements() noexcept { statements_.ResetAll(); }

  template <class F>
  auto Read(const char* what, F&& f) -> decltype(f()) {
    CheckIdle(what);
    try {
      auto result = f();
      ResetStatements();
      return result;
    } catch (...) {
      ResetStatements();
      RethrowAsStoreError(what, Op::kRead);
    }
  }

  std::optional<std::int64_t> FindQueue(const std::string& queue) {
    auto& q = Stmt("SELECT id FROM queue WHERE name = ?");
    q.bind(1, queue);
    std::optional<std::int64_t> id;
    if (q.executeStep()) id = q.getColumn(0).getInt64();
    // A statement left stepping keeps its read snapshot past COMMIT, and the
    // next BEGIN IMMEDIATE on an old snapshot fails at once with SQLITE_BUSY.
    q.reset();
    return id;
  }

  // The id of `queue`, recording the name when new. Inside a write transaction.
  std::int64_t EnsureQueue(const std::string& queue) {
    if (const auto id = FindQueue(queue)) return *id;
    auto& ins = Stmt("INSERT INTO queue (name) VALUES (?)");
    ins.bind(1, queue);
    ins.exec();
    return db_->getLastInsertRowid();
  }

  // Up to `quantity` items from the head (negative: all), with the last id.
  Selected SelectItems(std::int64_t queue_id, std::int64_t quantity) {
    Selected out;
    auto& q = Stmt("SELECT id, item FROM queue_item WHERE queue_id = ? ORDER BY id LIMIT ?");
    q.bind(1, queue_id);
    q.bind(2, quantity < 0 ? std::int64_t{-1} : quantity);
    while (q.executeStep()) {
      out.last_id = q.getColumn(0).getInt64();
      const char* text = q.getColumn(1).getText();
      const auto len = static_cast<std::size_t>(q.getColumn(1).getBytes());
      out.items.push_back(ParseJson(std::string_view(text, len)));
    }
    q.reset();
    return out;
  }

  LockWait lock_wait_;  // before db_: the busy handler's state outlives the connection
  std::unique_ptr<SQLite::Database> db_;
  detail::StatementCache statements_;  // after db_: destroyed first
};

}  // namespace

std::unique_ptr<Queues> OpenQueues(const std::filesystem::path& path, const OpenOptions& options) {
  if (IsServerDatabase(path)) return OpenPostgresQueues(path.native(), options);
  return std::make_unique<SqliteQueues>(path, options);
}

}  // namespace brine::store
