// brine::store queues: the FIFO queues behind brine-run's queue runner
// (Salt's salt.queues backends; spec salt-queue-and-tests.md section 1).
//
// A queue is a name and the items inserted under it, oldest first. Items are
// brine::Value and keep their type (a map stays a map, 5 stays 5). Two items
// are the same when their JSON texts in brine's storage form are equal (so map
// key order counts, as it does for Salt's json.dumps); a queue holds an item at
// most once, Salt's UNIQUE rule.
//
// Every queue named by any call except ListQueues is recorded (even by Length
// or Items on a queue that never held anything, or an Insert that found a
// duplicate), so ListQueues lists every queue any call has named, as Salt's
// backend lists the files its calls created. A pop that is rolled back
// records nothing.
//
// Atomicity: each call is one BEGIN IMMEDIATE transaction (reads of a known
// queue are a single statement), so many processes may insert and pop one
// queue at once and every item is popped exactly once. A pop can also be held
// open (BeginPop) until the caller has handed the items on, then committed or
// rolled back; while it is open the database's write lock is held.
//
// Threading: a Queues is one database connection and belongs to one thread.
// No SQLite type appears here; OpenQueues gives the SQLite or the PostgreSQL
// implementation. On PostgreSQL a pop takes the head rows no other open pop
// holds (FOR UPDATE SKIP LOCKED) and does not block other callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/errors.h"
#include "brine/store/store.h"

namespace brine::store {

// Longest queue name in bytes.
inline constexpr std::size_t kMaxQueueNameBytes = 255;

// True when `name` can name a queue: 1-255 bytes of valid UTF-8 with no '/',
// no NUL and no control character (C0, DEL, C1). The name becomes part of the
// event tag salt/queue/<name>/process, hence the rule.
[[nodiscard]] bool IsValidQueueName(std::string_view name);

// What Insert did.
struct InsertOutcome {
  enum class Kind {
    kInserted,   // every item was queued
    kDuplicate,  // nothing was queued: one item was already in the queue
  };
  Kind kind = Kind::kInserted;
  // For kDuplicate: the index in `items` of the first item that was already
  // queued or repeats an earlier item of the same call. 0 otherwise.
  std::size_t duplicate_index = 0;
};

// A quantity for Pop and BeginPop meaning every item.
inline constexpr std::int64_t kAllItems = -1;

class Queues;

// Items popped in an open write transaction. Commit removes them for good;
// destroying an uncommitted PopBatch rolls back and leaves them queued, in
// their place. Move-only; the Queues must outlive it.
class PopBatch {
 public:
  PopBatch(PopBatch&& other) noexcept;
  PopBatch& operator=(PopBatch&&) = delete;
  PopBatch(const PopBatch&) = delete;
  ~PopBatch();

  // The popped items, oldest first (empty when the queue was).
  [[nodiscard]] const std::vector<Value>& items() const { return items_; }

  // Commits. Throws WriteFailedError (rolled back: the items stay queued, and
  // the Queues refuses writes until reopened) or BusyError. After Commit,
  // whether it threw or not, the batch is closed and its destructor does nothing.
  void Commit();

 private:
  friend class Queues;
  PopBatch(Queues* owner, std::vector<Value> items) : owner_(owner), items_(std::move(items)) {}
  Queues* owner_;  // the Queues outlives its batches
  std::vector<Value> items_;
};

class Queues {
 public:
  virtual ~Queues() = default;

  // Queues `items` at the tail of `queue`, in order, all or none: when any
  // item is already queued (or appears twice in `items`), nothing is queued and
  // the outcome says which. An empty `items` queues nothing and is kInserted.
  // Throws std::invalid_argument for an invalid queue name or an item nested
  // deeper than brine::kMaxJsonDepth; StoreError (BusyError, WriteFailedError)
  // when the write fails.
  [[nodiscard]] virtual InsertOutcome Insert(const std::string& queue, std::span<const Value> items) = 0;

  // Removes each of `items` from `queue` where queued; items not queued are
  // ignored. Returns how many were removed. Throws as Insert does.
  virtual std::int64_t Delete(const std::string& queue, std::span<const Value> items) = 0;

  // Every queue name ever named, sorted by byte value. Throws StoreError.
  [[nodiscard]] virtual std::vector<std::string> ListQueues() = 0;

  // The number of items in `queue` (0 for a new queue, which is recorded).
  // Throws std::invalid_argument for an invalid name, StoreError on failure.
  [[nodiscard]] virtual std::int64_t Length(const std::string& queue) = 0;

  // Up to `limit` items of `queue` from its head, oldest first (kAllItems:
  // every one; [] for a new queue, which is recorded except on a read-only
  // Queues). Throws as Length does, std::invalid_argument for a limit below -1.
  [[nodiscard]] virtual std::vector<Value> Items(const std::string& queue, std::int64_t limit) = 0;
  // Every item in `queue`, oldest first: Items(queue, kAllItems).
  [[nodiscard]] std::vector<Value> Items(const std::string& queue) { return Items(queue, kAllItems); }

  // Removes and returns up to `quantity` items from the head of `queue`,
  // oldest first: 0 pops nothing, a negative quantity (kAllItems) pops all.
  // Equivalent to BeginPop(...) followed by Commit. Throws as BeginPop and
  // PopBatch::Commit do.
  [[nodiscard]] std::vector<Value> Pop(const std::string& queue, std::int64_t quantity);

  // Pops as Pop does but keeps the write transaction open until the returned
  // batch is committed or destroyed; every other call on this Queues throws
  // StoreError meanwhile, and other connections wait for the write lock (up to
  // their busy timeout). Throws std::invalid_argument for an invalid name;
  // StoreError when a batch is already open or the Queues refuses writes,
  // BusyError when the lock stayed taken past the busy timeout.
  [[nodiscard]] PopBatch BeginPop(const std::string& queue, std::int64_t quantity);

 protected:
  // BeginPop's work: starts the transaction, selects and deletes the items.
  virtual std::vector<Value> BeginPopImpl(const std::string& queue, std::int64_t quantity) = 0;
  virtual void CommitPopImpl() = 0;
  virtual void RollbackPopImpl() noexcept = 0;

 private:
  friend class PopBatch;
};

// Opens (creating when missing) the brine store at `path` (a SQLite file, or
// a postgresql:// URI as OpenStore takes it) for the queue tables, bringing its schema up to date as OpenStore does.
// With `options.access` kReadOnly (brine-web's /queues) the store is opened
// as OpenStore opens it read-only (SQLite `mode=ro`, a PostgreSQL session in
// read-only transactions; never created or migrated): ListQueues, Length and
// Items answer, naming an unknown queue records nothing (0 and []), and
// Insert, Delete, Pop and BeginPop throw StoreError. Throws StoreError for
// a path that cannot be opened (read-only: a missing file), TooNewError for a store
// made by a newer brine, FatalError for a file that is not a brine store.
[[nodiscard]] std::unique_ptr<Queues> OpenQueues(const std::filesystem::path& path,
                                                 const OpenOptions& options = {});

}  // namespace brine::store
