// The SQLite implementation of brine::store::Store. Layout: migrations/*.sql
// and docs/schema.md.
#include <sqlite3.h>

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <exception>
#include <unistd.h>
#include <unordered_map>

#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "connection.h"
#include "statement_cache.h"
#include "migrations.h"

namespace brine::store {
namespace {

using detail::Op;
using detail::RethrowAsStoreError;

constexpr std::size_t kMaxCachedJobs = 200000;
// Minion name -> row id. A fleet that churns names (cloud instances) would
// otherwise grow it for ever (+82 MB per 600k names); past the bound it
// starts again, and a name not cached costs one indexed lookup.
constexpr std::size_t kMaxCachedMinions = 100000;

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

// Binds a return's `success` (0/1) and `retcode` (an int) at `first` and
// first + 1, NULL where the return has none of that type.
void BindOutcome(SQLite::Statement& q, int first, const Value& ret) {
  if (const Value* s = ret.Find("success"); s != nullptr && s->is_bool()) {
    q.bind(first, s->as_bool() ? 1 : 0);
  } else {
    q.bind(first);
  }
  if (const Value* rc = ret.Find("retcode"); rc != nullptr && rc->kind() == Value::Kind::kInt) {
    q.bind(first + 1, static_cast<std::int64_t>(rc->as_int()));
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
}

// The metadata Salt's format_job_instance would show for a load: a dict under
// `metadata`, else under `kwargs.metadata`.
const Value* LoadMetadata(const Value& load) {
  if (const Value* m = load.Find("metadata"); m != nullptr && m->is_map()) return m;
  if (const Value* kw = load.Find("kwargs"); kw != nullptr) {
    if (const Value* m = kw->Find("metadata"); m != nullptr && m->is_map()) return m;
  }
  // Newer clients pass keyword arguments as a dict marked __kwarg__ in `arg`.
  if (const Value* args = load.Find("arg"); args != nullptr && args->is_list()) {
    for (const Value& a : args->as_list()) {
      const Value* marker = a.Find("__kwarg__");
      if (marker != nullptr && marker->Truthy()) {
        if (const Value* m = a.Find("metadata"); m != nullptr && m->is_map()) return m;
      }
    }
  }
  return nullptr;
}

// The jid a job event belongs to, or "" for events that are not job events.
std::string JobEventJid(std::string_view tag, const Value& data) {
  constexpr std::string_view kPrefix = "salt/job/";
  if (tag.substr(0, kPrefix.size()) == kPrefix) {
    const std::string_view rest = tag.substr(kPrefix.size());
    const auto slash = rest.find('/');
    return std::string(rest.substr(0, slash));
  }
  if (IsJid(tag)) return std::string(tag);
  if (tag == "new_job") {
    if (const std::string* jid = data.FindString("jid")) return *jid;
  }
  return "";
}

void BindOptionalText(SQLite::Statement& q, int index, const std::optional<std::string>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

class SqliteStore final : public Store {
 public:
  SqliteStore(const std::filesystem::path& path, const OpenOptions& options)
      : options_(options),
        clock_(options.clock != nullptr ? options.clock : &system_clock_),
        jids_(*clock_, JidUniqueness::kPlain, static_cast<long>(getpid())),
        db_(detail::OpenConnection(path, options)) {
    RegisterFunctions(*db_);
    read_only_ = options.access == OpenOptions::Access::kReadOnly;
    if (!read_only_) {
      Guard("opening the store", Op::kWrite, [&] {
        LoadHighWaterMarks();
        db_->exec("INSERT INTO master(name) VALUES (" + Quote(options.master_id) +
                  ") ON CONFLICT(name) DO NOTHING");
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

  ~SqliteStore() override {
    if (in_batch_) RollbackBatchImpl();
  }

  // --- writes -------------------------------------------------------------------

  std::string PrepJid(Caching caching, const std::optional<std::string>& passed_jid) override {
    std::string jid = passed_jid.value_or(jids_.Next());
    Write("prep_jid", [&] {
      JobEntry& job = EnsureJob(jid);
      if (caching == Caching::kNoCache && !job.nocache) {
        auto& q = Stmt("UPDATE job SET nocache = 1 WHERE id = ?");
        q.bind(1, job.id);
        q.exec();
        job.nocache = true;
      }
    });
    return jid;
  }

  void SaveLoad(const std::string& jid, const Value& load,
                const std::optional<std::vector<std::string>>& minions) override {
    if (!load.is_map()) throw StoreError("save_load: the load of " + jid + " is not a map");
    Write("save_load", [&] {
      JobEntry& job = EnsureJob(jid);
      if (job.load_kind != kLoadCachePublish) PutLoad(job, load, kLoadPublish);
      if (minions) MergeMinions(job, *minions);
    });
  }

  void SaveCacheLoad(const std::string& jid, const Value& load,
                     const std::optional<std::vector<std::string>>& minions) override {
    if (!load.is_map()) throw StoreError("save_load: the load of " + jid + " is not a map");
    const std::string* cmd = load.FindString("cmd");
    Write("save_load", [&] {
      JobEntry& job = EnsureJob(jid);
      if (cmd != nullptr && *cmd == "publish") {
        PutLoad(job, load, kLoadCachePublish);
      } else if (cmd != nullptr && *cmd == "_return") {
        // store_job hands every return to save_load when the cache is not
        // local_cache (spec 7.1 step 11); the publish load must survive it
        // (case C6). A job with no load yet gets Returner's stub.
        const Value* minion = load.Find("id");
        if (job.load_kind == kLoadNone && minion != nullptr && minion->is_string() && !minion->as_string().empty()) {
          SaveStubLoad(job, jid, load, MinionId(minion->as_string()));
        }
      } else if (job.load_kind != kLoadCachePublish) {
        PutLoad(job, load, kLoadPublish);
      }
      if (minions) MergeMinions(job, *minions);
    });
  }

  void SaveMinions(const std::string& jid, const std::vector<std::string>& minions,
                   const std::optional<std::string>&) override {
    Write("save_minions", [&] { MergeMinions(EnsureJob(jid), minions); });
  }

  ReturnOutcome Returner(const Value& ret) override {
    ReturnOutcome out;
    const std::string* jid_in = ret.FindString("jid");
    const std::string* minion = ret.FindString("id");
    if (!ret.is_map() || jid_in == nullptr || minion == nullptr || minion->empty() ||
        ret.Find("return") == nullptr) {
      return out;
    }
    std::string jid = *jid_in;
    if (jid == "req") {
      const Value* nocache = ret.Find("nocache");
      jid = PrepJid(nocache != nullptr && nocache->Truthy() ? Caching::kNoCache : Caching::kCache,
                    std::nullopt);
    }
    out.jid = jid;
    const std::string full_ret = ToJson(ret);
    Write("returner", [&] {
      JobEntry& job = EnsureJob(jid);
      if (job.nocache) return;
      const std::int64_t minion_id = MinionId(*minion);
      auto& ins = Stmt(
          "INSERT INTO ret (job_id, minion_id, recv_us, success, retcode, full_ret)"
          " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, minion_id) DO NOTHING");
      ins.bind(1, job.id);
      ins.bind(2, minion_id);
      ins.bind(3, ToUnixMicros(clock_->Now()));
      BindOutcome(ins, 4, ret);
      ins.bind(6, full_ret);
      ins.exec();
      if (db_->getChanges() == 0) {
        ClassifyRepeat(job.id, minion_id, ret, out);
        return;
      }
      out.kind = ReturnOutcome::Kind::kStored;
      out.id = db_->getLastInsertRowid();
      batch_returns_[out.id] = {job.id, minion_id};
      if (job.load_kind == kLoadNone) {
        SaveStubLoad(job, jid, ret, minion_id);
      } else if (job.stub_minions) {
        AddExpected(job.id, minion_id);
      }
      if (!job.has_metadata) {
        if (const Value* m = ret.Find("metadata"); m != nullptr && m->is_map()) {
          auto& q = Stmt("UPDATE job SET metadata = ? WHERE id = ? AND metadata IS NULL");
          q.bind(1, ToJson(*m));
          q.bind(2, job.id);
          q.exec();
          job.has_metadata = true;
        }
      }
    });
    return out;
  }

  std::optional<ReturnOutcome> FindSameReturn(const Value& ret) override {
    const std::string* jid = ret.FindString("jid");
    const std::string* minion = ret.FindString("id");
    if (!ret.is_map() || jid == nullptr || minion == nullptr) return std::nullopt;
    auto& q = Stmt(
        "SELECT r.id, r.full_ret FROM ret r JOIN job j ON j.id = r.job_id JOIN minion m ON m.id = r.minion_id"
        " WHERE j.jid = ? AND m.name = ?");
    q.bind(1, *jid);
    q.bind(2, *minion);
    if (!q.executeStep()) {
      q.reset();
      return std::nullopt;
    }
    ReturnOutcome out;
    out.id = q.getColumn(0).getInt64();
    const Value stored = ParseJson(q.getColumn(1).getString());
    q.reset();
    if (!EqualExceptKey(stored, ret, "_stamp")) return std::nullopt;
    out.kind = ReturnOutcome::Kind::kRepeat;
    out.jid = *jid;
    out.stamp_differs = StampsDiffer(stored, ret);
    return out;
  }

  void EventReturn(std::span<const Event> events) override {
    Write("event_return", [&] {
      for (const Event& e : events) ArchiveOne(e);
    });
  }

  void Quarantine(std::string_view raw, const std::string& reason, Micros received) override {
    Write("quarantine", [&] {
      last_quarantine_id_ = std::max(ToUnixMicros(received), last_quarantine_id_ + 1);
      auto& q = Stmt("INSERT INTO quarantine (id, reason, raw) VALUES (?, ?, ?)");
      q.bind(1, last_quarantine_id_);
      q.bind(2, reason);
      q.bind(3, raw.data(), static_cast<int>(raw.size()));
      q.exec();
    });
  }

  void UpdateEndtime(const std::string& jid, const std::string& endtime) override {
    Write("update_endtime", [&] {
      JobEntry& job = EnsureJob(jid);
      auto& q = Stmt("UPDATE job SET endtime = ? WHERE id = ?");
      q.bind(1, endtime);
      q.bind(2, job.id);
      q.exec();
    });
  }

  CleanResult CleanOldJobs(std::optional<Micros> jobs_before, std::optional<Micros> events_before,
                           std::int64_t max_rows) override {
    CleanResult result;
    Write("clean_old_jobs", [&] {
      std::int64_t budget = max_rows;
      if (events_before) {
        const std::int64_t cut = ToUnixMicros(*events_before);
        result.events = DeleteOlderRows("event", cut, budget);
        budget -= result.events;
        if (budget > 0) {
          result.quarantined = DeleteOlderRows("quarantine", cut, budget);
          budget -= result.quarantined;
        }
      }
      if (jobs_before && budget > 0) DeleteOldJobs(*jobs_before, budget, result);
      result.more = budget <= 0;
    });
    return result;
  }

  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override {
    Write("put_counters", [&] {
      for (const auto& [name, value] : counters) {
        auto& q = Stmt(
            "INSERT INTO master_counter (master_id, name, value) VALUES (?, ?, ?)"
            " ON CONFLICT (master_id, name) DO UPDATE SET value = excluded.value");
        q.bind(1, master_row_);
        q.bind(2, name);
        q.bind(3, value);
        q.exec();
      }
    });
  }

  SpaceInfo Space() override {
    return Read("space", [&] {
      SpaceInfo info;
      info.page_size = PragmaInt("PRAGMA page_size");
      info.page_count = PragmaInt("PRAGMA page_count");
      info.freelist_count = PragmaInt("PRAGMA freelist_count");
      return info;
    });
  }

  void IncrementalVacuum(std::int64_t pages) override {
    if (in_batch_) throw StoreError("incremental_vacuum cannot run inside a batch");
    Write("incremental_vacuum", [&] {
      SQLite::Statement q(*db_, "PRAGMA incremental_vacuum(" + std::to_string(pages) + ")");
      while (q.executeStep()) {
      }
    });
  }

  void Checkpoint() override {
    CheckWritable("checkpoint");
    if (in_batch_) throw StoreError("a checkpoint cannot run inside a batch");
    Guard("checkpoint", Op::kWrite, [&] {
      SQLite::Statement q(*db_, "PRAGMA wal_checkpoint(TRUNCATE)");
      while (q.executeStep()) {
      }
    });
  }

  void RefreshStatistics() override {
    if (in_batch_) throw StoreError("statistics cannot be refreshed inside a batch");
    Write("refresh_statistics", [&] { store::RefreshStatistics(*db_); });
  }

  // --- reads --------------------------------------------------------------------

  void BackupTo(const std::filesystem::path& to) override {
    if (in_batch_) throw StoreError("a backup cannot run inside a batch");
    std::error_code ec;
    if (std::filesystem::exists(to, ec)) throw StoreError("backup: " + to.string() + " exists; give a new path");
    // SQLite's online backup API in one step: the source's read transaction
    // spans the whole copy, so it is the store as of one commit while the
    // writer goes on in WAL mode. (VACUUM INTO would compact too, but needs a
    // writable connection, and brine-run's is read-only.)
    (void)Read("backup", [&] {
      SQLite::Database dest(to.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      SQLite::Backup backup(dest, *db_);
      const int rc = backup.executeStep(-1);
      if (rc != SQLITE_DONE) throw SQLite::Exception("backup did not complete", rc);
      // One self-contained file: no -wal beside it to copy or lose.
      dest.exec("PRAGMA journal_mode = DELETE");
      return 0;
    });
  }

  RowCounts CountRows() override {
    return Read("count_rows", [&] {
      RowCounts c;
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

  std::vector<JobRecord> GetJids(const JobFilter& filter) override {
    std::vector<JobRecord> jobs;
    ForEachJob(filter, [&](JobRecord&& r) { jobs.push_back(std::move(r)); });
    return jobs;
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

  std::vector<JobRecord> GetJidsFilter(std::size_t count, FindJobs find_jobs) override {
    JobFilter f;
    f.limit = count;
    if (find_jobs == FindJobs::kDrop) f.exclude_functions.push_back("saltutil.find_job");
    return GetJids(f);
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

 protected:
  void BeginBatchImpl() override {
    CheckWritable("begin a batch");
    if (in_batch_) throw StoreError("a batch is already open on this store");
    // No cached statement may hold a read snapshot into the write transaction:
    // SQLite cannot upgrade a stale snapshot (SQLITE_BUSY_SNAPSHOT, returned
    // without waiting on the busy handler, and again on every retry).
    ResetStatements();
    try {
      db_->exec("BEGIN IMMEDIATE");
    } catch (...) {
      RethrowAsStoreError("begin batch", Op::kWrite);
    }
    in_batch_ = true;
  }

  void CommitBatchImpl() override {
    if (!in_batch_) return;
    in_batch_ = false;
    try {
      db_->exec("COMMIT");
      batch_returns_.clear();
    } catch (...) {
      Abandon();
      RethrowAsStoreError("commit", Op::kWrite);
    }
  }

  void RollbackBatchImpl() noexcept override {
    if (!in_batch_) return;
    in_batch_ = false;
    Abandon();
    failed_ = false;  // a rollback the caller asked for leaves the store usable
  }

 private:
  static constexpr int kLoadNone = 0;
  static constexpr int kLoadStub = 1;
  static constexpr int kLoadPublish = 2;
  // The master's own publish load, from Salt's save_load (migration 0003).
  static constexpr int kLoadCachePublish = 3;

  struct JobEntry {
    std::int64_t id = 0;
    int load_kind = kLoadNone;
    bool nocache = false;
    bool has_metadata = false;
    bool stub_minions = false;
  };

  static std::string Quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
      out += c;
      if (c == '\'') out += '\'';
    }
    return out + "'";
  }

  static Value StringList(const std::vector<std::string>& items) {
    ValueList l;
    for (const auto& s : items) l.emplace_back(s);
    return Value(std::move(l));
  }

  SQLite::Statement& Stmt(const char* sql) { return statements_.Get(*db_, sql); }

  void CheckWritable(const char* what) const {
    if (read_only_) throw StoreError(std::string("cannot ") + what + ": the store is open read-only");
    if (failed_) {
      throw StoreError(std::string("cannot ") + what +
                       ": an earlier commit failed; reopen the store and replay the batch");
    }
  }

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
      auto result = f();
      ResetStatements();
      return result;
    });
  }

  // Runs `f` inside the open batch, or in a transaction of its own. A failure
  // inside a batch abandons the whole batch (SQLite may already have rolled it
  // back) and leaves the store refusing writes.
  template <class F>
  void Write(const char* what, F&& f) {
    CheckWritable(what);
    const bool own = !in_batch_;
    try {
      if (own) {
        ResetStatements();  // see BeginBatchImpl
        db_->exec("BEGIN IMMEDIATE");
      }
      f();
      ResetStatements();
      if (own) {
        db_->exec("COMMIT");
        batch_returns_.clear();
      }
    } catch (...) {
      in_batch_ = false;
      Abandon();
      RethrowAsStoreError(what, Op::kWrite);
    }
  }

  // Rolls back whatever is open, forgets cached rows that may not exist any
  // more, and refuses writes until reopened.
  void Abandon() noexcept {
    ResetStatements();
    try {
      if (sqlite3_get_autocommit(db_->getHandle()) == 0) db_->exec("ROLLBACK");
    } catch (...) {
    }
    jobs_.clear();
    minions_.clear();
    batch_returns_.clear();
    failed_ = true;
    try {
      LoadHighWaterMarks();
    } catch (...) {
    }
  }

  void ResetStatements() noexcept { statements_.ResetAll(); }

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

  JobEntry& EnsureJob(const std::string& jid) {
    if (auto it = jobs_.find(jid); it != jobs_.end()) return it->second;
    if (jobs_.size() >= kMaxCachedJobs) jobs_.clear();
    JobEntry entry;
    auto& q = Stmt("SELECT id, load_kind, nocache, metadata IS NOT NULL, stub_minions FROM job WHERE jid = ?");
    q.bind(1, jid);
    if (q.executeStep()) {
      entry.id = q.getColumn(0).getInt64();
      entry.load_kind = q.getColumn(1).getInt();
      entry.nocache = q.getColumn(2).getInt() != 0;
      entry.has_metadata = q.getColumn(3).getInt() != 0;
      entry.stub_minions = q.getColumn(4).getInt() != 0;
      q.reset();
    } else {
      auto& ins = Stmt("INSERT INTO job (jid, seen_us) VALUES (?, ?)");
      ins.bind(1, jid);
      ins.bind(2, ToUnixMicros(clock_->Now()));
      ins.exec();
      entry.id = db_->getLastInsertRowid();
    }
    return jobs_.emplace(jid, entry).first->second;
  }

  std::int64_t MinionId(const std::string& name) {
    if (auto it = minions_.find(name); it != minions_.end()) return it->second;
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

  void AddExpected(std::int64_t job_id, std::int64_t minion_id) {
    auto& q = Stmt("INSERT OR IGNORE INTO job_minion (job_id, minion_id) VALUES (?, ?)");
    q.bind(1, job_id);
    q.bind(2, minion_id);
    q.exec();
  }

  void MergeMinions(JobEntry& job, const std::vector<std::string>& minions) {
    if (job.stub_minions) {
      // The stub's guess (the minions that returned) gives way to a real list.
      auto& del = Stmt("DELETE FROM job_minion WHERE job_id = ?");
      del.bind(1, job.id);
      del.exec();
      auto& upd = Stmt("UPDATE job SET stub_minions = 0 WHERE id = ?");
      upd.bind(1, job.id);
      upd.exec();
      job.stub_minions = false;
    }
    for (const std::string& m : minions) AddExpected(job.id, MinionId(m));
  }

  void PutLoad(JobEntry& job, const Value& load, int kind) {
    const Value* metadata = LoadMetadata(load);
    auto& q = Stmt(
        "UPDATE job SET load = ?, fun = ?, load_kind = ?,"
        " metadata = coalesce(metadata, ?) WHERE id = ?");
    q.bind(1, ToJson(load));
    BindOptionalText(q, 2, load.FindString("fun") ? std::optional(*load.FindString("fun")) : std::nullopt);
    q.bind(3, kind);
    BindOptionalText(q, 4, metadata ? std::optional(ToJson(*metadata)) : std::nullopt);
    q.bind(5, job.id);
    q.exec();
    job.load_kind = kind;
    if (metadata != nullptr) job.has_metadata = true;
  }

  // Salt's store_job defaults for a jid whose publish was never seen (spec 7.1 step 3).
  void SaveStubLoad(JobEntry& job, const std::string& jid, const Value& ret, std::int64_t minion_id) {
    Value stub = Value::EmptyMap();
    stub.Set("jid", jid);
    const Value* fun = ret.Find("fun");
    if (fun != nullptr) stub.Set("fun", *fun);
    const Value* arg = ret.Find("arg");
    const Value* fun_args = ret.Find("fun_args");
    stub.Set("arg", arg != nullptr && arg->Truthy() ? *arg
                    : fun_args != nullptr && fun_args->Truthy() ? *fun_args : Value::EmptyList());
    stub.Set("tgt", *ret.Find("id"));
    stub.Set("tgt_type", "glob");
    if (const Value* user = ret.Find("user")) stub.Set("user", *user);
    auto& q = Stmt("UPDATE job SET load = ?, fun = ?, load_kind = 1, stub_minions = 1 WHERE id = ?");
    q.bind(1, ToJson(stub));
    if (fun != nullptr && fun->is_string()) {
      q.bind(2, fun->as_string());
    } else {
      q.bind(2);
    }
    q.bind(3, job.id);
    q.exec();
    job.load_kind = kLoadStub;
    job.stub_minions = true;
    AddExpected(job.id, minion_id);
  }

  void ClassifyRepeat(std::int64_t job_id, std::int64_t minion_id, const Value& ret, ReturnOutcome& out) {
    auto& q = Stmt("SELECT id, full_ret FROM ret WHERE job_id = ? AND minion_id = ?");
    q.bind(1, job_id);
    q.bind(2, minion_id);
    q.executeStep();
    out.id = q.getColumn(0).getInt64();
    const Value stored = ParseJson(q.getColumn(1).getString());
    q.reset();
    if (EqualExceptKey(stored, ret, "_stamp")) {
      out.kind = ReturnOutcome::Kind::kRepeat;
      out.stamp_differs = StampsDiffer(stored, ret);
      return;
    }
    const bool stored_trimmed = HasTrimmedValue(stored);
    const bool new_trimmed = HasTrimmedValue(ret);
    if (new_trimmed && !stored_trimmed) {
      out.kind = ReturnOutcome::Kind::kTrimmedCopy;
    } else if (stored_trimmed && !new_trimmed) {
      ReplaceTrimmedReturn(out.id, ret);
      out.kind = ReturnOutcome::Kind::kCompleted;
    } else {
      out.kind = ReturnOutcome::Kind::kConflict;
    }
  }

  static bool StampsDiffer(const Value& stored, const Value& ret) {
    const Value* a = stored.Find("_stamp");
    const Value* b = ret.Find("_stamp");
    return a != nullptr && b != nullptr && !(*a == *b);
  }

  // Salt's trim_dict puts this string where it cut a value out of an oversized event.
  static bool HasTrimmedValue(const Value& v) {
    if (v.is_string()) return v.as_string() == "VALUE_TRIMMED";
    if (v.is_list()) {
      for (const Value& item : v.as_list()) {
        if (HasTrimmedValue(item)) return true;
      }
    } else if (v.is_map()) {
      for (const auto& [key, item] : v.as_map()) {
        if (HasTrimmedValue(item)) return true;
      }
    }
    return false;
  }

  void ReplaceTrimmedReturn(ReturnId id, const Value& ret) {
    // Archived events that share the trimmed payload keep it as their own.
    SQLite::Statement keep(*db_, std::string(kDetachEvents) +
                                     " WHERE job_id = (SELECT job_id FROM ret WHERE id = ?1) AND ret_id = ?1");
    keep.bind(1, id);
    keep.exec();
    auto& q = Stmt("UPDATE ret SET full_ret = ?, success = ?, retcode = ? WHERE id = ?");
    q.bind(1, ToJson(ret));
    BindOutcome(q, 2, ret);
    q.bind(4, id);
    q.exec();
  }

  void ArchiveOne(const Event& e) {
    last_event_id_ = std::max(ToUnixMicros(e.received), last_event_id_ + 1);
    const std::string jid = JobEventJid(e.tag, e.data);
    std::optional<std::int64_t> job_id;
    if (!jid.empty()) job_id = EnsureJob(jid).id;

    std::optional<std::string> tag = e.tag;
    std::optional<std::string> data;
    std::optional<std::string> stamp;
    std::optional<std::int64_t> ret_id;
    const std::string* own_stamp = e.data.FindString("_stamp");
    if (e.same_as_return && (!e.own_stamp || own_stamp != nullptr)) {
      ret_id = *e.same_as_return;
      if (e.own_stamp) stamp = *own_stamp;
      if (IsCanonicalReturnTag(e.tag, jid, *ret_id)) tag.reset();
    } else {
      data = ToJson(e.data);
    }
    auto& q = Stmt(
        "INSERT INTO event (id, master_id, job_id, tag, data, ret_id, stamp)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, last_event_id_);
    q.bind(2, master_row_);
    if (job_id) {
      q.bind(3, *job_id);
    } else {
      q.bind(3);
    }
    BindOptionalText(q, 4, tag);
    BindOptionalText(q, 5, data);
    if (ret_id) {
      q.bind(6, *ret_id);
    } else {
      q.bind(6);
    }
    BindOptionalText(q, 7, stamp);
    q.exec();
  }

  // True when `tag` is exactly salt/job/<jid>/ret/<minion> of return `ret_id`,
  // so the archive can leave the tag out and the view rebuild it.
  bool IsCanonicalReturnTag(const std::string& tag, const std::string& jid, ReturnId ret_id) {
    const std::string prefix = "salt/job/" + jid + "/ret/";
    if (jid.empty() || tag.compare(0, prefix.size(), prefix) != 0) return false;
    std::pair<std::int64_t, std::int64_t> owner;
    if (auto it = batch_returns_.find(ret_id); it != batch_returns_.end()) {
      owner = it->second;
    } else {
      auto& q = Stmt("SELECT job_id, minion_id FROM ret WHERE id = ?");
      q.bind(1, ret_id);
      if (!q.executeStep()) return false;
      owner = {q.getColumn(0).getInt64(), q.getColumn(1).getInt64()};
      q.reset();
    }
    return owner.first == EnsureJob(jid).id && owner.second == MinionId(tag.substr(prefix.size()));
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

  template <class F>
  void ForEachReturn(const std::string& jid, std::span<const std::string_view> keys, F&& f) {
    // Sorted here rather than by ORDER BY: SQLite's sorter would copy every
    // payload, and one return can be 50 MB. std::string's order is SQLite's
    // BINARY collation (bytes compared unsigned).
    auto& q = Stmt(
        "SELECT m.name, r.full_ret FROM job AS j JOIN ret AS r ON r.job_id = j.id"
        " JOIN minion AS m ON m.id = r.minion_id WHERE j.jid = ?");
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

  std::int64_t DeleteOlderRows(const std::string& table, std::int64_t cut, std::int64_t budget) {
    SQLite::Statement q(*db_, "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                                  " WHERE id < ? ORDER BY id LIMIT ?)");
    q.bind(1, cut);
    q.bind(2, budget);
    return q.exec();
  }

  void DeleteOldJobs(Micros before, std::int64_t& budget, CleanResult& result) {
    // Jids that name a time are UTC times, so their text order is time
    // order; every other jid (rare, hand-made: "req", "12345", "0") ages by
    // when brine first saw it. A numeric jid that is not a time sorts before
    // every real one, so the digit test alone would delete it at once.
    // (AND evaluates left to right: the function runs only on candidates.)
    SQLite::Statement pick(*db_,
                           "SELECT id FROM job WHERE jid < ?1 AND jid GLOB '[0-9]*' AND brine_jid_is_time(jid)"
                           " UNION ALL SELECT id FROM job WHERE seen_us < ?2"
                           " AND NOT (jid GLOB '[0-9]*' AND brine_jid_is_time(jid))"
                           " LIMIT ?3");
    pick.bind(1, FormatJid(before));
    pick.bind(2, ToUnixMicros(before));
    pick.bind(3, budget);
    std::vector<std::int64_t> ids;
    while (pick.executeStep()) ids.push_back(pick.getColumn(0).getInt64());
    pick.reset();
    for (std::int64_t id : ids) {
      if (budget <= 0) break;
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
    jobs_.clear();
  }

  OpenOptions options_;
  SystemClock system_clock_;
  const Clock* clock_;  // options_.clock or system_clock_
  JidGenerator jids_;
  std::unique_ptr<SQLite::Database> db_;
  detail::StatementCache statements_;  // after db_: destroyed first
  bool read_only_ = false;
  bool in_batch_ = false;
  bool failed_ = false;
  std::int64_t master_row_ = 0;
  std::int64_t last_event_id_ = 0;
  std::int64_t last_quarantine_id_ = 0;
  // Caches of rows this connection wrote or read; dropped on rollback.
  std::unordered_map<std::string, JobEntry> jobs_;
  std::unordered_map<std::string, std::int64_t> minions_;
  std::unordered_map<ReturnId, std::pair<std::int64_t, std::int64_t>> batch_returns_;
};

}  // namespace

std::unique_ptr<Store> OpenStore(const std::filesystem::path& path, const OpenOptions& options) {
  return std::make_unique<SqliteStore>(path, options);
}

int LatestSchemaVersion() { return static_cast<int>(EmbeddedMigrations().size()); }

std::string SqliteVersion() { return sqlite3_libversion(); }

}  // namespace brine::store
