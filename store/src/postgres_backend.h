// PostgresBackend: the PostgreSQL Backend of the job cache (backend.h) on
// libpq, private to store/src. Layout: migrations/postgres/*.sql and
// docs/schema.md. Several brine-masters may write one database: job, minion
// and return rows are created with ON CONFLICT, so the first return wins
// across masters too, and events are numbered by the database.
// The class is declared here and defined by concern:
//   postgres_backend.cpp     opening (session, migrations), transactions
//   postgres_writes.cpp      the job cache's write primitives
//   postgres_pipeline.cpp    what waits for a round trip and how it is sent
//                            (its batching invariants head that file)
//   postgres_partitions.cpp  the day partitions
//   postgres_retention.cpp   retention, partition drops and the size cap
//   postgres_reads.cpp       the reads
//   postgres_arrays.h        array parameters (multi-row writes)
// Every member belongs to the Store's thread. A write primitive throws
// PgError (JobCache hands it to Rethrow); a read translates its own (Guard).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backend.h"
#include "brine/core/json.h"
#include "brine/core/utf8.h"
#include "brine/store/store.h"
#include "postgres_connection.h"

namespace brine::store::detail {

// Any 64-bit key: the advisory lock that serialises migrations across masters.
constexpr std::int64_t kMigrationLock = 0x6272696e65L;  // "brine"
// Taken by the master whose retention drops whole days of jobs.
constexpr std::int64_t kRetentionLock = 0x6272696e6572L;  // "briner"
// Rows per write from arrays (one parameter a column, so any number fits a
// statement; the bound keeps what waits in memory, and one statement's work,
// in check): returns, events and expected minions a statement each, loads
// one UPDATE.
constexpr std::size_t kPgEventsPerInsert = 8000;
constexpr std::size_t kReturnsPerInsert = 8000;
constexpr std::size_t kExpectedPerInsert = 8000;
constexpr std::size_t kLoadsPerUpdate = 2000;
// Waiting writes that make a round trip of their own (memory bound).
constexpr std::size_t kMaxDeferred = 4 * PgConnection::kPipelineChunk;
// Return ids drawn from ret's sequence per round trip.
constexpr int kReturnIdsPerDraw = 1000;

inline std::string TimeText(Micros t) {
  // timestamptz accepts the epoch form with a fraction.
  const std::int64_t us = ToUnixMicros(t);
  const std::int64_t s = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
  const std::int64_t f = us - s * 1000000;
  std::string frac = std::to_string(f);
  frac.insert(0, 6 - frac.size(), '0');
  return std::to_string(s) + "." + frac;
}

inline std::string Int(std::int64_t v) { return std::to_string(v); }

// Days since the Unix epoch (UTC) of `t`.
inline std::int64_t DayOf(Micros t) { return date::floor<date::days>(t).time_since_epoch().count(); }

// "YYYYMMDD" and "YYYY-MM-DD" of a day number (postgres_partitions.cpp).
std::string DayText(std::int64_t day, bool dashes);
// The day of a partition of `table` named <table>_pYYYYMMDD, or nullopt.
std::optional<std::int64_t> PartitionDay(std::string_view name, std::string_view table);

// Retention's SQL conditions (postgres_retention.cpp).
struct SqlCondition;

inline PgParam P(std::string_view v) { return PgParam{v}; }

// Parameters of a statement that waits (PgStatement owns them).
using Owned = PgStatement::Param;
inline Owned O(std::string v) { return Owned{std::move(v)}; }
inline Owned ONull() { return Owned{}; }
inline Owned OBool(const std::optional<bool>& b) { return b ? O(*b ? "t" : "f") : ONull(); }
inline Owned OInt(const std::optional<std::int64_t>& v) { return v ? O(std::to_string(*v)) : ONull(); }

class PostgresBackend final : public Backend {
 public:
  // Minion name -> row id cache bound (sqlite_backend.h says why).
  static constexpr std::size_t kMaxCachedMinions = 100000;

  PostgresBackend(const std::string& uri, const OpenOptions& options);
  ~PostgresBackend() override;

  // --- transactions -----------------------------------------------------------

  // BEGIN goes with the first statement of the batch: a server lost
  // between batches then fails a write (the caller replays the batch), not
  // the opening of one.
  void Begin() override { begin_pending_ = true; }

  void Commit() override;
  void Rollback() noexcept override;

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowPgAsStoreError(context, op); }

  bool Shared() const override { return true; }

  // --- job cache primitives ---------------------------------------------------

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
  void DropEventDays(Micros before, CleanResult& result) override;
  void DropJobDays(const std::vector<JobClass>& classes, Micros before, CleanResult& result) override;
  void DeleteJob(std::int64_t job, std::int64_t& budget, CleanResult& result);
  std::int64_t DeleteOldestRows(const std::string& table, const std::string& payload,
                                std::int64_t until, std::int64_t n, CleanResult& result);
  std::int64_t OldestArrival(const std::string& table);
  CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) override;
  std::int64_t UsedBytes() override;
  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override;
  void OpenBusGap(std::string_view reason, std::int64_t start_us, std::optional<std::int64_t> last_frame_us) override;
  void CloseBusGap(std::int64_t end_us) override;
  void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) override;
  void ForgetSpoolProgress(const std::string& file_key) override;

  // --- reads ----------------------------------------------------------------------

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
  // The connection, with the batch's BEGIN sent first when still pending.
  // The connection for a statement of its own, once what waits is sent.
  PgConnection& Db() {
    if (begin_pending_ || Waiting()) Send(std::nullopt);
    return *db_;
  }

  bool Waiting() const {
    return !deferred_.empty() || !pending_returns_.empty() || !pending_expected_.empty() || !pending_events_.empty() ||
           !pending_loads_.empty();
  }

  // Plan::kReuse: the SQL text is the same whatever the data (every value a
  // parameter), so the connection parses and plans it once (PgStatement::reuse).
  // The writes of a batch are such statements: parsing and planning one
  // statement per job and a multi-row VALUES per batch had been 44 % of the
  // server process's time at full ingest (docs/performance.md, issue 16 round 5).
  enum class Plan { kOnce, kReuse };

  // A write that returns nothing: sent with the next round trip.
  void Defer(std::string sql, std::vector<Owned> params = {}, Plan plan = Plan::kOnce) {
    deferred_.push_back({std::move(sql), std::move(params), plan == Plan::kReuse});
    if (deferred_.size() >= kMaxDeferred) Send(std::nullopt);
  }

  // One statement whose result is needed now, riding with what waits.
  PgResult Query(std::string sql, std::vector<Owned> params = {}, Plan plan = Plan::kOnce) {
    return *Send(PgStatement{std::move(sql), std::move(params), plan == Plan::kReuse});
  }

  // The same for a statement that reads neither the batch's waiting returns
  // nor its events: those keep waiting (a job's own returns are in its
  // ReadJob), so a batch sends one INSERT of each, not one per job it names.
  // Those statements per job had cost the server about 36 us of execution
  // each (docs/performance.md, issue 16 round 7).
  PgResult QueryAhead(std::string sql, std::vector<Owned> params, Plan plan) {
    return *Send(PgStatement{std::move(sql), std::move(params), plan == Plan::kReuse}, Rows::kMayWait);
  }

  // Rows::kMayWait: the waiting returns, expected minions and events stay for
  // a later round trip. No deferred write needs them: the writes that name
  // returns or events (ReplaceReturn's, DetachEvents') are deferred after a
  // Query, which sent them, and DropStubMinions drops the job's waiting
  // expected minions with its DELETE.
  enum class Rows { kSend, kMayWait };

  std::optional<PgResult> Send(std::optional<PgStatement> last, Rows rows = Rows::kSend);

  // job.load_user (migrations/postgres/0004): the load's user as it is when
  // a string PostgreSQL's text can hold (valid UTF-8, no NUL); otherwise
  // none, and `ask` so that the server reads it from the load's text as
  // 0002's expression did (brine_load_field: a number's or a list's JSON
  // text, or NULL).
  struct LoadUser {
    std::optional<std::string> user;
    bool ask = false;
  };
  static LoadUser LoadUserOf(const Value* user) {
    if (user == nullptr || user->is_null()) return {};
    if (user->is_string() && IsValidUtf8(user->as_string()) &&
        user->as_string().find('\0') == std::string::npos) {
      return {user->as_string(), false};
    }
    return {std::nullopt, true};
  }

  // A load write waiting for SendLoads (WaitLoad).
  struct PendingLoad {
    std::int64_t job;
    std::string load;
    std::optional<std::string> fun;
    LoadKind kind;
    std::optional<std::string> metadata;
    LoadUser user;
    bool stub;  // PutStubLoad's
  };

  void WaitLoad(PendingLoad load);

  void SendLoadOf(std::int64_t job) {
    if (waiting_load_jobs_.contains(job)) SendLoads();
  }

  void SendLoads();
  ReturnId NextReturnId();
  void AppendReturnInserts(std::vector<PgStatement>& out);
  void AppendExpectedInserts(std::vector<PgStatement>& out);
  void AppendEventInserts(std::vector<PgStatement>& out);
  void EnsurePartitions();

  // The part_day of a job read in this transaction (nullopt inside: a job
  // first seen before 0003), or nullptr when it was not read.
  const std::optional<std::string>* DayOfJob(std::int64_t job) const {
    auto it = read_jobs_.find(job);
    return it == read_jobs_.end() ? nullptr : &it->second.day;
  }

  template <class F>
  auto Guard(const char* what, Op op, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (...) {
      RethrowPgAsStoreError(what, op);
    }
  }

  // f(minion, full_ret) for each return of `jid`, by minion name in byte
  // order (SQLite's BINARY; string_view compares as unsigned bytes). The
  // sort is done here, on the result libpq holds anyway: an ORDER BY made
  // the server sort whole returns, which spilled to disk past work_mem (4 MB
  // by default; 10,000 returns of 470 bytes did, pg_bench --store-jobs).
  template <class F>
  void ForEachReturn(const std::string& jid, F&& f) {
    // The returns first, their minions' names after: a join with minion in
    // the same statement probes minion_pkey once per return (three buffers
    // each), because the planner takes a job for its average of returns, not
    // the 10,000 one may have; 10,000 probes were 12-15 ms of a 55-60 ms
    // query on the 1M-job store (docs/performance.md, round 4).
    PgResult r = Db().Exec(
        "SELECT r.minion_id, r.full_ret FROM ret AS r WHERE r.job_id = (SELECT id FROM job WHERE jid = $1)",
        {P(jid)});
    const int rows = r.rows();
    if (rows == 0) return;
    std::vector<std::int64_t> ids;
    ids.reserve(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) ids.push_back(r.integer(i, 0));
    const MinionNames names = NamesOf(std::move(ids));
    std::vector<std::pair<std::string_view, int>> order;
    order.reserve(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) order.emplace_back(names.Of(r.integer(i, 0)), i);
    std::sort(order.begin(), order.end());
    for (const auto& [name, i] : order) f(name, r.text(i, 1));
  }

  // Minion names by row id, from one query's result.
  class MinionNames {
   public:
    explicit MinionNames(PgResult result) : result_(std::move(result)) {
      rows_.reserve(static_cast<std::size_t>(result_.rows()));
      for (int i = 0; i < result_.rows(); ++i) rows_.emplace_back(result_.integer(i, 0), i);
      std::sort(rows_.begin(), rows_.end());
    }
    // Every id asked for has a row: minions are never deleted.
    [[nodiscard]] std::string_view Of(std::int64_t id) const {
      const auto it = std::lower_bound(rows_.begin(), rows_.end(), std::pair<std::int64_t, int>(id, -1));
      if (it == rows_.end() || it->first != id) throw StoreError("minion row " + Int(id) + " is missing");
      return result_.text(it->second, 1);
    }

   private:
    PgResult result_;
    std::vector<std::pair<std::int64_t, int>> rows_;  // (id, row), ascending
  };

  MinionNames NamesOf(std::vector<std::int64_t> ids);

  std::int64_t MinionId(std::string_view name) {
    const std::string n(name);
    return MinionIds(std::span(&n, 1))[0];
  }

  std::vector<std::int64_t> MinionIds(std::span<const std::string> names);
  void DetachEvents(const std::string& where);
  std::int64_t DeleteOlder(const std::string& table, const std::string& cut, std::int64_t budget,
                           const SqlCondition& condition);

  SystemClock system_clock_;
  const Clock* clock_;  // the options' clock or system_clock_
  std::unique_ptr<PgConnection> db_;
  std::int64_t master_row_ = 0;
  std::string draw_return_ids_;  // the statement drawing kReturnIdsPerDraw return ids
  bool begin_pending_ = false;
  std::int64_t partitions_day_ = INT64_MIN;  // the day EnsurePartitions last ran for
  // A return waiting for the next round trip, with the id already handed out.
  struct PendingReturn {
    ReturnId id;
    std::int64_t job;
    std::int64_t minion;
    std::string received;  // TimeText
    std::optional<bool> success;
    std::optional<std::int64_t> retcode;
    std::string full_ret;
    bool trimmed;
    std::optional<std::string> day;  // the job's part_day (NULL: before 0003)
  };
  // What waits for the next round trip (Send); dropped on rollback.
  std::vector<PgStatement> deferred_;
  std::vector<PendingReturn> pending_returns_;
  std::vector<PendingLoad> pending_loads_;
  std::unordered_set<std::int64_t> waiting_load_jobs_;
  std::unordered_set<std::string> waiting_load_jids_;  // those of the jobs read in this batch
  bool waiting_load_unread_ = false;                    // one of a job this batch did not read
  // An expected minion waiting for the next round trip.
  struct PendingExpected {
    std::int64_t job;
    std::int64_t minion;
    std::optional<std::string> day;  // the job's part_day as read (NULL: ask its row)
  };
  std::vector<PendingExpected> pending_expected_;
  std::vector<EventRow> pending_events_;
  // A job read in this transaction: its part_day, and the minions with a
  // stored or waiting return.
  struct ReadJob {
    std::string jid;
    std::optional<std::string> day;
    std::unordered_set<std::int64_t> returned;
  };
  std::unordered_map<std::int64_t, ReadJob> read_jobs_;
  [[nodiscard]] std::optional<std::string> ReadJobHour(std::int64_t job) const;
  std::vector<ReturnId> free_return_ids_;  // drawn from ret's sequence, not yet used
  std::unordered_map<std::string, std::int64_t> minions_;  // dropped on rollback
};

}  // namespace brine::store::detail
