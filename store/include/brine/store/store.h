// brine::store: the returner layer. The only module that speaks SQL.
//
// `Store` mirrors Salt's returner contract (spec salt-jobs.md section 5) with
// the semantics of Salt's default `local_cache` (section 4.2):
//   - an unknown jid gives an empty answer, never an error;
//   - the first return from a minion wins; a repeat is reported, never stored;
//   - minion lists given for a jid merge (their union is the job's expected
//     minions), except that a stub made from a return gives way to a publish.
// Values cross this interface as brine::Value; no SQLite type appears here, so
// another backend can sit behind the same interface.
//
// Threading: a Store is one database connection and belongs to one thread.
// Open one Store per thread; readers and one writer may work at once (WAL).
//
// Writes: every write joins the open batch (see BeginBatch) or, when none is
// open, runs in a transaction of its own. A failed COMMIT rolls back, throws
// WriteFailedError and leaves the Store refusing writes: the caller keeps its
// batch, opens a new Store and replays it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brine/core/database.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/errors.h"

namespace brine::store {

// The SQLite backend's own options; a PostgreSQL store ignores them.
struct SqliteOptions {
  // Page cache per connection. Large enough to keep every minion's hot index
  // page in memory during a batch.
  std::int64_t cache_kib = 64 * 1024;
  // The WAL is truncated back to this size after checkpoints.
  std::int64_t journal_size_limit_bytes = 64 * 1024 * 1024;
  // Caps the database at this many pages (0: SQLite's limit). A quota, and a
  // way for tests to make a commit fail the way a full disk does.
  std::int64_t max_page_count = 0;
};

struct OpenOptions {
  enum class Access { kReadWrite, kReadOnly };
  // brine.sync (brine/core/database.h says what each mode promises).
  using Sync = SyncMode;
  Access access = Access::kReadWrite;
  Sync sync = Sync::kNormal;
  // How long a statement waits on another connection's lock before BusyError.
  std::chrono::milliseconds busy_timeout{10000};
  SqliteOptions sqlite;
  // Recorded as `master_id` on archived events (Salt's opts["id"]).
  std::string master_id = "brine_master";
  // Source of "now" for jids and arrival times; nullptr means the system clock.
  // When given it must outlive the Store.
  const Clock* clock = nullptr;
  // An arrival time (Event::received, Quarantine's `received`) more than this
  // ahead of `skew_clock`'s now is taken as that now, and counted
  // (FutureArrivals): one far-future time (a bad import line, a damaged
  // record) would otherwise push every later SQLite event id, which is the
  // arrival time kept increasing, into the future with it
  // (brine.max_clock_skew_s). Times in the past stay as they are (on SQLite
  // the id is then the last id + 1).
  std::chrono::seconds max_clock_skew{300};
  // The clock that rule reads; nullptr: the system clock, whatever `clock`
  // is (an importer's `clock` replays the file's times, a test's stands at a
  // fixed past instant that the events it files are often ahead of). When
  // given it must outlive the Store.
  const Clock* skew_clock = nullptr;
};

// Identifies a stored return, so an archived event can share its payload.
using ReturnId = std::int64_t;

struct ReturnOutcome {
  enum class Kind {
    kStored,     // first return from this minion for this jid: stored
    kRepeat,     // same payload as the stored one apart from `_stamp`: not stored
    kConflict,   // a different payload for a stored (jid, minion): the first is kept
    kNotCached,  // not stored: the jid is marked nocache, job_cache is off for it,
                 // or the load lacks `jid`, `id` or `return`
    // The same return twice, once as Salt trimmed it for its event bus (a
    // "VALUE_TRIMMED" string in place of big values) and once whole (the Salt
    // plug-in's returner); neither is a duplicate and the whole one is kept:
    kCompleted,  // the stored copy was the trimmed one: this load replaced it
                 // (archived events that shared it keep their own copy)
    kTrimmedCopy,  // this load is the trimmed copy of the stored one: not stored
  };
  Kind kind = Kind::kNotCached;
  // The stored return (for every kind but kNotCached); 0 otherwise.
  ReturnId id = 0;
  // For kRepeat: true when this load's `_stamp` differs from the stored one.
  bool stamp_differs = false;
  // The jid the return was filed under (a fresh one when the load said "req").
  std::string jid;
};

// One bus event to archive.
struct Event {
  std::string tag;
  Value data;        // a map
  Micros received;   // arrival time; the archive keeps arrival order
  // ToJson(data) when the caller made it already (brine-master encodes on its
  // reader thread, so the writer thread only runs SQL); empty: the store
  // encodes `data`. Never anything but ToJson(data).
  std::string data_json;
  // When set, `data` equals that stored return's payload except, when
  // `own_stamp` is true, for the value of `_stamp` at the same position. The
  // archive then keeps a reference instead of a second copy.
  std::optional<ReturnId> same_as_return;
  bool own_stamp = false;
};

// A job as the job cache holds it.
struct JobRecord {
  std::string jid;
  Value load;                         // the publish load (a map; {} when none yet)
  std::vector<std::string> minions;   // expected minions, sorted
  Value metadata;                     // the job's metadata map, or null
  std::optional<std::string> endtime;
  // With JobFilter::json_text, the load and the metadata as JSON text
  // instead of `load` and `metadata` (left null).
  std::string load_json;
  std::optional<std::string> metadata_json;
  // With JobFilter::with_counts: the job's minions by outcome.
  struct MinionCounts {
    std::int64_t expected = 0;  // minions the publish (or a stub) named
    std::int64_t returned = 0;  // minions with a stored return
    std::int64_t failed = 0;    // of those, retcode not 0 or success false
    std::int64_t missing = 0;   // expected minions without a return
  };
  std::optional<MinionCounts> counts;
};

// What GetJids selects. Every condition given must hold (AND).
struct JobFilter {
  // Inclusive bounds on the jid text. Jids are UTC times, so a time window is
  // FormatJid(start) .. FormatJid(end) + "~".
  std::optional<std::string> jid_min;
  std::optional<std::string> jid_max;
  // fnmatch globs on the load's `fun`; a job passes when any matches.
  std::vector<std::string> function_globs;
  // fnmatch globs on the load's `tgt`; a list target passes when any element matches any glob.
  std::vector<std::string> target_globs;
  // Passes when the job's metadata has any of these keys with an equal value.
  std::optional<Value> metadata;
  // Functions to leave out (exact names), e.g. "saltutil.find_job".
  std::vector<std::string> exclude_functions;
  // When set: only jobs with (true) or without (false) any stored return.
  std::optional<bool> has_returns;
  // When set: only jobs with (true) or without (false) a failed return
  // (retcode not 0, or success false).
  std::optional<bool> has_failures;
  // Keep only the newest `limit` matching jobs (still returned oldest first).
  std::optional<std::size_t> limit;
  // Hand out the load and metadata as JSON text (JobRecord::load_json,
  // metadata_json), for a listing that copies them into its output.
  bool json_text = false;
  // For a page of a listing, newest first (brine-run sets none of these):
  // only jids before this one (exclusive), so a page of `limit` jobs goes on
  // from the last page's oldest jid (keyset paging);
  std::optional<std::string> jid_before;
  // only jobs whose load's `user` is this string;
  std::optional<std::string> user;
  // only jobs that expected this minion or hold a return from it;
  std::optional<std::string> minion;
  // only jobs published by this master (Salt's opts["id"], as events'
  // master_id): a job whose master is unknown (filed before migration
  // 0014_job_master, or known only from a return) never passes;
  std::optional<std::string> master;
  // and with each job's minion counts (JobRecord::counts).
  bool with_counts = false;
  // ListJobs only: stop once this much time has gone (a partial page).
  std::optional<std::chrono::milliseconds> time_budget;
};

// What ListJobs found.
struct JobPage {
  std::vector<JobRecord> jobs;  // oldest first, as GetJids
  // False when JobFilter::time_budget ran out first: `jobs` are those found
  // until then, and `reached` is the last jid looked at (the listing reads
  // oldest first, or newest first with a limit, and got that far).
  bool complete = true;
  std::optional<std::string> reached;
};

// What ListJobMinions selects: a page of one job's minions (each expected
// minion and each minion that returned, expected or not), in name order
// (bytes compared unsigned, as GetJidFull orders them), after a keyset cursor.
struct JobMinionQuery {
  enum class State {
    kAny,
    kReturned,  // with a return that did not fail
    kFailed,    // with a failed return: retcode not 0 or success false (JobRecord::MinionCounts' rule)
    kMissing,   // expected, without a return
  };
  State state = State::kAny;
  std::string after;                  // only names after this one; "": from the first
  std::optional<std::string> minion;  // only this minion
  std::size_t limit = 100;            // minions per page (at least 1)
};

// One minion of a ListJobMinions page.
struct JobMinion {
  std::string name;
  Value full_ret;  // its whole return load (as GetJidFull's); null: it has not returned
};

// What ListJobMinions found.
struct JobMinionPage {
  std::vector<JobMinion> minions;   // at most the query's limit, in name order
  std::optional<std::string> next;  // the next page's `after` (the last name here); nullopt: no more
};

// What the job cache keeps of one job, whole, for brine.export (ForEachStoredJob).
struct StoredReturn {
  std::string minion;
  Micros received{};           // arrival time
  std::string full_ret_json;   // the whole return load, as stored
};
struct StoredJob {
  std::string jid;
  // Where the load came from: none yet (prep_jid only), a stub built from a
  // return, a publish event (SaveLoad), or the master's own save_load
  // (SaveCacheLoad with cmd "publish", which an event's copy never replaces).
  enum class Origin { kNone, kStub, kEvent, kMaster };
  Origin origin = Origin::kNone;
  std::optional<std::string> load_json;      // null for kNone
  std::optional<std::string> metadata_json;
  std::vector<std::string> minions;          // expected minions, sorted
  bool nocache = false;
  std::optional<std::string> endtime;
  Micros seen{};                             // when the store first heard of the jid
  std::vector<StoredReturn> returns;         // in arrival order
};

// One archived event as salt_events shows it.
struct ArchivedEvent {
  Micros received{};       // arrival time (the archive's order)
  std::string master_id;   // the master that archived it
  std::string tag;
  std::string data_json;   // with a shared return's payload filled in
};

// An archived event with its row id: the archive's order, and the key of
// the event pages' keyset paging (Store::ListEvents).
struct ListedEvent {
  std::int64_t id = 0;
  ArchivedEvent event;
};

// What ListEvents selects: newest first, only ids below `before_id` (the
// last page's oldest id), whose tag the fnmatch `tag_glob` matches (empty:
// every tag). Only the glob's literal prefix (up to its first * ? or [) goes
// into the SQL; the rest is FnMatch on the rows it gives.
struct EventQuery {
  std::string tag_glob;
  std::optional<std::int64_t> before_id;
  std::size_t limit = 100;
  // Stop once this much time has gone (a glob that matches little): a
  // partial page (EventPage::complete false).
  std::optional<std::chrono::milliseconds> time_budget;
};

struct EventPage {
  std::vector<ListedEvent> events;  // newest first
  // False when the time budget ran out: `reached` is the last id looked at,
  // and the listing goes on with before_id = reached.
  bool complete = true;
  std::optional<std::int64_t> reached;
};

// One event of a live tail, with the tail's cursor just after it (the
// Server-Sent Events `id:` line): resuming from that cursor gives exactly
// the events committed after this one and not yet given, on either backend
// (docs/web.md, "The live tail").
struct TailedEvent {
  std::string cursor;
  ListedEvent event;
};

struct TailBatch {
  std::vector<TailedEvent> events;  // in archive (row id) order
  // Where the next TailEvents call goes on (it may have moved without an
  // event, e.g. past rows the glob did not match).
  std::string cursor;
  // True when `limit` cut the batch: call again without waiting.
  bool more = false;
};

// One class of retention: what the fnmatch `glob` matches is kept until it
// is older than `before`; nullopt keeps it forever.
struct RetentionRule {
  std::string glob;
  std::optional<Micros> before;
};

// What Store::ApplyRetention deletes. Rules apply in order: the first whose
// glob matches decides; what none matches falls to the *_before default
// (nullopt: kept forever).
struct Retention {
  std::optional<Micros> jobs_before;
  std::vector<RetentionRule> jobs_by_fun;     // globs on the load's `fun`
  std::optional<Micros> events_before;        // and quarantined frames
  std::vector<RetentionRule> events_by_tag;   // globs on the event's tag
};

struct CleanResult {
  std::int64_t jobs = 0;
  std::int64_t returns = 0;
  std::int64_t events = 0;
  std::int64_t quarantined = 0;
  std::int64_t bus_gaps = 0;  // brine_bus_gaps rows that ended before the events' cut
  // PruneOldest only: the bytes of JSON (and raw frames) it deleted.
  std::int64_t bytes = 0;
  // True when the row budget ran out before everything old was gone.
  bool more = false;
};

// brine-master's status (master_status.sql): what a counter cannot hold,
// written once when it starts. The rest of its status is its counters
// (PutCounters): received, stored, ..., queue_depth, last_commit_us,
// started_us, heartbeat_us and commit_lag_us, written in its batches.
struct MasterInfo {
  std::string version;
  std::string host;
  std::int64_t pid = 0;
  std::int64_t started_us = 0;
};

// One master's status as the store holds it.
struct MasterStatus {
  std::string master_id;
  std::optional<MasterInfo> info;  // nullopt: a master from before migration 0011
  Value counters;                  // {name: value}, as GetCounters gives them
};

// What a master filed in one hour (HourlyCounts): jobs published, returns
// stored, failed returns among them (retcode not 0 or success false), events
// archived, counted by the hour each arrived.
struct HourCounts {
  Micros hour{};  // the hour's start, UTC
  std::int64_t jobs = 0;
  std::int64_t returns = 0;
  std::int64_t failures = 0;
  std::int64_t events = 0;
};

// Why an attached brine-master read nothing of its Salt master's bus for a
// while (bus_gaps.sql; docs/master.md, "Attach").
enum class GapReason {
  kMasterWentAway,     // EOF, or no socket to connect to
  kSocketReplaced,     // the socket file's inode changed under a connection
  kFellBehind,         // the queue and the overflow file were full; the master dropped us
  kUndecodableStream,  // a bare-form frame could not be read: no boundary to resume at
  kMasterStopped,      // brine-master itself was stopped
  kPermissionDenied,   // connect() said EACCES
};
// The reason's text as brine_bus_gaps shows it ("master went away", ...).
[[nodiscard]] std::string_view GapReasonText(GapReason reason);

// One row of brine_bus_gaps.
struct BusGap {
  std::string master_id;
  Micros start{};
  std::optional<Micros> end;         // nullopt while open
  std::optional<Micros> last_frame;  // the last frame read before it, when known
  std::string reason;                // GapReasonText
};

class Store;

// An open write batch: every write on the Store joins one BEGIN IMMEDIATE
// transaction until Commit. Destroying an uncommitted Batch rolls it back.
class Batch {
 public:
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&&) = delete;
  Batch(const Batch&) = delete;
  ~Batch();

  // Commits. Throws WriteFailedError (rolled back; the Store now refuses
  // writes) or BusyError. After a throw the batch is closed.
  void Commit();

 private:
  friend class Store;
  explicit Batch(Store* store) : store_(store) {}
  Store* store_;  // the Store outlives its batches
};

// What a store whose database lives in files on this machine (SQLite) also
// offers: giving space back, checkpoints, planner statistics, a consistent
// copy and an integrity check. A server database (PostgreSQL) has none of
// these here (autovacuum, the server's checkpoints and statistics,
// pg_dump/pg_basebackup and amcheck do the same there), so
// Store::Maintenance() is nullptr for it: a caller asks, and nothing is
// filled with no-ops or throws. Obtained from and owned by a Store; it
// belongs to the Store's thread and lives as long as the Store.
class StoreMaintenance {
 public:
  // The database's pages: `page_count` in all, `freelist_count` of them free.
  struct SpaceInfo {
    std::int64_t page_size = 0;
    std::int64_t page_count = 0;
    std::int64_t freelist_count = 0;
  };
  [[nodiscard]] virtual SpaceInfo Space() = 0;
  // Gives up to `pages` free pages back to the file system (auto_vacuum is
  // INCREMENTAL). Runs in a transaction of its own; throws StoreError inside
  // a batch or on a Store refusing writes.
  virtual void IncrementalVacuum(std::int64_t pages) = 0;
  // Tries a wal_checkpoint(TRUNCATE). Readers may keep it from completing;
  // that is not an error. Throws StoreError inside a batch.
  virtual void Checkpoint() = 0;
  // Refreshes the query planner's statistics (ANALYZE bounded by
  // analysis_limit, a few milliseconds on any size of store), so the views'
  // natural predicates keep their index plans as the store grows. Runs in a
  // transaction of its own; not inside a batch. Throws StoreError.
  virtual void RefreshStatistics() = 0;
  // Writes a consistent copy of the whole store to `to` (SQLite's backup API
  // in one step under one read transaction, so a writer on another connection
  // goes on and the copy is the store as of one commit; a single file, no WAL
  // beside it). Works on a read-only Store. Throws StoreError when `to`
  // exists or cannot be written, or inside a batch.
  virtual void BackupTo(const std::filesystem::path& to) = 0;
  // PRAGMA integrity_check's verdict: "ok", or its first messages joined by "; ".
  [[nodiscard]] virtual std::string IntegrityCheck() = 0;

 protected:
  ~StoreMaintenance() = default;  // not owned through this interface
};

class Store {
 public:
  virtual ~Store() = default;

  // --- batches ---------------------------------------------------------------
  // Opens a write batch. Throws StoreError if one is already open or the
  // Store is read-only or refusing writes after a failed commit.
  [[nodiscard]] Batch BeginBatch();

  // --- writes (Salt's returner functions) -------------------------------------
  // Registers `passed_jid` or a fresh jid; with `nocache` returns for it are
  // not stored. An existing jid is not a collision (local_cache's rule).
  enum class Caching { kCache, kNoCache };
  virtual std::string PrepJid(Caching caching, const std::optional<std::string>& passed_jid) = 0;

  // Stores the publish load of `jid` (a map) as an event announced it,
  // replacing an earlier load unless SaveCacheLoad stored the master's own. The
  // `minions` merge into the expected set; when the job only had a stub made
  // from a return, the stub's minions are dropped first.
  virtual void SaveLoad(const std::string& jid, const Value& load,
                        const std::optional<std::vector<std::string>>& minions) = 0;
  // The same with `load_json`, ToJson(load) made by the caller (e.g. on
  // another thread), which the store keeps instead of encoding the load again.
  virtual void SaveLoad(const std::string& jid, const Value& load, const std::string& load_json,
                        const std::optional<std::vector<std::string>>& minions) = 0;

  // Salt's save_load as a master_job_cache receives it (the Salt returner
  // plug-in, spec 3.1 step 4 and 7.1 step 11), by the load's `cmd`:
  //   "publish"  the master's publish load: replaces any load, and marks it
  //              so that SaveLoad (an event's copy) no longer replaces it;
  //   "_return"  store_job's copy of a minion return: never replaces a load
  //              (case C6); a job without one gets the stub Returner makes;
  //   otherwise  as SaveLoad (e.g. a batch job's own load, case D14).
  // The `minions` merge into the expected set in every case.
  virtual void SaveCacheLoad(const std::string& jid, const Value& load,
                             const std::optional<std::vector<std::string>>& minions) = 0;

  // Merges `minions` into the expected set of `jid` (creating the job entry).
  // `syndic_id` is accepted for Salt's signature; lists merge either way.
  virtual void SaveMinions(const std::string& jid, const std::vector<std::string>& minions,
                           const std::optional<std::string>& syndic_id) = 0;

  // Stores one minion return load (`jid`, `id`, `return`, ...; Salt's store_job
  // input). A "req" jid gets a fresh jid. A jid with no publish gets a stub
  // load built as store_job does (fun, arg=fun_args, tgt=id, tgt_type=glob,
  // user) and that minion as expected. The whole load is kept as `full_ret`.
  // The job takes its metadata from its first return with a dict `metadata`.
  [[nodiscard]] virtual ReturnOutcome Returner(const Value& ret) = 0;
  // The same with `ret_json`, ToJson(ret) made by the caller (e.g. on another
  // thread), which the store keeps as `full_ret` instead of encoding `ret` again.
  [[nodiscard]] virtual ReturnOutcome Returner(const Value& ret, const std::string& ret_json) = 0;

  // Whether `ret` (a return load as Returner takes it) is already stored for
  // its jid and minion with the same payload apart from `_stamp`: then a
  // kRepeat outcome naming the stored return (stamp_differs as Returner sets
  // it), so an archived event can share its payload; nullopt otherwise.
  // Writes nothing.
  [[nodiscard]] virtual std::optional<ReturnOutcome> FindSameReturn(const Value& ret) = 0;

  // Archives bus events in order (Salt's event_return). Job events (tags
  // `salt/job/<jid>/...`, a bare jid, `new_job`) are linked to their job.
  virtual void EventReturn(std::span<const Event> events) = 0;

  // Keeps a frame that could not be decoded, with the reason.
  virtual void Quarantine(std::string_view raw, const std::string& reason, Micros received) = 0;

  // How many arrival times (EventReturn's, Quarantine's) this Store took as
  // its skew clock's now since it was opened, being more than
  // OpenOptions::max_clock_skew ahead of it; writes rolled back included.
  [[nodiscard]] virtual std::int64_t FutureArrivals() const = 0;

  // Records the job's end time text (`job_cache_store_endtime`).
  virtual void UpdateEndtime(const std::string& jid, const std::string& endtime) = 0;

  // Deletes what `retention` no longer keeps: each job (with its load,
  // expected minions and returns) whose jid time is before the cut of the
  // first rule of jobs_by_fun whose glob matches its load's `fun`, or before
  // jobs_before when none matches; each archived event that arrived before
  // the cut of the first rule of events_by_tag matching its tag, or before
  // events_before when none matches; quarantined frames that arrived before
  // events_before. At most `max_rows` rows in all (on PostgreSQL, whole days
  // of archived events before every event cut are dropped as partitions
  // besides, outside that budget). A jid that is not a time ages by when the
  // store first saw it. Joins the open batch.
  virtual CleanResult ApplyRetention(const Retention& retention, std::int64_t max_rows) = 0;
  // ApplyRetention without rules by class.
  CleanResult CleanOldJobs(std::optional<Micros> jobs_before, std::optional<Micros> events_before,
                           std::int64_t max_rows) {
    return ApplyRetention({.jobs_before = jobs_before, .events_before = events_before}, max_rows);
  }

  // For a size cap: deletes the oldest of everything, whatever its class:
  // jobs (in jid order, a jid that is not a time by when it was first seen;
  // with their returns and expected minions), archived events and quarantined
  // frames (by arrival), oldest first across the three, until the payloads
  // deleted (loads, returns, event data, raw frames) add up to `bytes` or
  // `max_rows` rows went (then `more` is set). Joins the open batch.
  virtual CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) = 0;
  // The bytes the store's rows take, for brine.max_store_mb: on SQLite the
  // pages in use (free pages not counted, the WAL neither); on PostgreSQL an
  // estimate from its statistics (live rows x average row width per table,
  // indexes not counted), 0 until ANALYZE (autovacuum) has run; it follows
  // deletes as the statistics do (within about a second of a commit).
  [[nodiscard]] virtual std::int64_t UsedBytes() = 0;

  // Replaces the counters of this Store's master (OpenOptions::master_id) with
  // `counters`. Joins the open batch, so counters commit with the data they count.
  virtual void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) = 0;

  // --- brine-master's status and hourly rollups (master_status.sql) ---------------
  // Replaces this Store's master's MasterInfo. Joins the open batch. Throws as any write.
  virtual void PutMasterInfo(const MasterInfo& info) = 0;
  // Adds `hours` to this Store's master's hourly rollups (an hour that has
  // a row is added to). Joins the open batch, so the rollups commit with the
  // rows they count. Throws as any write.
  virtual void AddHourlyCounts(std::span<const HourCounts> hours) = 0;
  // Removes every master's rollups of the hours that end at or before
  // `before` (retention). Throws as any write.
  virtual void ForgetHoursBefore(Micros before) = 0;

  // --- an attached bus's gaps (bus_gaps.sql) --------------------------------------
  // Opens a gap of this Store's master at `start`, unless one is open (the
  // first reason of an episode stands). Joins the open batch. Throws as any write.
  virtual void OpenBusGap(GapReason reason, Micros start, std::optional<Micros> last_frame) = 0;
  // Ends this Store's master's open gap at `end` (not before its start);
  // nothing when none is open. Joins the open batch. Throws as any write.
  virtual void CloseBusGap(Micros end) = 0;
  // Every master's gaps still open or ended at or after `since`, oldest
  // first. Throws StoreError.
  [[nodiscard]] virtual std::vector<BusGap> GetBusGaps(Micros since) = 0;

  // --- the Salt plug-in's spool (brine-master; master/include/brine/master/spool.h) ---
  // Records that this Store's master (OpenOptions::master_id) has filed the
  // spool file `file_key` (its identity) up to byte `offset_bytes`. Joins the
  // open batch, so the offset commits with the frames it counts. Throws as
  // any write.
  virtual void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) = 0;
  // Forgets `file_key`'s progress (its file is gone); nothing when there is
  // none. Joins the open batch. Throws as any write.
  virtual void ForgetSpoolProgress(const std::string& file_key) = 0;
  // Every spool file's progress this Store's master recorded, as
  // (file_key, offset_bytes) in file_key order; empty when none. Throws StoreError.
  [[nodiscard]] virtual std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() = 0;

  // --- maintenance -----------------------------------------------------------------
  // The store's maintenance (StoreMaintenance above) when its backend has it
  // (SQLite), nullptr when not (PostgreSQL). Never throws.
  [[nodiscard]] virtual StoreMaintenance* Maintenance() = 0;

  // --- reads --------------------------------------------------------------------
  // Every job whose jid text lies in [jid_min, jid_max] (each bound optional),
  // in jid order, with its load, metadata, expected minions, nocache mark,
  // endtime, first-seen time and returns. `fn` runs while the read is open
  // (it must not call back into this Store); its exceptions propagate. Reads
  // one consistent snapshot on SQLite; on PostgreSQL jobs are read 500 at a
  // time, each chunk consistent.
  virtual void ForEachStoredJob(const std::optional<std::string>& jid_min, const std::optional<std::string>& jid_max,
                                const std::function<void(StoredJob&&)>& fn) = 0;
  // Every archived event that arrived in [from, until) (each bound optional),
  // in archive order, as salt_events shows it. `fn` as for ForEachStoredJob.
  virtual void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                            const std::function<void(ArchivedEvent&&)>& fn) = 0;
  // A page of archived events, newest first (EventQuery). Throws StoreError.
  [[nodiscard]] virtual EventPage ListEvents(const EventQuery& query) = 0;
  // The cursor of a live tail that starts now: TailEvents from it gives the
  // events committed from now on. Throws StoreError.
  [[nodiscard]] virtual std::string TailStart() = 0;
  // Up to `limit` events committed after `cursor` (TailStart's, a
  // TailBatch's or a TailedEvent's) whose tag `tag_glob` matches (empty:
  // all), each once: never one twice and never one skipped, even when
  // writers commit out of id order (PostgreSQL). Throws
  // std::invalid_argument for a cursor this backend did not make,
  // StoreError when the read fails.
  [[nodiscard]] virtual TailBatch TailEvents(const std::string& cursor, const std::string& tag_glob,
                                             std::size_t limit) = 0;
  // How many jobs and archived events the store holds (count(*): a full
  // index scan, for a once-per-start judgement, not for every pass).
  struct RowCounts {
    std::int64_t jobs = 0;
    std::int64_t events = 0;
  };
  [[nodiscard]] virtual RowCounts CountRows() = 0;
  // Arrival time of the oldest archived event; nullopt when the archive is empty.
  [[nodiscard]] virtual std::optional<Micros> OldestEvent() = 0;
  // {master_id: {name: value}} for every master that wrote counters, by name.
  [[nodiscard]] virtual Value GetCounters() = 0;
  // Every master's status, in master_id order: each master that wrote
  // counters or a MasterInfo. Throws StoreError.
  [[nodiscard]] virtual std::vector<MasterStatus> GetMasterStatus() = 0;
  // The hourly series of [from, until) (each rounded down to its hour): one
  // HourCounts per hour in order, zeros where nothing was filed, of `master`
  // or summed over every master (nullopt). At most 24 * 366 hours; a longer
  // window throws StoreError. Reads the rollups only, never the rows.
  [[nodiscard]] virtual std::vector<HourCounts> HourlyCounts(Micros from, Micros until,
                                                             const std::optional<std::string>& master) = 0;
  // The load of `jid` plus "Minions" (sorted expected minions, when any); {} if unknown.
  [[nodiscard]] virtual Value GetLoad(const std::string& jid) = 0;
  // {minion: {"return", ["retcode"], ["success"], ["out"]}} in minion-name
  // order; {} if unknown.
  [[nodiscard]] virtual Value GetJid(const std::string& jid) = 0;
  // The full return load of each minion's return for `jid`, in minion-name order.
  [[nodiscard]] virtual Value GetJidFull(const std::string& jid) = 0;
  // A page of `jid`'s minions (JobMinionQuery): the names from the job's
  // expected minions (job_minion's key) and its returns (ret's (job_id,
  // minion_id) index; the failed ones through the partial index of failed
  // returns), then the return bodies of that page's minions only. Cost: the
  // job's (expected + returned) index entries, never its return bodies
  // beyond the page. Empty for an unknown jid. Throws StoreError.
  [[nodiscard]] virtual JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query) = 0;
  // GetJidFull unparsed, one return at a time, for a lookup that copies the
  // stored returns into its output: `fn` sees each minion's name and its
  // whole return load as stored JSON text, in minion-name order (bytes
  // compared unsigned); nothing for an unknown jid. The views live only
  // during the call; `fn` must not call back into this Store, and its
  // exceptions propagate.
  using ReturnTextFn = std::function<void(std::string_view minion, std::string_view full_ret_json)>;
  virtual void ForEachReturnJson(const std::string& jid, const ReturnTextFn& fn) = 0;
  // Jobs that have a load and pass `filter`, in jid order. `minions` is left
  // empty here (Salt's get_jids has no Minions); GetLoad has them.
  [[nodiscard]] virtual std::vector<JobRecord> GetJids(const JobFilter& filter) = 0;
  // GetJids one job at a time, for listings too big to hold: `fn` sees each
  // record in jid order while the read transaction is open (so it must not
  // call back into this Store). Exceptions from `fn` propagate.
  virtual void ForEachJob(const JobFilter& filter, const std::function<void(JobRecord&&)>& fn) = 0;
  // GetJids within filter.time_budget (none: the whole answer), saying how
  // far it got when the budget ran out.
  [[nodiscard]] virtual JobPage ListJobs(const JobFilter& filter) = 0;
  // The newest `count` jobs, oldest first, without saltutil.find_job when asked.
  enum class FindJobs { kKeep, kDrop };
  [[nodiscard]] virtual std::vector<JobRecord> GetJidsFilter(std::size_t count,
                                                             FindJobs find_jobs) = 0;
  // {minion: full return load} from each minion's newest job running `fun`.
  [[nodiscard]] virtual Value GetFun(const std::string& fun) = 0;
  // Every minion that has returned, sorted.
  [[nodiscard]] virtual std::vector<std::string> GetMinions() = 0;
  [[nodiscard]] virtual std::optional<std::string> GetEndtime(const std::string& jid) = 0;

  // The schema version of the open database (PRAGMA user_version).
  [[nodiscard]] virtual int SchemaVersion() = 0;

 protected:
  virtual void BeginBatchImpl() = 0;
  virtual void CommitBatchImpl() = 0;
  virtual void RollbackBatchImpl() noexcept = 0;

 private:
  friend class Batch;
};

// True when `database` names a database on a server (a postgresql:// or
// postgres:// URI in libpq's syntax) rather than a SQLite file: it has no
// directory of its own to create.
[[nodiscard]] bool IsServerDatabase(const std::filesystem::path& database);

// Where the store named by `database` (a brine.database value) lives, as
// Describe finds it without opening or connecting to it.
struct StoreLocation {
  enum class Kind {
    kLocalFiles,  // a SQLite file and its companions in a folder here
    kServer,      // a database on a server (IsServerDatabase)
  };
  Kind kind = Kind::kLocalFiles;
  // kLocalFiles: the folder that holds the files (the path's parent, which
  // brine-master creates); kServer: empty.
  std::filesystem::path folder;
  // The file brine-master's single-writer flock is taken on,
  // "<database>.lock"; nullopt for a server, which takes several writers.
  std::optional<std::filesystem::path> lock_file;
  // The files that hold the store: the database, its "-wal" and its "-shm"
  // (each named whether it exists or not); empty for a server.
  std::vector<std::filesystem::path> files;
  // The bytes the store takes on disk: the database file plus its "-wal",
  // each counted 0 when missing (the -shm is an index of the WAL, not data);
  // nullopt for a server, which Describe does not connect to (its size is
  // the server's: pg_database_size, or Store::UsedBytes for the rows).
  std::optional<std::int64_t> bytes;
};
// Says where `database` lives, reading only the file sizes. Never throws.
[[nodiscard]] StoreLocation Describe(const std::filesystem::path& database);

// The rule that a server database's URI holds no secret: a config file is
// world-readable more often than not, and the URI shows in logs and errors;
// libpq reads the password from ~/.pgpass, PGPASSFILE or passfile=. The URI
// is parsed as libpq parses it (PQconninfoParse), so `user:pw@`,
// `password=`, `sslpassword=`, a percent-encoded key (`%70assword=`) and any
// other option libpq itself marks as secret are all seen. Does nothing for a
// SQLite path. Throws StoreError naming the secret keys (never their values)
// when the URI holds one, or when libpq cannot parse it (its message may
// quote the URI, so it is left out); StoreError too when libpq cannot be
// loaded. OpenStore and OpenQueues apply it before connecting.
void CheckServerDatabase(const std::filesystem::path& database);

// `database` as a log line or an error may print it: a SQLite path, or a URI
// without a secret, as it is; a URI with a secret rebuilt in libpq's
// key=value form with each secret's value as "********"; a URI that libpq
// cannot parse (or when libpq cannot be loaded) as "a postgresql:// URI
// (not shown: ...)". Never throws.
[[nodiscard]] std::string RedactDatabase(const std::filesystem::path& database);

// Opens (creating when read-write) the store at `path` and brings its schema
// up to date: a SQLite file, or for a postgresql:// URI (IsServerDatabase) the
// PostgreSQL database it names, connecting with libpq (the password from
// ~/.pgpass, PGPASSFILE or passfile=; errors name host and database, never
// the URI's secrets). A lost connection during a write is WriteFailedError. Throws TooNewError for a database made by a newer brine,
// FatalError for a file that is not a brine store or is corrupt, StoreError
// for anything else (e.g. a missing file opened read-only).
[[nodiscard]] std::unique_ptr<Store> OpenStore(const std::filesystem::path& path,
                                               const OpenOptions& options = {});

// The highest schema version this binary knows.
[[nodiscard]] int LatestSchemaVersion();

// The SQLite library's version as it reports itself ("3.40.1"), for
// --versions-report.
[[nodiscard]] std::string SqliteVersion();

}  // namespace brine::store
