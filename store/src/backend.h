// Backend: what a database must provide so that JobCache (job_cache.cpp) can
// be Salt's job cache on it. The semantics (first return wins, stub loads,
// minion merges, trimmed == whole, nocache, ...) live in JobCache only; a
// Backend knows statements, transactions and its own layout, nothing of Salt.
// (shared design: leveldb's DBImpl over its Table and Env.)
//
// Every write primitive runs inside the transaction JobCache opened with
// Begin. Row ids are the backend's. Minions are passed by name; how a
// backend keys them is its own business. A primitive may defer its work to
// Commit (one round trip per batch) when it returns nothing.
//
// Failures: a primitive throws whatever its driver throws; JobCache hands the
// exception to Rethrow, the one place where a backend's errors become
// brine::store errors (errors.h).
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/store.h"
#include "job_query.h"
#include "retention_plan.h"

namespace brine::store::detail {

// The hour of the minions' hourly rollups (minion_hour, migration 0016 /
// postgres 0011) that a jid counts in: its first ten characters,
// YYYYMMDDHH for a time jid (any other keeps its own ten, so a window of
// hours selects what the same window of jids does).
inline std::string RollupHour(std::string_view jid) { return std::string(jid.substr(0, 10)); }
inline std::string RollupHour(Micros t) { return RollupHour(FormatJid(t)); }

// The tail of a DELETE FROM minion_hour (the minions' hourly rollups,
// migration 0016 / postgres 0011): only the hours that hold no job any more,
// whose rows went to zero as their jobs were deleted. Both
// dialects; the hour's jobs are a range of job's jid index.
inline constexpr const char* kHourHasNoJob =
    " AND NOT EXISTS (SELECT 1 FROM job WHERE job.jid >= minion_hour.hour AND job.jid < minion_hour.hour || '~')";

// job.load_kind in both layouts.
enum class LoadKind : int {
  kNone = 0,          // jid seen, no load yet
  kStub = 1,          // built from a return whose publish was never seen
  kPublish = 2,       // a publish load as an event announced it
  kCachePublish = 3,  // the master's own publish load, from Salt's save_load
};

// A job.load_kind value as StoredJob shows it.
inline StoredJob::Origin OriginOf(int load_kind) {
  switch (static_cast<LoadKind>(load_kind)) {
    case LoadKind::kStub: return StoredJob::Origin::kStub;
    case LoadKind::kPublish: return StoredJob::Origin::kEvent;
    case LoadKind::kCachePublish: return StoredJob::Origin::kMaster;
    case LoadKind::kNone: break;
  }
  return StoredJob::Origin::kNone;
}

// The members of a publish load a backend may keep in columns beside its
// JSON text (PostgreSQL indexes them as columns the writer fills; SQLite
// derives them from the text).
struct LoadMembers {
  const std::string* fun = nullptr;  // load.fun, when a string
  const Value* user = nullptr;       // load.user, of any type; nullptr: absent
};

// What JobCache needs to know about a job row.
struct JobState {
  std::int64_t id = 0;
  LoadKind load_kind = LoadKind::kNone;
  bool nocache = false;
  bool has_metadata = false;
  bool stub_minions = false;  // the expected minions are the stub's guess
  // JobCache's own: a hash of the last minion list it added (0: none).
  std::uint64_t merged_minions = 0;
};

// A return to insert. `success` and `retcode` are the load's, when of that type.
struct ReturnRow {
  std::int64_t job_id = 0;
  std::string_view minion;
  Micros received{};
  std::optional<bool> success;
  std::optional<std::int64_t> retcode;
  const std::string* full_ret = nullptr;  // JSON of the whole load (the caller's)
  bool trimmed = false;  // the load holds Salt's VALUE_TRIMMED (a copy the master trimmed for its bus)
};

// An event to archive. Exactly one of `data` and `ret_id` is set; `tag` is
// unset only when it is the canonical salt/job/<jid>/ret/<minion> of `ret_id`.
struct EventRow {
  Micros received{};
  std::optional<std::int64_t> job_id;
  std::optional<std::string> tag;
  std::optional<std::string> data;  // JSON
  std::optional<ReturnId> ret_id;
  std::optional<std::string> stamp;  // the event's own _stamp where it differs from the return's
};

enum class Op { kRead, kWrite };

// StoreMaintenance's primitives on a database that lives in files here.
// IncrementalVacuum and RefreshStatistics run in a transaction of their own
// and throw their driver's errors (JobCache hands them to Backend::Rethrow);
// the others translate their own.
class MaintenanceBackend {
 public:
  virtual StoreMaintenance::SpaceInfo Space() = 0;
  virtual void IncrementalVacuum(std::int64_t pages) = 0;
  virtual void Checkpoint() = 0;
  virtual void RefreshStatistics() = 0;
  virtual void BackupTo(const std::filesystem::path& to) = 0;
  virtual std::string IntegrityCheck() = 0;

 protected:
  ~MaintenanceBackend() = default;  // the Backend that offers it owns it
};

// Its retention primitives are RetentionBackend's (retention_plan.h).
class Backend : public RetentionBackend {
 public:
  virtual ~Backend() = default;

  // --- transactions ----------------------------------------------------------
  // Opens the write transaction (taking the write lock up front where the
  // database has one).
  virtual void Begin() = 0;
  // Sends what was deferred, then commits.
  virtual void Commit() = 0;
  // Rolls back whatever is open (none is fine) and forgets every cached row.
  virtual void Rollback() noexcept = 0;
  // Called after each write call inside a transaction (e.g. to reset statements).
  virtual void EndCall() noexcept {}
  // Rethrows the exception being handled as a brine::store error with
  // `context` prefixed (StoreErrors pass unchanged). A lost connection and a
  // failed write or commit during Op::kWrite become WriteFailedError.
  [[noreturn]] virtual void Rethrow(std::string_view context, Op op) = 0;
  // True when other processes write the same job rows (several masters on
  // one server): JobCache then trusts no job state past a commit.
  [[nodiscard]] virtual bool Shared() const = 0;

  // --- job cache primitives ----------------------------------------------------
  // The row of `jid`, created (seen at `seen`) when missing.
  virtual JobState GetOrCreateJob(const std::string& jid, Micros seen) = 0;
  virtual void SetNocache(std::int64_t job) = 0;
  // Sets the load (its `members`, `kind`) unless the job holds a
  // kCachePublish load and `kind` is not kCachePublish; sets the metadata
  // where it is NULL.
  virtual void PutLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members, LoadKind kind,
                       const std::optional<std::string>& metadata_json) = 0;
  // Sets a stub load (kStub, stub minions) unless the job has a load, and
  // adds `minion` to the expected minions.
  virtual void PutStubLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members,
                           std::string_view minion) = 0;
  // Drops the expected minions and clears the stub-minions mark.
  virtual void DropStubMinions(std::int64_t job) = 0;
  // Adds each minion to the expected set (already there is fine).
  virtual void AddExpected(std::int64_t job, std::span<const std::string> minions) = 0;
  // Inserts the return unless (job, minion) has one; its id, or nullopt.
  virtual std::optional<ReturnId> InsertReturn(const ReturnRow& row) = 0;
  // The id and JSON of the stored return of (job, minion), which must exist.
  virtual std::pair<ReturnId, std::string> StoredReturn(std::int64_t job, std::string_view minion) = 0;
  // The id and JSON of the stored return of `jid`'s `minion`; nullopt when
  // there is none. Writes nothing (no job or minion row is created), so it
  // may run inside a batch or outside one.
  virtual std::optional<std::pair<ReturnId, std::string>> FindReturn(const std::string& jid,
                                                                     const std::string& minion) = 0;
  // Replaces a return's payload; archived events that shared it first get
  // their own copy of the old one.
  virtual void ReplaceReturn(ReturnId id, const ReturnRow& row) = 0;
  virtual void SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) = 0;
  // (job, minion) of a stored return; nullopt when there is none.
  virtual std::optional<std::pair<std::int64_t, std::string>> ReturnOwner(ReturnId id) = 0;
  // Archives events in order. Both backends keep the rows until their
  // statement goes, so they take them over instead of copying each payload.
  virtual void AppendEvents(std::vector<EventRow>&& events) = 0;
  virtual void Quarantine(std::string_view raw, const std::string& reason, Micros received) = 0;
  virtual void SetEndtime(std::int64_t job, const std::string& endtime) = 0;
  // Store::PruneOldest.
  virtual CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) = 0;
  // Replaces this master's counters (OpenOptions::master_id).
  virtual void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) = 0;
  // Store::PutMasterInfo, AddHourlyCounts, ForgetHoursBefore (master_status.cpp;
  // ForgetHoursBefore also forgets the minions' rollups of hours with no job left).
  virtual void PutMasterInfo(const MasterInfo& info) = 0;
  virtual void AddHourlyCounts(std::span<const HourCounts> hours) = 0;
  virtual void ForgetHoursBefore(std::int64_t before_us) = 0;
  // Store::OpenBusGap, CloseBusGap (this master's rows; reason as GapReasonText).
  virtual void OpenBusGap(std::string_view reason, std::int64_t start_us, std::optional<std::int64_t> last_frame_us) = 0;
  virtual void CloseBusGap(std::int64_t end_us) = 0;
  // Store::PutSpoolProgress and ForgetSpoolProgress (this master's rows).
  virtual void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) = 0;
  virtual void ForgetSpoolProgress(const std::string& file_key) = 0;

  // --- maintenance outside transactions -----------------------------------------
  // This backend's StoreMaintenance primitives (store.h), or nullptr when the
  // database has none here (a server). JobCache adds the batch and
  // refuse-after-a-failed-commit checks and translates the errors.
  virtual MaintenanceBackend* Maintenance() { return nullptr; }

  // --- reads: each translates its own errors ---------------------------------
  // Store::CountRows (store.h).
  virtual Store::RowCounts CountRows() = 0;
  virtual std::int64_t UsedBytes() = 0;
  virtual std::optional<Micros> OldestEvent() = 0;
  virtual Value GetCounters() = 0;
  virtual std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() = 0;
  // Store::GetBusGaps.
  virtual std::vector<BusGap> GetBusGaps(std::int64_t since_us) = 0;
  // Every master's MasterInfo, by master name (master_status.cpp).
  virtual std::vector<std::pair<std::string, MasterInfo>> GetMasterInfos() = 0;
  // The rollups of the hours in [from_us, until_us), hour order, only hours
  // with a row, of `master` or summed over every master.
  virtual std::vector<HourCounts> GetHourlyCounts(std::int64_t from_us, std::int64_t until_us,
                                                  const std::optional<std::string>& master) = 0;
  virtual Value GetLoad(const std::string& jid) = 0;
  virtual void ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) = 0;
  // fn(minion, full return JSON) for each return of `jid`, in no particular
  // order, under the read's guard (an exception from `fn` is translated as
  // the backend's own); JobCache shapes GetJid and GetJidFull from it.
  virtual void ForEachReturnText(const std::string& jid, const Store::ReturnTextFn& fn) = 0;
  // Store::ListJobMinions: job_minions.h's ListJobMinions in this backend's
  // dialect, its SELECTs run under the read guard.
  virtual JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query) = 0;
  // The job rows `pushdown` selects, for JobQuery (job_query.h), which
  // decides the filter; `row` returns false to stop.
  virtual void ForEachJobRow(const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row) = 0;
  virtual void ForEachStoredJob(const std::optional<std::string>& jid_min, const std::optional<std::string>& jid_max,
                                const std::function<void(StoredJob&&)>& fn) = 0;
  virtual void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                            const std::function<void(ArchivedEvent&&)>& fn) = 0;
  // The `window` newest events with id < before_id (nullopt: no bound):
  // those whose tag starts with `tag_prefix`, newest first, and the lowest id
  // of the window (nullopt when it was empty: the archive ends). One bounded
  // read however little matches; JobCache::ListEvents does the rest of the
  // glob and the budget.
  struct EventWindow {
    std::vector<ListedEvent> events;
    std::optional<std::int64_t> lowest;
  };
  virtual EventWindow EventsBefore(std::optional<std::int64_t> before_id, const std::string& tag_prefix,
                                   std::size_t window) = 0;
  // Store::TailStart and Store::TailEvents; the backend's cursor rules.
  // `match` is the glob's test of a tag that starts with `tag_prefix`.
  virtual std::string TailStart() = 0;
  virtual TailBatch TailEvents(const std::string& cursor, const std::string& tag_prefix,
                               const std::function<bool(std::string_view tag)>& match, std::size_t limit) = 0;
  virtual Value GetFun(const std::string& fun) = 0;
  virtual std::vector<std::string> GetMinions() = 0;
  virtual std::optional<std::string> GetEndtime(const std::string& jid) = 0;
  virtual int SchemaVersion() = 0;
};

// The SQLite backend of the store at `path` (sqlite_backend.cpp); throws as
// OpenStore documents.
std::unique_ptr<Backend> OpenSqliteBackend(const std::filesystem::path& path, const OpenOptions& options);

// The PostgreSQL backend of the database at libpq URI `uri`
// (postgres_backend.cpp); throws as OpenStore documents.
std::unique_ptr<Backend> OpenPostgresBackend(const std::string& uri, const OpenOptions& options);
// The highest PostgreSQL schema version this binary knows.
int LatestPostgresSchemaVersion();

// The metadata Salt's format_job_instance would show for a load: a dict under
// `metadata`, else under `kwargs.metadata`, else in a __kwarg__ dict of `arg`.
const Value* LoadMetadata(const Value& load);

// An archived event's data when it shares a return's payload `full_ret_json`
// but has its own `_stamp`: that payload with `_stamp` (kept in its place)
// set to `stamp`, as brine's JSON (the same text on every backend).
std::string WithStamp(const std::string& full_ret_json, const std::string& stamp);

// Hands `value` to a read's caller: `fn`'s exception is kept in `failure`
// (rethrown untranslated once the read is over) and later values are not
// handed out.
template <typename T>
void Deliver(const std::function<void(T&&)>& fn, T&& value, std::exception_ptr& failure) {
  if (failure) return;
  try {
    fn(std::move(value));
  } catch (...) {
    failure = std::current_exception();
  }
}

// The jid a job event belongs to, or "" for events that are not job events.
std::string JobEventJid(std::string_view tag, const Value& data);

}  // namespace brine::store::detail
