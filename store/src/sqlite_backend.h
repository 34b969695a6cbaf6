// SqliteBackend: the SQLite Backend of the job cache (backend.h), private to
// store/src. One connection per Store, WAL, BEGIN IMMEDIATE batches,
// incremental vacuum (MaintenanceBackend); layout in migrations/*.sql and
// docs/schema.md. The class is declared here and defined by concern:
//   sqlite_backend.cpp    opening, transactions, maintenance
//   sqlite_writes.cpp     the job cache's write primitives and the event buffer
//   sqlite_reads.cpp      the reads (Salt's getters, listings, export)
//   sqlite_retention.cpp  retention and the size cap's pruning
//   sqlite_functions.cpp  the SQL functions the queries call (brine_jid_is_time)
// Every member belongs to the Store's thread. A write primitive runs inside
// the transaction Begin opened and throws SQLiteCpp's errors (JobCache hands
// them to Rethrow); a read translates its own (Read, Guard).
#pragma once

#include <sqlite3.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backend.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "connection.h"
#include "statement_cache.h"

namespace brine::store::detail {

// Gives archived return events their own copy of the payload (with their
// own _stamp) and tag, before the return they point at changes or goes; the
// caller adds the WHERE clause.
constexpr const char* kDetachEvents =
    "UPDATE event SET"
    " data = (SELECT CASE WHEN event.stamp IS NULL THEN r.full_ret"
    "   ELSE json_set(r.full_ret, '$._stamp', event.stamp) END"
    "   FROM ret AS r WHERE r.id = event.ret_id),"
    " tag = coalesce(tag, (SELECT 'salt/job/' || j.jid || '/ret/' || m.name"
    "   FROM ret AS r JOIN job AS j ON j.id = r.job_id"
    "   JOIN minion AS m ON m.id = r.minion_id WHERE r.id = event.ret_id)),"
    " ret_id = NULL, stamp = NULL";

// Binds a return's `success` (0/1) and `retcode` at `first` and first + 1,
// NULL where the return has none.
inline void BindOutcome(SQLite::Statement& q, int first, const ReturnRow& row) {
  if (row.success) {
    q.bind(first, *row.success ? 1 : 0);
  } else {
    q.bind(first);
  }
  if (row.retcode) {
    q.bind(first + 1, *row.retcode);
  } else {
    q.bind(first + 1);
  }
}

// Ids as a JSON array, for a statement that reads them with json_each.
inline std::string JsonIds(std::span<const std::int64_t> ids) {
  std::string out = "[";
  for (const std::int64_t id : ids) {
    if (out.size() > 1) out += ',';
    out += std::to_string(id);
  }
  return out + ']';
}

inline void BindOptionalText(SQLite::Statement& q, int index, const std::optional<std::string>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

inline void BindOptionalInt(SQLite::Statement& q, int index, const std::optional<std::int64_t>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

// The id of a row of `table` (event, quarantine) arriving at `received` after
// the row `last`: the arrival time, made strictly increasing. A store that
// already holds the largest id (INT64_MAX, which an import of a line with
// that time stored before brine.max_clock_skew_s existed) has no later one:
// StoreError, never a signed overflow. The writer then quarantines the event
// with this reason, which says how to free the id.
inline std::int64_t NextArrivalId(std::int64_t last, Micros received, const char* table) {
  if (last == std::numeric_limits<std::int64_t>::max()) {
    throw StoreError(std::string("no ") + table + " id is left after " + std::to_string(last) + ": the " + table +
                     " table holds a row at the largest time (year 294247), stored by an older brine; delete that row"
                     " (DELETE FROM " + table + " WHERE id = " + std::to_string(last) + ") with brine-master stopped");
  }
  return std::max(ToUnixMicros(received), last + 1);
}

// Registers brine_jid_is_time on `db` (sqlite_functions.cpp), for
// retention on our connections only.
void RegisterSqlFunctions(SQLite::Database& db);

class SqliteBackend final : public Backend, private MaintenanceBackend {
 public:
  // Minion name -> row id. A fleet that churns names (cloud instances) would
  // otherwise grow it for ever (+82 MB per 600k names); past the bound it
  // starts again, and a name not cached costs one indexed lookup.
  static constexpr std::size_t kMaxCachedMinions = 100000;
  // Archived events a statement inserts at once (FlushEvents).
  static constexpr std::size_t kEventsPerInsert = 32;

  SqliteBackend(const std::filesystem::path& path, const OpenOptions& options);
  ~SqliteBackend() override;

  // --- transactions ---------------------------------------------------------------

  void Begin() override;
  void Commit() override;
  void Rollback() noexcept override;

  void EndCall() noexcept override { ResetStatements(); }

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowAsStoreError(context, op); }

  bool Shared() const override { return false; }

  // --- job cache primitives -----------------------------------------------------------

  JobState GetOrCreateJob(const std::string& jid, Micros seen) override;
  void SetNocache(std::int64_t job) override;
  void PutLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members,
               LoadKind kind, const std::optional<std::string>& metadata_json) override;
  void PutStubLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members,
                   std::string_view minion) override;
  void DropStubMinions(std::int64_t job) override;
  void AddExpected(std::int64_t job, std::span<const std::string> minions) override;
  std::optional<ReturnId> InsertReturn(const ReturnRow& row) override;
  std::pair<ReturnId, std::string> StoredReturn(std::int64_t job, std::string_view minion) override;
  std::optional<std::pair<ReturnId, std::string>> FindReturn(const std::string& jid,
                                                             const std::string& minion) override;
  void ReplaceReturn(ReturnId id, const ReturnRow& row) override;
  void SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) override;
  std::optional<std::pair<std::int64_t, std::string>> ReturnOwner(ReturnId id) override;
  void AppendEvents(std::vector<EventRow>&& events) override;
  void Quarantine(std::string_view raw, const std::string& reason, Micros received) override;
  void SetEndtime(std::int64_t job, const std::string& endtime) override;
  void StartRetention() override;
  std::vector<std::string> JobFunctions() override;
  std::int64_t DeleteOldEvents(Micros before, std::int64_t budget,
                               const std::function<bool(std::string_view)>* is_member) override;
  std::int64_t DeleteOldQuarantine(Micros before, std::int64_t budget) override;
  std::int64_t DeleteOldBusGaps(Micros before, std::int64_t budget) override;
  void DeleteOldJobs(Micros before, const JobClass& job_class, std::int64_t& budget, CleanResult& result) override;
  CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) override;
  std::int64_t UsedBytes() override;
  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override;
  void OpenBusGap(std::string_view reason, std::int64_t start_us, std::optional<std::int64_t> last_frame_us) override;
  void CloseBusGap(std::int64_t end_us) override;
  void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) override;
  void ForgetSpoolProgress(const std::string& file_key) override;

  // --- maintenance (MaintenanceBackend) ------------------------------------------------

  MaintenanceBackend* Maintenance() override;
  StoreMaintenance::SpaceInfo Space() override;
  void IncrementalVacuum(std::int64_t pages) override;
  void Checkpoint() override;
  void RefreshStatistics() override;
  void BackupTo(const std::filesystem::path& to) override;
  std::string IntegrityCheck() override;

  // --- reads (sqlite_reads.cpp) ----------------------------------------------------

  Store::RowCounts CountRows() override;
  std::optional<Micros> OldestEvent() override;
  Value GetCounters() override;
  // master_status.sql's tables (sqlite_master_status.cpp / postgres_master_status.cpp).
  void PutMasterInfo(const MasterInfo& info) override;
  void AddHourlyCounts(std::span<const HourCounts> hours) override;
  void ForgetHoursBefore(std::int64_t before_us) override;
  std::vector<std::pair<std::string, MasterInfo>> GetMasterInfos() override;
  std::vector<BusGap> GetBusGaps(std::int64_t since_us) override;
  std::vector<HourCounts> GetHourlyCounts(std::int64_t from_us, std::int64_t until_us,
                                          const std::optional<std::string>& master) override;
  std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() override;
  Value GetLoad(const std::string& jid) override;
  void ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) override;
  void ForEachReturnText(const std::string& jid, const Store::ReturnTextFn& fn) override;
  JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query) override;
  void ForEachJobRow(const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row) override;
  void ForEachStoredJob(const std::optional<std::string>& jid_min,
                        const std::optional<std::string>& jid_max,
                        const std::function<void(StoredJob&&)>& fn) override;
  EventWindow EventsBefore(std::optional<std::int64_t> before_id, const std::string& tag_prefix,
                           std::size_t window) override;
  std::string TailStart() override;
  TailBatch TailEvents(const std::string& cursor, const std::string& tag_prefix,
                       const std::function<bool(std::string_view tag)>& match, std::size_t limit) override;
  void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                    const std::function<void(ArchivedEvent&&)>& fn) override;
  Value GetFun(const std::string& fun) override;
  std::vector<std::string> GetMinions() override;
  std::optional<std::string> GetEndtime(const std::string& jid) override;
  int SchemaVersion() override;

 private:
  static Value StringList(const std::vector<std::string>& items) {
    ValueList l;
    for (const auto& s : items) l.emplace_back(s);
    return Value(std::move(l));
  }

  SQLite::Statement& Stmt(const char* sql) { return statements_.Get(*db_, sql); }

  template <class F>
  auto Guard(const char* what, Op op, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (...) {
      RethrowAsStoreError(what, op);
    }
  }

  template <class F>
  auto Read(const char* what, F&& f) -> decltype(f()) {
    return Guard(what, Op::kRead, [&]() -> decltype(f()) {
      FlushEvents();  // a read inside a batch sees its events
      auto result = f();
      ResetStatements();
      return result;
    });
  }

  void ResetStatements() noexcept { statements_.ResetAll(); }

  void FlushEvents();
  void BindEvent(SQLite::Statement& q, int base, const std::pair<std::int64_t, EventRow>& event);
  std::int64_t PragmaInt(const std::string& pragma);
  void LoadHighWaterMarks();
  std::int64_t MinionId(std::string_view name_view);
  void AddExpectedOne(std::int64_t job_id, std::int64_t minion_id);
  std::vector<std::string> ExpectedMinions(std::int64_t job_id);

  // The minions' hourly rollups (minion_hour, migration 0016), kept in the
  // write transaction (sqlite_minion_hours.cpp says how and why so): a job
  // this connection made is known here, its pairs and returns counted in
  // memory and added at commit; any other goes through set-based statements.
  void JobCreated(std::int64_t job_id, const std::string& jid);
  void CountExpected(std::int64_t job_id, std::span<const std::int64_t> minion_ids);
  void CountReturn(ReturnId id, std::int64_t job_id, std::int64_t minion_id, const ReturnRow& row);
  void UncountJob(std::int64_t job_id, bool forget);
  void RecountReplaced(ReturnId id, const ReturnRow& row);
  void CountAtCommit();
  void ForgetKnownJobs() noexcept;
  void CountUnknownReturns();
  void FlushPendingHours();

  // Each return of a jid with its minion's name, in no particular order.
  static constexpr const char* kReturnsSql =
      "SELECT m.name, r.full_ret FROM job AS j JOIN ret AS r ON r.job_id = j.id"
      " JOIN minion AS m ON m.id = r.minion_id WHERE j.jid = ?";

  std::int64_t DeleteOlderRows(const std::string& table, std::int64_t cut, std::int64_t budget);
  void DeleteJob(std::int64_t id, std::int64_t& budget, CleanResult& result);
  std::optional<std::pair<std::int64_t, std::int64_t>> OldestJob();
  std::optional<std::int64_t> OldestId(const char* table);
  void DeleteOldestRows(const char* table, const char* payload, std::int64_t until, std::int64_t n,
                        std::int64_t& count, CleanResult& result);

  std::unique_ptr<SQLite::Database> db_;
  detail::StatementCache statements_;  // after db_: destroyed first
  std::int64_t master_row_ = 0;
  std::int64_t last_event_id_ = 0;
  std::vector<std::pair<std::int64_t, EventRow>> pending_events_;  // (id, row), FlushEvents
  std::int64_t last_quarantine_id_ = 0;
  // The rollups' state (sqlite_minion_hours.cpp).
  struct KnownJob {
    std::string hour;                                // substr(jid, 1, 10)
    std::unordered_set<std::int64_t> pairs;          // its expected minions
    std::unordered_map<std::int64_t, bool> returns;  // minion with a return -> it failed
  };
  struct HourDelta {
    std::int64_t targeted = 0;
    std::int64_t returned = 0;
    std::int64_t failed = 0;
  };
  std::unordered_map<std::int64_t, KnownJob> known_jobs_;  // kept across commits, bounded
  std::size_t known_entries_ = 0;
  std::int64_t data_version_ = -1;  // PRAGMA data_version when known_jobs_ was last trusted
  std::map<std::pair<std::int64_t, std::string>, HourDelta> pending_hours_;  // (minion, hour)
  std::vector<std::int64_t> unknown_returns_;  // ret ids of jobs not known here
  // Minion rows this connection wrote or read; dropped on rollback.
  // Looked up by string_view without making a string (a name is rarely
  // short enough for the small-string buffer).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::int64_t, NameHash, std::equal_to<>> minions_;
};

}  // namespace brine::store::detail
