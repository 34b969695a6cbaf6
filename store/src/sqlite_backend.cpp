// The SQLite Backend of the job cache (backend.h): statements, BEGIN IMMEDIATE
// batches, WAL, incremental vacuum. Layout: migrations/*.sql and docs/schema.md.
#include <sqlite3.h>

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <unordered_map>

#include "backend.h"
#include "brine/core/atomic_file.h"
#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "connection.h"
#include "job_cache.h"
#include "migrations.h"
#include "statement_cache.h"

namespace brine::store {
namespace {

using detail::Backend;
using detail::EventRow;
using detail::JobState;
using detail::LoadKind;
using detail::LoadMembers;
using detail::MaintenanceBackend;
using detail::Op;
using detail::ReturnRow;
using detail::RethrowAsStoreError;

// Minion name -> row id. A fleet that churns names (cloud instances) would
// otherwise grow it for ever (+82 MB per 600k names); past the bound it
// starts again, and a name not cached costs one indexed lookup.
constexpr std::size_t kMaxCachedMinions = 100000;
// Archived events a statement inserts at once (FlushEvents).
constexpr std::size_t kEventsPerInsert = 32;

// --- SQL functions used by GetJids (registered on our connections only) -----

const char* ArgText(sqlite3_value* v, int* len) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(v));
  *len = sqlite3_value_bytes(v);
  return text;
}

// brine_fnmatch(patterns_json, text): any glob of the JSON list matches text.
void SqlFnmatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int plen = 0, tlen = 0;
  const char* patterns = ArgText(argv[0], &plen);
  const char* text = ArgText(argv[1], &tlen);
  if (patterns == nullptr || text == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const std::string_view t(text, static_cast<std::size_t>(tlen));
    for (const Value& p : list.as_list()) {
      if (FnMatch(p.as_string(), t)) {
        sqlite3_result_int(ctx, 1);
        return;
      }
    }
    sqlite3_result_int(ctx, 0);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// brine_tgt_match(load_json, patterns_json): the load's tgt (a string, or a
// list whose elements are tried in turn) matches any glob.
void SqlTargetMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int llen = 0, plen = 0;
  const char* load_text = ArgText(argv[0], &llen);
  const char* patterns = ArgText(argv[1], &plen);
  if (load_text == nullptr || patterns == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value load = ParseJson(std::string_view(load_text, static_cast<std::size_t>(llen)));
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const Value* tgt = load.Find("tgt");
    auto any = [&](std::string_view t) {
      for (const Value& p : list.as_list()) {
        if (FnMatch(p.as_string(), t)) return true;
      }
      return false;
    };
    bool hit = false;
    if (tgt != nullptr && tgt->is_string()) {
      hit = any(tgt->as_string());
    } else if (tgt != nullptr && tgt->is_list()) {
      for (const Value& t : tgt->as_list()) {
        if (t.is_string() && any(t.as_string())) hit = true;
      }
    }
    sqlite3_result_int(ctx, hit ? 1 : 0);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// brine_meta_match(metadata_json, wanted_json): Salt's search_metadata rule,
// any key of wanted present in metadata with an equal value.
void SqlMetadataMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int mlen = 0, wlen = 0;
  const char* meta = ArgText(argv[0], &mlen);
  const char* wanted = ArgText(argv[1], &wlen);
  if (meta == nullptr || wanted == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value m = ParseJson(std::string_view(meta, static_cast<std::size_t>(mlen)));
    const Value w = ParseJson(std::string_view(wanted, static_cast<std::size_t>(wlen)));
    int hit = 0;
    if (w.is_map()) {
      for (const auto& [k, v] : w.as_map()) {
        const Value* have = m.Find(k);
        if (have != nullptr && *have == v) hit = 1;
      }
    }
    sqlite3_result_int(ctx, hit);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

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
void BindOutcome(SQLite::Statement& q, int first, const ReturnRow& row) {
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

// brine_jid_is_time(jid): 1 when the jid names a time (JidToMicros reads
// it), else 0. Retention ages only those by their text; every other jid
// ("12345", "0", "req") by when brine first saw it.
void SqlJidIsTime(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  int len = 0;
  const char* jid = ArgText(argv[0], &len);
  sqlite3_result_int(ctx, jid != nullptr && JidToMicros(std::string_view(jid, static_cast<std::size_t>(len))) ? 1 : 0);
}

// brine_first_match(patterns_json, text): the index of the first glob of the
// JSON list that matches text, -1 when none does or text is NULL. Retention
// by class: the first rule that matches decides.
void SqlFirstMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int plen = 0, tlen = 0;
  const char* patterns = ArgText(argv[0], &plen);
  const char* text = ArgText(argv[1], &tlen);
  if (patterns == nullptr || text == nullptr) {
    sqlite3_result_int(ctx, -1);
    return;
  }
  try {
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const std::string_view t(text, static_cast<std::size_t>(tlen));
    int i = 0;
    for (const Value& p : list.as_list()) {
      if (FnMatch(p.as_string(), t)) {
        sqlite3_result_int(ctx, i);
        return;
      }
      ++i;
    }
    sqlite3_result_int(ctx, -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

void RegisterFunctions(SQLite::Database& db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  sqlite3_create_function_v2(db.getHandle(), "brine_fnmatch", 2, flags, nullptr, SqlFnmatch,
                             nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_tgt_match", 2, flags, nullptr, SqlTargetMatch,
                             nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_meta_match", 2, flags, nullptr,
                             SqlMetadataMatch, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_jid_is_time", 1, flags, nullptr, SqlJidIsTime, nullptr, nullptr,
                             nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_first_match", 2, flags, nullptr, SqlFirstMatch, nullptr, nullptr,
                             nullptr);
}

void BindOptionalText(SQLite::Statement& q, int index, const std::optional<std::string>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

void BindOptionalInt(SQLite::Statement& q, int index, const std::optional<std::int64_t>& v) {
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
std::int64_t NextArrivalId(std::int64_t last, Micros received, const char* table) {
  if (last == std::numeric_limits<std::int64_t>::max()) {
    throw StoreError(std::string("no ") + table + " id is left after " + std::to_string(last) + ": the " + table +
                     " table holds a row at the largest time (year 294247), stored by an older brine; delete that row"
                     " (DELETE FROM " + table + " WHERE id = " + std::to_string(last) + ") with brine-master stopped");
  }
  return std::max(ToUnixMicros(received), last + 1);
}

class SqliteBackend final : public Backend, private MaintenanceBackend {
 public:
  SqliteBackend(const std::filesystem::path& path, const OpenOptions& options)
      : db_(detail::OpenConnection(path, options)) {
    RegisterFunctions(*db_);
    if (options.access != OpenOptions::Access::kReadOnly) {
      Guard("opening the store", Op::kWrite, [&] {
        LoadHighWaterMarks();
        // Bound, never spliced into the text: a NUL in an id would end the
        // statement there (issue 25, item 15).
        auto& add = Stmt("INSERT INTO master(name) VALUES (?) ON CONFLICT(name) DO NOTHING");
        add.bind(1, options.master_id);
        add.exec();
        add.reset();
        auto& q = Stmt("SELECT id FROM master WHERE name = ?");
        q.bind(1, options.master_id);
        q.executeStep();
        master_row_ = q.getColumn(0).getInt64();
        // A statement left on its row keeps a read snapshot open, and a
        // later BEGIN IMMEDIATE on a stale snapshot fails at once.
        q.reset();
      });
    }
  }

  ~SqliteBackend() override { Rollback(); }

  // --- transactions ---------------------------------------------------------------

  // No cached statement may carry a read snapshot into the write transaction:
  // SQLite cannot upgrade a stale one (SQLITE_BUSY_SNAPSHOT, returned without
  // waiting on the busy handler, and again on every retry).
  void Begin() override {
    ResetStatements();
    db_->exec("BEGIN IMMEDIATE");
    // An event's id is its arrival time kept above the last id, so the last
    // id is read again under the write lock: another connection (brine-master
    // beside an import, import_export's store for another master id) may have
    // added events since this one looked, and a stale mark gave two events
    // one id ("UNIQUE constraint failed: event.id").
    try {
      LoadHighWaterMarks();
    } catch (...) {
      db_->exec("ROLLBACK");
      throw;
    }
  }

  void Commit() override {
    FlushEvents();
    ResetStatements();
    db_->exec("COMMIT");
  }

  void Rollback() noexcept override {
    pending_events_.clear();
    ResetStatements();
    try {
      if (sqlite3_get_autocommit(db_->getHandle()) == 0) db_->exec("ROLLBACK");
    } catch (...) {
    }
    minions_.clear();
    try {
      LoadHighWaterMarks();
    } catch (...) {
    }
  }

  void EndCall() noexcept override { ResetStatements(); }

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowAsStoreError(context, op); }

  bool Shared() const override { return false; }

  // --- job cache primitives -----------------------------------------------------------

  JobState GetOrCreateJob(const std::string& jid, Micros seen) override {
    JobState entry;
    auto& q = Stmt("SELECT id, load_kind, nocache, metadata IS NOT NULL, stub_minions FROM job WHERE jid = ?");
    q.bind(1, jid);
    if (q.executeStep()) {
      entry.id = q.getColumn(0).getInt64();
      entry.load_kind = static_cast<LoadKind>(q.getColumn(1).getInt());
      entry.nocache = q.getColumn(2).getInt() != 0;
      entry.has_metadata = q.getColumn(3).getInt() != 0;
      entry.stub_minions = q.getColumn(4).getInt() != 0;
      q.reset();
    } else {
      auto& ins = Stmt("INSERT INTO job (jid, seen_us) VALUES (?, ?)");
      ins.bind(1, jid);
      ins.bind(2, ToUnixMicros(seen));
      ins.exec();
      entry.id = db_->getLastInsertRowid();
    }
    return entry;
  }

  void SetNocache(std::int64_t job) override {
    auto& q = Stmt("UPDATE job SET nocache = 1 WHERE id = ?");
    q.bind(1, job);
    q.exec();
  }

  // `user` is a generated column here (0004_forensics): members.fun only.
  void PutLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members, LoadKind kind,
               const std::optional<std::string>& metadata_json) override {
    auto& q = Stmt(
        "UPDATE job SET load = ?, fun = ?, load_kind = ?,"
        " metadata = coalesce(metadata, ?) WHERE id = ? AND (load_kind <> 3 OR ? = 3)");
    q.bind(1, load_json);
    BindOptionalText(q, 2, members.fun ? std::optional(*members.fun) : std::nullopt);
    q.bind(3, static_cast<int>(kind));
    BindOptionalText(q, 4, metadata_json);
    q.bind(5, job);
    q.bind(6, static_cast<int>(kind));
    q.exec();
  }

  void PutStubLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members,
                   std::string_view minion) override {
    auto& q = Stmt("UPDATE job SET load = ?, fun = ?, load_kind = 1, stub_minions = 1 WHERE id = ? AND load_kind = 0");
    q.bind(1, load_json);
    BindOptionalText(q, 2, members.fun ? std::optional(*members.fun) : std::nullopt);
    q.bind(3, job);
    q.exec();
    AddExpectedOne(job, MinionId(minion));
  }

  void DropStubMinions(std::int64_t job) override {
    auto& del = Stmt("DELETE FROM job_minion WHERE job_id = ?");
    del.bind(1, job);
    del.exec();
    auto& upd = Stmt("UPDATE job SET stub_minions = 0 WHERE id = ?");
    upd.bind(1, job);
    upd.exec();
  }

  void AddExpected(std::int64_t job, std::span<const std::string> minions) override {
    if (minions.size() == 1) return AddExpectedOne(job, MinionId(minions.front()));
    // One statement for the whole list, its ids as a JSON array: a statement
    // run per minion cost a VDBE start each (callgrind: 6,400 instructions a
    // row in ten-minion jobs).
    std::string ids = "[";
    for (const std::string& m : minions) {
      if (ids.size() > 1) ids += ',';
      ids += std::to_string(MinionId(m));
    }
    ids += ']';
    auto& q = Stmt("INSERT OR IGNORE INTO job_minion (job_id, minion_id) SELECT ?1, value FROM json_each(?2)");
    q.bind(1, job);
    q.bind(2, ids);
    q.exec();
  }

  std::optional<ReturnId> InsertReturn(const ReturnRow& row) override {
    auto& ins = Stmt(
        "INSERT INTO ret (job_id, minion_id, recv_us, success, retcode, full_ret)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, minion_id) DO NOTHING");
    ins.bind(1, row.job_id);
    ins.bind(2, MinionId(row.minion));
    ins.bind(3, ToUnixMicros(row.received));
    BindOutcome(ins, 4, row);
    ins.bind(6, *row.full_ret);
    ins.exec();
    if (db_->getChanges() == 0) return std::nullopt;
    return db_->getLastInsertRowid();
  }

  std::pair<ReturnId, std::string> StoredReturn(std::int64_t job, std::string_view minion) override {
    auto& q = Stmt("SELECT id, full_ret FROM ret WHERE job_id = ? AND minion_id = ?");
    q.bind(1, job);
    q.bind(2, MinionId(minion));
    q.executeStep();
    std::pair<ReturnId, std::string> out{q.getColumn(0).getInt64(), q.getColumn(1).getString()};
    q.reset();
    return out;
  }

  std::optional<std::pair<ReturnId, std::string>> FindReturn(const std::string& jid,
                                                             const std::string& minion) override {
    auto& q = Stmt(
        "SELECT r.id, r.full_ret FROM ret r JOIN job j ON j.id = r.job_id JOIN minion m ON m.id = r.minion_id"
        " WHERE j.jid = ? AND m.name = ?");
    q.bind(1, jid);
    q.bind(2, minion);
    std::optional<std::pair<ReturnId, std::string>> out;
    if (q.executeStep()) out.emplace(q.getColumn(0).getInt64(), q.getColumn(1).getString());
    q.reset();
    return out;
  }

  void ReplaceReturn(ReturnId id, const ReturnRow& row) override {
    FlushEvents();
    // Archived events that share the trimmed payload keep it as their own.
    SQLite::Statement keep(*db_, std::string(kDetachEvents) +
                                     " WHERE job_id = (SELECT job_id FROM ret WHERE id = ?1) AND ret_id = ?1");
    keep.bind(1, id);
    keep.exec();
    auto& q = Stmt("UPDATE ret SET full_ret = ?, success = ?, retcode = ? WHERE id = ?");
    q.bind(1, *row.full_ret);
    BindOutcome(q, 2, row);
    q.bind(4, id);
    q.exec();
  }

  void SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) override {
    auto& q = Stmt("UPDATE job SET metadata = ? WHERE id = ? AND metadata IS NULL");
    q.bind(1, metadata_json);
    q.bind(2, job);
    q.exec();
  }

  std::optional<std::pair<std::int64_t, std::string>> ReturnOwner(ReturnId id) override {
    auto& q = Stmt("SELECT r.job_id, m.name FROM ret AS r JOIN minion AS m ON m.id = r.minion_id WHERE r.id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::nullopt;
    std::pair<std::int64_t, std::string> owner{q.getColumn(0).getInt64(), q.getColumn(1).getString()};
    q.reset();
    return owner;
  }

  void AppendEvents(std::vector<EventRow>&& events) override {
    for (EventRow& e : events) {
      // The id is the arrival time, made strictly increasing.
      last_event_id_ = NextArrivalId(last_event_id_, e.received, "event");
      pending_events_.emplace_back(last_event_id_, std::move(e));
    }
    if (pending_events_.size() >= 2 * kEventsPerInsert) FlushEvents();
  }

  void Quarantine(std::string_view raw, const std::string& reason, Micros received) override {
    last_quarantine_id_ = NextArrivalId(last_quarantine_id_, received, "quarantine");
    auto& q = Stmt("INSERT INTO quarantine (id, reason, raw) VALUES (?, ?, ?)");
    q.bind(1, last_quarantine_id_);
    q.bind(2, reason);
    q.bind(3, raw.data(), static_cast<int>(raw.size()));
    q.exec();
  }

  void SetEndtime(std::int64_t job, const std::string& endtime) override {
    auto& q = Stmt("UPDATE job SET endtime = ? WHERE id = ?");
    q.bind(1, endtime);
    q.bind(2, job);
    q.exec();
  }

  CleanResult CleanOldJobs(const Retention& retention, std::int64_t max_rows) override {
    FlushEvents();
    CleanResult result;
    std::int64_t budget = max_rows;
    // With rules by class, each row's class is the first glob that matches
    // (brine_first_match; -1 for none, the default); each class goes by its own cut.
    const std::string tag_globs = Globs(retention.events_by_tag);
    const std::string tag_class =
        "brine_first_match(?3, coalesce(tag, (SELECT 'salt/job/' || j.jid || '/ret/' || m.name FROM ret AS r"
        " JOIN job AS j ON j.id = r.job_id JOIN minion AS m ON m.id = r.minion_id WHERE r.id = event.ret_id)))";
    for (std::size_t i = 0; i < retention.events_by_tag.size() && budget > 0; ++i) {
      if (!retention.events_by_tag[i].before) continue;
      const std::int64_t n = DeleteOlderRows("event", ToUnixMicros(*retention.events_by_tag[i].before), budget,
                                             tag_class + " = " + std::to_string(i), tag_globs);
      result.events += n;
      budget -= n;
    }
    if (retention.events_before && budget > 0) {
      const std::int64_t cut = ToUnixMicros(*retention.events_before);
      const std::int64_t n = retention.events_by_tag.empty()
                                 ? DeleteOlderRows("event", cut, budget, "", "")
                                 : DeleteOlderRows("event", cut, budget, tag_class + " = -1", tag_globs);
      result.events += n;
      budget -= n;
      if (budget > 0) {
        result.quarantined = DeleteOlderRows("quarantine", cut, budget, "", "");
        budget -= result.quarantined;
      }
    }
    const std::string fun_globs = Globs(retention.jobs_by_fun);
    for (std::size_t i = 0; i < retention.jobs_by_fun.size() && budget > 0; ++i) {
      if (!retention.jobs_by_fun[i].before) continue;
      DeleteOldJobs(*retention.jobs_by_fun[i].before, "brine_first_match(?4, fun) = " + std::to_string(i), fun_globs,
                    budget, result);
    }
    if (retention.jobs_before && budget > 0) {
      DeleteOldJobs(*retention.jobs_before, retention.jobs_by_fun.empty() ? "" : "brine_first_match(?4, fun) = -1",
                    fun_globs, budget, result);
    }
    result.more = budget <= 0;
    return result;
  }

  CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) override {
    FlushEvents();
    CleanResult result;
    std::int64_t budget = max_rows;
    constexpr std::int64_t kRowsPerStep = 500;
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
    while (result.bytes < bytes && budget > 0) {
      const auto job = OldestJob();
      const std::int64_t job_t = job ? job->second : kNone;
      const std::int64_t event_t = OldestId("event").value_or(kNone);
      const std::int64_t frame_t = OldestId("quarantine").value_or(kNone);
      if (job_t == kNone && event_t == kNone && frame_t == kNone) break;
      if (job_t <= event_t && job_t <= frame_t) {
        SQLite::Statement size(*db_,
                               "SELECT coalesce(length(CAST(load AS BLOB)), 0) +"
                               " coalesce((SELECT sum(length(CAST(full_ret AS BLOB))) FROM ret WHERE job_id = ?1), 0)"
                               " FROM job WHERE id = ?1");
        size.bind(1, job->first);
        if (size.executeStep()) result.bytes += size.getColumn(0).getInt64();
        size.reset();
        DeleteJob(job->first, budget, result);
      } else if (event_t <= frame_t) {
        std::int64_t n = 0;
        DeleteOldestRows("event",
                         "coalesce(length(CAST(data AS BLOB)), 0) + coalesce(length(CAST(tag AS BLOB)), 0)",
                         std::min(job_t, frame_t), std::min(budget, kRowsPerStep), n, result);
        result.events += n;
        budget -= n;
      } else {
        std::int64_t n = 0;
        DeleteOldestRows("quarantine", "length(raw) + length(CAST(reason AS BLOB))", std::min(job_t, event_t),
                         std::min(budget, kRowsPerStep), n, result);
        result.quarantined += n;
        budget -= n;
      }
    }
    result.more = result.bytes < bytes && budget <= 0;
    return result;
  }

  std::int64_t UsedBytes() override {
    return Read("used_bytes", [&] {
      return (PragmaInt("PRAGMA page_count") - PragmaInt("PRAGMA freelist_count")) * PragmaInt("PRAGMA page_size");
    });
  }

  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override {
    for (const auto& [name, value] : counters) {
      auto& q = Stmt(
          "INSERT INTO master_counter (master_id, name, value) VALUES (?, ?, ?)"
          " ON CONFLICT (master_id, name) DO UPDATE SET value = excluded.value");
      q.bind(1, master_row_);
      q.bind(2, name);
      q.bind(3, value);
      q.exec();
    }
  }

  void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) override {
    auto& q = Stmt(
        "INSERT INTO spool_progress (master_id, file_key, offset_bytes) VALUES (?, ?, ?)"
        " ON CONFLICT (master_id, file_key) DO UPDATE SET offset_bytes = excluded.offset_bytes");
    q.bind(1, master_row_);
    q.bind(2, file_key);
    q.bind(3, offset_bytes);
    q.exec();
  }

  void ForgetSpoolProgress(const std::string& file_key) override {
    auto& q = Stmt("DELETE FROM spool_progress WHERE master_id = ? AND file_key = ?");
    q.bind(1, master_row_);
    q.bind(2, file_key);
    q.exec();
  }

  // --- maintenance (MaintenanceBackend) ------------------------------------------------

  MaintenanceBackend* Maintenance() override { return this; }


  StoreMaintenance::SpaceInfo Space() override {
    return Read("space", [&] {
      StoreMaintenance::SpaceInfo info;
      info.page_size = PragmaInt("PRAGMA page_size");
      info.page_count = PragmaInt("PRAGMA page_count");
      info.freelist_count = PragmaInt("PRAGMA freelist_count");
      return info;
    });
  }

  void IncrementalVacuum(std::int64_t pages) override {
    Begin();
    {
      SQLite::Statement q(*db_, "PRAGMA incremental_vacuum(" + std::to_string(pages) + ")");
      while (q.executeStep()) {
      }
    }
    db_->exec("COMMIT");
  }

  void Checkpoint() override {
    Guard("checkpoint", Op::kWrite, [&] {
      SQLite::Statement q(*db_, "PRAGMA wal_checkpoint(TRUNCATE)");
      while (q.executeStep()) {
      }
    });
  }

  void RefreshStatistics() override {
    // ANALYZE writes sqlite_stat1: under the write lock, like a batch.
    Begin();
    store::RefreshStatistics(*db_);
    db_->exec("COMMIT");
  }

  // --- reads --------------------------------------------------------------------

  void BackupTo(const std::filesystem::path& to) override {
    // The copy holds every return, so it is private (0600) like the store,
    // and is made under a random name in a private 0700 folder beside `to`
    // (core/atomic_file.h), where SQLite also puts its -journal: another
    // account can plant no link there, and `to` itself must be a new name,
    // never a symlink, dangling or not (issue 25, item 9).
    std::optional<AtomicFile> file;
    try {
      file.emplace(to, AtomicFile::Options{.mode = 0600,
                                           .replace = AtomicFile::Replace::kNever,
                                           .staging = AtomicFile::Staging::kPrivateFolder});
    } catch (const FileError& e) {
      throw StoreError(std::string("backup: ") + e.what());
    }
    // SQLite's online backup API in one step: the source's read transaction
    // spans the whole copy, so it is the store as of one commit while the
    // writer goes on in WAL mode. (VACUUM INTO would compact too, but needs a
    // writable connection, and brine-run's is read-only.)
    (void)Read("backup", [&] {
      SQLite::Database dest(file->temp_path().string(), SQLite::OPEN_READWRITE);
      SQLite::Backup backup(dest, *db_);
      const int rc = backup.executeStep(-1);
      if (rc != SQLITE_DONE) throw SQLite::Exception("backup did not complete", rc);
      // One self-contained file: no -wal beside it to copy or lose.
      dest.exec("PRAGMA journal_mode = DELETE");
      return 0;
    });
    try {
      file->Commit();
    } catch (const FileError& e) {
      throw StoreError(std::string("backup: ") + e.what());
    }
  }

  Store::RowCounts CountRows() override {
    return Read("count_rows", [&] {
      Store::RowCounts c;
      SQLite::Statement jobs(*db_, "SELECT count(*) FROM job");
      if (jobs.executeStep()) c.jobs = jobs.getColumn(0).getInt64();
      SQLite::Statement events(*db_, "SELECT count(*) FROM event");
      if (events.executeStep()) c.events = events.getColumn(0).getInt64();
      return c;
    });
  }

  std::string IntegrityCheck() override {
    return Read("integrity_check", [&] {
      SQLite::Statement q(*db_, "PRAGMA integrity_check(10)");
      std::string out;
      while (q.executeStep()) out += (out.empty() ? "" : "; ") + q.getColumn(0).getString();
      return out;
    });
  }

  std::optional<Micros> OldestEvent() override {
    return Read("oldest_event", [&]() -> std::optional<Micros> {
      SQLite::Statement q(*db_, "SELECT min(id) FROM event");
      if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
      return FromUnixMicros(q.getColumn(0).getInt64());
    });
  }

  Value GetCounters() override {
    return Read("get_counters", [&] {
      SQLite::Statement q(*db_, "SELECT master_id, name, value FROM brine_counters ORDER BY master_id, name");
      Value out = Value::EmptyMap();
      while (q.executeStep()) {
        const std::string master = q.getColumn(0).getString();
        Value* m = out.Find(master);
        if (m == nullptr) {
          out.Set(master, Value::EmptyMap());
          m = out.Find(master);
        }
        m->Set(q.getColumn(1).getString(), static_cast<long long>(q.getColumn(2).getInt64()));
      }
      return out;
    });
  }

  std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() override {
    return Read("get_spool_progress", [&] {
      SQLite::Statement q(*db_, "SELECT file_key, offset_bytes FROM spool_progress WHERE master_id = ? ORDER BY file_key");
      q.bind(1, master_row_);
      std::vector<std::pair<std::string, std::int64_t>> out;
      while (q.executeStep()) out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getInt64());
      return out;
    });
  }

  Value GetLoad(const std::string& jid) override {
    return Read("get_load", [&] {
      auto& q = Stmt("SELECT id, load FROM job WHERE jid = ?");
      q.bind(1, jid);
      if (!q.executeStep() || q.getColumn(1).isNull()) return Value::EmptyMap();
      const std::int64_t job_id = q.getColumn(0).getInt64();
      Value load = ParseJson(q.getColumn(1).getString());
      q.reset();
      ValueList minions;
      for (std::string& m : ExpectedMinions(job_id)) minions.emplace_back(std::move(m));
      if (!minions.empty()) load.Set("Minions", Value(std::move(minions)));
      return load;
    });
  }

  Value GetJid(const std::string& jid) override {
    return Read("get_jid", [&] {
      Value out = Value::EmptyMap();
      static constexpr std::string_view kKeys[] = {"return", "retcode", "success", "out"};
      ForEachReturn(jid, kKeys, [&](std::string minion, Value full) {
        Value r = Value::EmptyMap();
        for (const std::string_view key : kKeys) {
          if (Value* v = full.Find(key)) r.as_map().emplace_back(key, std::move(*v));
        }
        out.as_map().emplace_back(std::move(minion), std::move(r));
      });
      return out;
    });
  }

  Value GetJidFull(const std::string& jid) override {
    return Read("get_jid", [&] {
      Value out = Value::EmptyMap();
      ForEachReturn(jid, {}, [&](std::string minion, Value full) {
        out.as_map().emplace_back(std::move(minion), std::move(full));
      });
      return out;
    });
  }

  void ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) override {
    std::exception_ptr caller_failure;
    const auto deliver = [&](std::string_view minion, std::string_view text) {
      if (caller_failure) return;
      try {
        fn(minion, text);
      } catch (...) {
        caller_failure = std::current_exception();
      }
    };
    const auto text_of = [](const SQLite::Column& c) {
      return std::string_view(c.getText(), static_cast<std::size_t>(c.getBytes()));
    };
    Read("get_jid", [&] {
      // The count first, from ret's (job_id, minion_id) index. Its statement
      // stays open until the rows are read, so both read one snapshot.
      auto& count = Stmt("SELECT count(*) FROM job AS j JOIN ret AS r ON r.job_id = j.id WHERE j.jid = ?");
      count.bind(1, jid);
      count.executeStep();
      const std::int64_t n = count.getColumn(0).getInt64();
      auto& q = Stmt(kReturnsSql);
      q.bind(1, jid);
      if (n <= 1) {
        // One return (the big ones: a 50 MB pillar dict) is handed out from
        // SQLite's own buffer: a copy would be one more return's size in RSS.
        while (q.executeStep()) deliver(text_of(q.getColumn(0)), text_of(q.getColumn(1)));
      } else {
        // Sorted here rather than by ORDER BY, whose sorter copies every
        // payload: names and texts go into one buffer (not a string per row)
        // and positions are sorted.
        struct Row {
          std::size_t at, name_size, text_size;
        };
        std::string arena;
        std::vector<Row> rows;
        rows.reserve(static_cast<std::size_t>(n));
        while (q.executeStep()) {
          const std::string_view name = text_of(q.getColumn(0));
          const std::string_view text = text_of(q.getColumn(1));
          rows.push_back({arena.size(), name.size(), text.size()});
          arena += name;
          arena += text;
        }
        const auto name_of = [&](const Row& r) { return std::string_view(arena).substr(r.at, r.name_size); };
        std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return name_of(a) < name_of(b); });
        for (const Row& r : rows) {
          deliver(name_of(r), std::string_view(arena).substr(r.at + r.name_size, r.text_size));
        }
      }
      q.reset();
      count.reset();
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  void ForEachJob(const JobFilter& filter, const std::function<void(JobRecord&&)>& fn) override {
    // The caller's own failures pass through untranslated.
    std::exception_ptr caller_failure;
    const auto deliver = [&](JobRecord&& r) {
      try {
        fn(std::move(r));
        return true;
      } catch (...) {
        caller_failure = std::current_exception();
        return false;
      }
    };
    Read("get_jids", [&] {
      std::string sql = "SELECT jid, load, metadata, endtime FROM job WHERE load IS NOT NULL";
      std::vector<std::string> binds;
      if (filter.jid_min) {
        sql += " AND jid >= ?";
        binds.push_back(*filter.jid_min);
      }
      if (filter.jid_max) {
        sql += " AND jid <= ?";
        binds.push_back(*filter.jid_max);
      }
      if (!filter.function_globs.empty()) {
        const bool literal = std::all_of(filter.function_globs.begin(), filter.function_globs.end(),
                                         [](const std::string& g) { return IsLiteralGlob(g); });
        if (literal) {
          // Plain names use the (fun, jid) index.
          sql += " AND fun IN (";
          for (std::size_t i = 0; i < filter.function_globs.size(); ++i) {
            sql += i == 0 ? "?" : ", ?";
            binds.push_back(filter.function_globs[i]);
          }
          sql += ")";
        } else {
          sql += " AND brine_fnmatch(?, fun)";
          binds.push_back(ToJson(StringList(filter.function_globs)));
        }
      }
      for (const std::string& f : filter.exclude_functions) {
        sql += " AND fun IS NOT ?";
        binds.push_back(f);
      }
      if (!filter.target_globs.empty()) {
        sql += " AND brine_tgt_match(load, ?)";
        binds.push_back(ToJson(StringList(filter.target_globs)));
      }
      if (filter.has_returns) {
        sql += *filter.has_returns ? " AND EXISTS" : " AND NOT EXISTS";
        sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id)";
      }
      if (filter.has_failures) {
        sql += *filter.has_failures ? " AND EXISTS" : " AND NOT EXISTS";
        sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id AND (ret.retcode <> 0 OR ret.success = 0))";
      }
      if (filter.metadata) {
        sql += " AND brine_meta_match(metadata, ?)";
        binds.push_back(ToJson(*filter.metadata));
      }
      sql += filter.limit ? " ORDER BY jid DESC LIMIT " + std::to_string(*filter.limit)
                          : " ORDER BY jid";
      SQLite::Statement q(*db_, sql);
      for (std::size_t i = 0; i < binds.size(); ++i) q.bind(static_cast<int>(i + 1), binds[i]);
      auto record = [&] {
        JobRecord r;
        r.jid = q.getColumn(0).getString();
        const SQLite::Column load = q.getColumn(1);
        const std::string_view text(load.getText(), static_cast<std::size_t>(load.getBytes()));
        if (filter.json_text) {
          r.load_json = text;
          if (!q.getColumn(2).isNull()) r.metadata_json = q.getColumn(2).getString();
        } else {
          r.load = ParseJson(text);
          if (!q.getColumn(2).isNull()) r.metadata = ParseJson(q.getColumn(2).getString());
        }
        if (!q.getColumn(3).isNull()) r.endtime = q.getColumn(3).getString();
        return r;
      };
      if (filter.limit) {
        // Newest first from the index, handed out oldest first.
        std::vector<JobRecord> newest;
        while (q.executeStep()) newest.push_back(record());
        for (auto it = newest.rbegin(); it != newest.rend() && deliver(std::move(*it)); ++it) {
        }
      } else {
        while (q.executeStep() && deliver(record())) {
        }
      }
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  void ForEachStoredJob(const std::optional<std::string>& jid_min, const std::optional<std::string>& jid_max,
                        const std::function<void(StoredJob&&)>& fn) override {
    std::exception_ptr caller_failure;
    Read("export_jobs", [&] {
      // The outer statement holds one read transaction open until it is
      // done, so the inner ones read the same snapshot.
      SQLite::Statement q(*db_,
                          "SELECT id, jid, load_kind, load, metadata, nocache, endtime, seen_us FROM job"
                          " WHERE (?1 IS NULL OR jid >= ?1) AND (?2 IS NULL OR jid <= ?2) ORDER BY jid");
      if (jid_min) q.bind(1, *jid_min);
      if (jid_max) q.bind(2, *jid_max);
      SQLite::Statement minions(*db_,
                                "SELECT m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
                                " WHERE jm.job_id = ? ORDER BY m.name");
      SQLite::Statement rets(*db_,
                             "SELECT m.name, r.recv_us, r.full_ret FROM ret AS r JOIN minion AS m ON m.id = r.minion_id"
                             " WHERE r.job_id = ? ORDER BY r.id");
      while (!caller_failure && q.executeStep()) {
        StoredJob job;
        const std::int64_t id = q.getColumn(0).getInt64();
        job.jid = q.getColumn(1).getString();
        job.origin = detail::OriginOf(q.getColumn(2).getInt());
        if (!q.getColumn(3).isNull()) job.load_json = q.getColumn(3).getString();
        if (!q.getColumn(4).isNull()) job.metadata_json = q.getColumn(4).getString();
        job.nocache = q.getColumn(5).getInt() != 0;
        if (!q.getColumn(6).isNull()) job.endtime = q.getColumn(6).getString();
        job.seen = FromUnixMicros(q.getColumn(7).getInt64());
        minions.bind(1, id);
        while (minions.executeStep()) job.minions.push_back(minions.getColumn(0).getString());
        minions.reset();
        rets.bind(1, id);
        while (rets.executeStep()) {
          job.returns.push_back({.minion = rets.getColumn(0).getString(),
                                 .received = FromUnixMicros(rets.getColumn(1).getInt64()),
                                 .full_ret_json = rets.getColumn(2).getString()});
        }
        rets.reset();
        detail::Deliver(fn, std::move(job), caller_failure);
      }
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                    const std::function<void(ArchivedEvent&&)>& fn) override {
    std::exception_ptr caller_failure;
    Read("export_events", [&] {
      // salt_events' rows, without its UNION (whose ORDER BY would sort the
      // whole window in a temp b-tree): the event's id is its order.
      SQLite::Statement q(*db_,
                          "SELECT e.id, ms.name, coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name),"
                          " coalesce(e.data, r.full_ret), e.ret_id IS NOT NULL AND e.stamp IS NOT NULL, e.stamp"
                          " FROM event AS e JOIN master AS ms ON ms.id = e.master_id"
                          " LEFT JOIN ret AS r ON r.id = e.ret_id LEFT JOIN job AS j ON j.id = r.job_id"
                          " LEFT JOIN minion AS m ON m.id = r.minion_id"
                          " WHERE e.id >= ?1 AND e.id < ?2 ORDER BY e.id");
      q.bind(1, from ? ToUnixMicros(*from) : std::numeric_limits<std::int64_t>::min());
      q.bind(2, until ? ToUnixMicros(*until) : std::numeric_limits<std::int64_t>::max());
      while (!caller_failure && q.executeStep()) {
        ArchivedEvent e{.received = FromUnixMicros(q.getColumn(0).getInt64()),
                        .master_id = q.getColumn(1).getString(),
                        .tag = q.getColumn(2).getString(),
                        .data_json = q.getColumn(3).getString()};
        if (q.getColumn(4).getInt() != 0) e.data_json = detail::WithStamp(e.data_json, q.getColumn(5).getString());
        detail::Deliver(fn, std::move(e), caller_failure);
      }
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  Value GetFun(const std::string& fun) override {
    return Read("get_fun", [&] {
      SQLite::Statement q(*db_,
                          "SELECT m.name, r.full_ret FROM"
                          " (SELECT r.minion_id AS mid, max(j.jid) AS jid FROM job AS j"
                          "  JOIN ret AS r ON r.job_id = j.id WHERE j.fun = ? GROUP BY r.minion_id) AS x"
                          " JOIN job AS j ON j.jid = x.jid"
                          " JOIN ret AS r ON r.job_id = j.id AND r.minion_id = x.mid"
                          " JOIN minion AS m ON m.id = x.mid ORDER BY m.name");
      q.bind(1, fun);
      Value out = Value::EmptyMap();
      while (q.executeStep()) {
        out.as_map().emplace_back(q.getColumn(0).getString(), ParseJson(q.getColumn(1).getString()));
      }
      return out;
    });
  }

  std::vector<std::string> GetMinions() override {
    return Read("get_minions", [&] {
      SQLite::Statement q(*db_,
                          "SELECT name FROM minion AS m WHERE EXISTS"
                          " (SELECT 1 FROM ret WHERE minion_id = m.id) ORDER BY name");
      std::vector<std::string> out;
      while (q.executeStep()) out.push_back(q.getColumn(0).getString());
      return out;
    });
  }

  std::optional<std::string> GetEndtime(const std::string& jid) override {
    return Read("get_endtime", [&]() -> std::optional<std::string> {
      auto& q = Stmt("SELECT endtime FROM job WHERE jid = ?");
      q.bind(1, jid);
      if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
      return q.getColumn(0).getString();
    });
  }

  int SchemaVersion() override {
    return Read("schema_version", [&] { return ReadSchemaVersion(*db_); });
  }

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

  // The archive's rows wait in pending_events_ (AppendEvents) and go in
  // kEventsPerInsert to a statement: a statement per event cost a VDBE start
  // each. Everything that reads or changes the event table flushes first:
  // Commit, Read, ReplaceReturn, CleanOldJobs, PruneOldest; Rollback drops them.
  void FlushEvents() {
    // The statements' texts live as long as the cache that keys them by address.
    static const auto rows = [](std::size_t n) {
      std::string sql = "INSERT INTO event (id, master_id, job_id, tag, data, ret_id, stamp) VALUES ";
      for (std::size_t i = 0; i < n; ++i) sql += i == 0 ? "(?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?)";
      return sql;
    };
    static const std::string many = rows(kEventsPerInsert);
    static const std::string one = rows(1);
    std::size_t i = 0;
    for (; pending_events_.size() - i >= kEventsPerInsert; i += kEventsPerInsert) {
      auto& q = Stmt(many.c_str());
      for (std::size_t k = 0; k < kEventsPerInsert; ++k) BindEvent(q, static_cast<int>(7 * k), pending_events_[i + k]);
      q.exec();
    }
    for (; i < pending_events_.size(); ++i) {
      auto& q = Stmt(one.c_str());
      BindEvent(q, 0, pending_events_[i]);
      q.exec();
    }
    pending_events_.clear();
  }

  void BindEvent(SQLite::Statement& q, int base, const std::pair<std::int64_t, EventRow>& event) {
    const EventRow& e = event.second;
    q.bind(base + 1, event.first);
    q.bind(base + 2, master_row_);
    BindOptionalInt(q, base + 3, e.job_id);
    BindOptionalText(q, base + 4, e.tag);
    BindOptionalText(q, base + 5, e.data);
    BindOptionalInt(q, base + 6, e.ret_id);
    BindOptionalText(q, base + 7, e.stamp);
  }

  std::int64_t PragmaInt(const std::string& pragma) {
    SQLite::Statement q(*db_, pragma);
    q.executeStep();
    return q.getColumn(0).getInt64();
  }

  void LoadHighWaterMarks() {
    SQLite::Statement e(*db_, "SELECT coalesce(max(id), 0) FROM event");
    e.executeStep();
    last_event_id_ = e.getColumn(0).getInt64();
    SQLite::Statement q(*db_, "SELECT coalesce(max(id), 0) FROM quarantine");
    q.executeStep();
    last_quarantine_id_ = q.getColumn(0).getInt64();
  }

  std::int64_t MinionId(std::string_view name_view) {
    if (auto it = minions_.find(name_view); it != minions_.end()) return it->second;
    const std::string name(name_view);
    auto& q = Stmt("SELECT id FROM minion WHERE name = ?");
    q.bind(1, name);
    std::int64_t id = 0;
    if (q.executeStep()) {
      id = q.getColumn(0).getInt64();
      q.reset();
    } else {
      auto& ins = Stmt("INSERT INTO minion (name) VALUES (?)");
      ins.bind(1, name);
      ins.exec();
      id = db_->getLastInsertRowid();
    }
    if (minions_.size() >= kMaxCachedMinions) minions_.clear();
    minions_.emplace(name, id);
    return id;
  }

  void AddExpectedOne(std::int64_t job_id, std::int64_t minion_id) {
    auto& q = Stmt("INSERT OR IGNORE INTO job_minion (job_id, minion_id) VALUES (?, ?)");
    q.bind(1, job_id);
    q.bind(2, minion_id);
    q.exec();
  }

  std::vector<std::string> ExpectedMinions(std::int64_t job_id) {
    auto& q = Stmt(
        "SELECT m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
        " WHERE jm.job_id = ? ORDER BY m.name");
    q.bind(1, job_id);
    std::vector<std::string> out;
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  }

  // Each return of a jid with its minion's name, in no particular order.
  static constexpr const char* kReturnsSql =
      "SELECT m.name, r.full_ret FROM job AS j JOIN ret AS r ON r.job_id = j.id"
      " JOIN minion AS m ON m.id = r.minion_id WHERE j.jid = ?";

  template <class F>
  void ForEachReturn(const std::string& jid, std::span<const std::string_view> keys, F&& f) {
    // Sorted here rather than by ORDER BY: SQLite's sorter would copy every
    // payload, and one return can be 50 MB. std::string's order is SQLite's
    // BINARY collation (bytes compared unsigned).
    auto& q = Stmt(kReturnsSql);
    q.bind(1, jid);
    std::vector<std::pair<std::string, Value>> rows;
    while (q.executeStep()) {
      const SQLite::Column full = q.getColumn(1);
      const std::string_view text(full.getText(), static_cast<std::size_t>(full.getBytes()));
      rows.emplace_back(q.getColumn(0).getString(), keys.empty() ? ParseJson(text) : ParseJsonMembers(text, keys));
    }
    q.reset();
    // Positions are sorted, not the rows: moving a parsed return is dearer than an index.
    std::vector<std::size_t> order(rows.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a].first < rows[b].first; });
    for (const std::size_t i : order) f(std::move(rows[i].first), std::move(rows[i].second));
  }

  static std::string Globs(const std::vector<RetentionRule>& rules) {
    Value list = Value::EmptyList();
    for (const RetentionRule& r : rules) list.as_list().emplace_back(r.glob);
    return ToJson(list);
  }

  // Deletes the oldest rows of `table` before `cut` for which `condition`
  // (SQL; ?3 is `globs`) holds, at most `budget`.
  std::int64_t DeleteOlderRows(const std::string& table, std::int64_t cut, std::int64_t budget,
                               const std::string& condition, const std::string& globs) {
    SQLite::Statement q(*db_, "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table + " WHERE id < ?1" +
                                  (condition.empty() ? "" : " AND " + condition) + " ORDER BY id LIMIT ?2)");
    q.bind(1, cut);
    q.bind(2, budget);
    if (!condition.empty()) q.bind(3, globs);
    return q.exec();
  }

  // Deletes jobs older than `before` for which `condition` (SQL over job; ?4
  // is `globs`) holds, with their returns and expected minions.
  void DeleteOldJobs(Micros before, const std::string& condition, const std::string& globs, std::int64_t& budget,
                     CleanResult& result) {
    // Jids that name a time are UTC times, so their text order is time
    // order; every other jid (rare, hand-made: "req", "12345", "0") ages by
    // when brine first saw it. A numeric jid that is not a time sorts before
    // every real one, so the digit test alone would delete it at once.
    // (AND evaluates left to right: the function runs only on candidates.)
    const std::string and_condition = condition.empty() ? "" : " AND " + condition;
    SQLite::Statement pick(*db_,
                           "SELECT id FROM job WHERE jid < ?1 AND jid GLOB '[0-9]*' AND brine_jid_is_time(jid)" +
                               and_condition +
                               " UNION ALL SELECT id FROM job WHERE seen_us < ?2"
                               " AND NOT (jid GLOB '[0-9]*' AND brine_jid_is_time(jid))" +
                               and_condition + " LIMIT ?3");
    pick.bind(1, FormatJid(before));
    pick.bind(2, ToUnixMicros(before));
    pick.bind(3, budget);
    if (!condition.empty()) pick.bind(4, globs);
    std::vector<std::int64_t> ids;
    while (pick.executeStep()) ids.push_back(pick.getColumn(0).getInt64());
    pick.reset();
    for (std::int64_t id : ids) {
      if (budget <= 0) break;
      DeleteJob(id, budget, result);
    }
  }

  // Deletes one job with its returns and expected minions.
  void DeleteJob(std::int64_t id, std::int64_t& budget, CleanResult& result) {
    // Archived events that share a return's payload get their own copy first.
    SQLite::Statement keep(*db_, std::string(kDetachEvents) + " WHERE job_id = ?1 AND ret_id IS NOT NULL");
    keep.bind(1, id);
    keep.exec();
    SQLite::Statement unlink(*db_, "UPDATE event SET job_id = NULL WHERE job_id = ?");
    unlink.bind(1, id);
    unlink.exec();
    SQLite::Statement rets(*db_, "DELETE FROM ret WHERE job_id = ?");
    rets.bind(1, id);
    const int n = rets.exec();
    SQLite::Statement expected(*db_, "DELETE FROM job_minion WHERE job_id = ?");
    expected.bind(1, id);
    expected.exec();
    SQLite::Statement job(*db_, "DELETE FROM job WHERE id = ?");
    job.bind(1, id);
    job.exec();
    result.returns += n;
    result.jobs += 1;
    budget -= n + 1;
  }

  // The oldest job: its row id and time (its jid's, or when first seen).
  std::optional<std::pair<std::int64_t, std::int64_t>> OldestJob() {
    SQLite::Statement q(*db_, "SELECT id, jid, seen_us FROM job ORDER BY jid LIMIT 1");
    if (!q.executeStep()) return std::nullopt;
    const auto t = JidToMicros(q.getColumn(1).getString());
    return std::pair(q.getColumn(0).getInt64(), t ? ToUnixMicros(*t) : q.getColumn(2).getInt64());
  }

  std::optional<std::int64_t> OldestId(const char* table) {
    SQLite::Statement q(*db_, std::string("SELECT min(id) FROM ") + table);
    if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
    return q.getColumn(0).getInt64();
  }

  // Deletes up to `n` of the oldest rows of `table` (event or quarantine: the
  // id is the arrival time) up to `until` (inclusive), adding their payload bytes.
  void DeleteOldestRows(const char* table, const char* payload, std::int64_t until, std::int64_t n,
                        std::int64_t& count, CleanResult& result) {
    SQLite::Statement q(*db_, std::string("SELECT count(*), coalesce(sum(") + payload + "), 0), max(id) FROM (SELECT * FROM " +
                                  table + " WHERE id <= ?1 ORDER BY id LIMIT ?2)");
    q.bind(1, until);
    q.bind(2, n);
    q.executeStep();
    const std::int64_t rows = q.getColumn(0).getInt64();
    if (rows == 0) return;
    result.bytes += q.getColumn(1).getInt64();
    const std::int64_t last = q.getColumn(2).getInt64();
    q.reset();
    SQLite::Statement del(*db_, std::string("DELETE FROM ") + table + " WHERE id <= ?");
    del.bind(1, last);
    count += del.exec();
  }

  std::unique_ptr<SQLite::Database> db_;
  detail::StatementCache statements_;  // after db_: destroyed first
  std::int64_t master_row_ = 0;
  std::int64_t last_event_id_ = 0;
  std::vector<std::pair<std::int64_t, EventRow>> pending_events_;  // (id, row), FlushEvents
  std::int64_t last_quarantine_id_ = 0;
  // Minion rows this connection wrote or read; dropped on rollback.
  // Looked up by string_view without making a string (a name is rarely
  // short enough for the small-string buffer).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::int64_t, NameHash, std::equal_to<>> minions_;
};

}  // namespace

std::unique_ptr<detail::Backend> detail::OpenSqliteBackend(const std::filesystem::path& path,
                                                            const OpenOptions& options) {
  return std::make_unique<SqliteBackend>(path, options);
}

int LatestSchemaVersion() { return static_cast<int>(EmbeddedMigrations().size()); }

std::string SqliteVersion() { return sqlite3_libversion(); }

}  // namespace brine::store
