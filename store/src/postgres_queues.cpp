// The PostgreSQL implementation of brine::store::Queues. Tables:
// migrations/postgres/0001_initial.sql (queue, queue_item).
//
// Several masters pop one queue at once: a pop deletes the queue's oldest
// rows that no other open pop holds (FOR UPDATE SKIP LOCKED), so every item is
// popped exactly once, and concurrent pops take the next items instead of
// waiting for each other.
#include <algorithm>
#include <optional>

#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "postgres_connection.h"
#include "queue_rules.h"

namespace brine::store {
namespace {

using detail::CheckName;
using detail::ItemTexts;
using detail::Op;
using detail::PgConnection;
using detail::PgParam;
using detail::PgResult;
using detail::RethrowPgAsStoreError;

class PostgresQueues final : public detail::TransactionalQueues {
 public:
  using Queues::Items;

  PostgresQueues(const std::string& uri, const OpenOptions& options) {
    read_only_ = options.access == OpenOptions::Access::kReadOnly;
    try {
      db_ = std::make_unique<PgConnection>(uri);
      if (read_only_) {
        // As OpenStore read-only: no migration, every transaction read-only.
        db_->Exec("SET default_transaction_read_only = on");
        return;
      }
      // statement_timeout as the store's writer sets it (postgres_backend.cpp):
      // a role or database default (even 1 ms) must not cancel a pop or the
      // migrations; lock_timeout is the one bound on waiting.
      db_->Exec("SET statement_timeout = 0; SET lock_timeout = " + std::to_string(options.busy_timeout.count()));
      detail::ApplyPostgresMigrations(*db_);
    } catch (...) {
      RethrowPgAsStoreError("opening the queues", Op::kWrite);
    }
  }

  ~PostgresQueues() override { CloseOpenPop(); }

  InsertOutcome Insert(const std::string& queue, std::span<const Value> items) override {
    CheckName(queue);
    const std::vector<std::string> texts = ItemTexts(items);
    InsertOutcome outcome;
    Write("queue insert", [&] {
      const std::string id = std::to_string(EnsureQueue(queue));
      // A duplicate undoes the items but keeps the name (Salt records a queue
      // whatever the insert did, G9).
      db_->Exec("SAVEPOINT queue_insert");
      for (std::size_t i = 0; i < texts.size(); ++i) {
        PgResult r = db_->Exec("INSERT INTO queue_item (queue_id, item) VALUES (" + id +
                                   ", $1) ON CONFLICT DO NOTHING RETURNING id",
                               {PgParam{texts[i]}});
        if (r.rows() == 0) {
          outcome = {.kind = InsertOutcome::Kind::kDuplicate, .duplicate_index = i};
          break;
        }
      }
      if (outcome.kind == InsertOutcome::Kind::kDuplicate) db_->Exec("ROLLBACK TO SAVEPOINT queue_insert");
      db_->Exec("RELEASE SAVEPOINT queue_insert");
    });
    return outcome;
  }

  std::int64_t Delete(const std::string& queue, std::span<const Value> items) override {
    CheckName(queue);
    const std::vector<std::string> texts = ItemTexts(items);
    std::int64_t removed = 0;
    Write("queue delete", [&] {
      const std::string id = std::to_string(EnsureQueue(queue));
      for (const std::string& text : texts) {
        removed += db_->Exec("DELETE FROM queue_item WHERE queue_id = " + id + " AND item = $1", {PgParam{text}})
                       .affected();
      }
    });
    return removed;
  }

  std::vector<std::string> ListQueues() override {
    CheckIdle("list queues");
    try {
      PgResult r = db_->Exec("SELECT name FROM queue ORDER BY name");
      std::vector<std::string> names;
      for (int i = 0; i < r.rows(); ++i) names.emplace_back(r.text(i, 0));
      return names;
    } catch (...) {
      RethrowPgAsStoreError("list queues", Op::kRead);
    }
  }

  std::int64_t Length(const std::string& queue) override {
    CheckName(queue);
    if (read_only_) {
      return ReadOnly("queue length", [&] {
        return db_->Exec("SELECT count(*) FROM queue_item WHERE queue_id = (SELECT id FROM queue WHERE name = $1)",
                         {PgParam{queue}})
            .integer(0, 0);
      });
    }
    std::int64_t n = 0;
    Write("queue length", [&] {
      n = db_->Exec("SELECT count(*) FROM queue_item WHERE queue_id = " + std::to_string(EnsureQueue(queue)))
              .integer(0, 0);
    });
    return n;
  }

  std::vector<Value> Items(const std::string& queue, std::int64_t limit) override {
    CheckName(queue);
    detail::CheckLimit(limit);
    // LIMIT NULL is no limit.
    const std::string n = limit < 0 ? "NULL" : std::to_string(limit);
    std::vector<Value> items;
    auto read = [&](const std::string& queue_id) {
      PgResult r = db_->Exec("SELECT item FROM queue_item WHERE queue_id = " + queue_id + " ORDER BY id LIMIT " + n);
      for (int i = 0; i < r.rows(); ++i) items.push_back(ParseJson(r.text(i, 0)));
    };
    if (read_only_) {
      ReadOnly("queue items", [&] {
        PgResult id = db_->Exec("SELECT id FROM queue WHERE name = $1", {PgParam{queue}});
        if (id.rows() > 0) read(std::to_string(id.integer(0, 0)));
        return 0;
      });
      return items;
    }
    Write("queue items", [&] { read(std::to_string(EnsureQueue(queue))); });
    return items;
  }

 protected:
  void BeginTxn() override { db_->Exec("BEGIN"); }
  void CommitTxn() override { db_->Exec("COMMIT"); }

  void RollbackTxn() noexcept override {
    try {
      if (db_->in_transaction()) db_->Exec("ROLLBACK");
    } catch (...) {
    }
  }

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowPgAsStoreError(context, op); }

  std::vector<Value> PopHead(const std::string& queue, std::int64_t quantity) override {
    std::vector<Value> items;
    const std::string id = std::to_string(EnsureQueue(queue));
    if (quantity == 0) return items;
    const std::string limit = quantity < 0 ? "" : " LIMIT " + std::to_string(quantity);
    PgResult r = db_->Exec("WITH head AS (SELECT id FROM queue_item WHERE queue_id = " + id + " ORDER BY id" + limit +
                           " FOR UPDATE SKIP LOCKED)"
                           " DELETE FROM queue_item AS q USING head WHERE q.id = head.id RETURNING q.id, q.item");
    std::vector<std::pair<std::int64_t, std::string_view>> rows;
    for (int i = 0; i < r.rows(); ++i) rows.emplace_back(r.integer(i, 0), r.text(i, 1));
    std::sort(rows.begin(), rows.end());
    for (const auto& [row_id, text] : rows) items.push_back(ParseJson(text));
    return items;
  }

 private:
  // The id of `queue`, recording the name when new (another master may
  // record it at the same moment: ON CONFLICT).
  std::int64_t EnsureQueue(const std::string& queue) {
    PgResult r = db_->Exec(
        "WITH i AS (INSERT INTO queue (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id)"
        " SELECT id FROM i UNION ALL SELECT id FROM queue WHERE name = $1",
        {PgParam{queue}});
    return r.integer(0, 0);
  }

  // A read of a read-only Queues, its failures translated.
  template <class F>
  auto ReadOnly(const char* what, F&& f) -> decltype(f()) {
    CheckIdle(what);
    try {
      return f();
    } catch (...) {
      RethrowPgAsStoreError(what, Op::kRead);
    }
  }

  std::unique_ptr<PgConnection> db_;
};

}  // namespace

std::unique_ptr<Queues> OpenPostgresQueues(const std::string& uri, const OpenOptions& options) {
  return std::make_unique<PostgresQueues>(uri, options);
}

}  // namespace brine::store
