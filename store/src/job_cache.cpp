// JobCache: Salt's job cache semantics (store.h; spec salt-jobs.md 4.2, 5,
// 7.1), written once over a Backend (backend.h) so that SQLite and
// PostgreSQL keep the same rules. Everything here is about what a write
// means; how it is stored is the backend's.
#include "job_cache.h"
#include "master_status.h"

#include <unistd.h>

#include <algorithm>
#include <unordered_map>

#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"

namespace brine::store::detail {

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

std::string WithStamp(const std::string& full_ret_json, const std::string& stamp) {
  Value v = ParseJson(full_ret_json);
  if (v.is_map()) v.Set("_stamp", stamp);
  return ToJson(v);
}

namespace {

// The jobs whose row state the writer keeps (about 130 bytes each). Returns
// come soon after their publish, so a job out of the cache costs one lookup
// of its row; 200,000 held ~26 MiB and took the master over its 150 MiB
// ceiling past 2.4M events (ingest_bench, 5M events: 164.8 MiB).
constexpr std::size_t kMaxCachedJobs = 50000;

// Salt's trim_dict puts this string where it cut a value out of an oversized event.
bool HasTrimmedValue(const Value& v) {
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

// A return's `success` and `retcode`, where they have those types, and
// whether it is a trimmed copy (`row.full_ret`, its JSON, must be set).
ReturnRow Outcome(const Value& ret, ReturnRow row) {
  if (const Value* s = ret.Find("success"); s != nullptr && s->is_bool()) row.success = s->as_bool();
  if (const Value* rc = ret.Find("retcode"); rc != nullptr && rc->kind() == Value::Kind::kInt) {
    row.retcode = static_cast<std::int64_t>(rc->as_int());
  }
  // The JSON holds the string token first: a cheap test before the walk.
  row.trimmed = row.full_ret->find("\"VALUE_TRIMMED\"") != std::string::npos && HasTrimmedValue(ret);
  return row;
}

// Whether a repeat's `_stamp` differs from the stored return's (both present).
bool StampsDiffer(const Value& stored, const Value& ret) {
  const Value* a = stored.Find("_stamp");
  const Value* b = ret.Find("_stamp");
  return a != nullptr && b != nullptr && !(*a == *b);
}

class JobCache final : public Store, private StoreMaintenance {
 public:
  JobCache(std::unique_ptr<Backend> backend, const OpenOptions& options)
      : clock_(options.clock != nullptr ? options.clock : &system_clock_),
        skew_clock_(options.skew_clock != nullptr ? options.skew_clock : &system_clock_),
        max_clock_skew_(options.max_clock_skew),
        jids_(*clock_, JidUniqueness::kPlain, static_cast<long>(getpid())),
        backend_(std::move(backend)),
        read_only_(options.access == OpenOptions::Access::kReadOnly) {}

  ~JobCache() override {
    if (in_batch_) RollbackBatchImpl();
  }

  // --- writes -------------------------------------------------------------------

  std::string PrepJid(Caching caching, const std::optional<std::string>& passed_jid) override {
    std::string jid = passed_jid.value_or(jids_.Next());
    Write("prep_jid", [&] {
      JobState& job = EnsureJob(jid);
      if (caching == Caching::kNoCache && !job.nocache) {
        backend_->SetNocache(job.id);
        job.nocache = true;
      }
    });
    return jid;
  }

  void SaveLoad(const std::string& jid, const Value& load,
                const std::optional<std::vector<std::string>>& minions) override {
    SaveEventLoad(jid, load, nullptr, minions);
  }

  void SaveLoad(const std::string& jid, const Value& load, const std::string& load_json,
                const std::optional<std::vector<std::string>>& minions) override {
    SaveEventLoad(jid, load, &load_json, minions);
  }

  void SaveCacheLoad(const std::string& jid, const Value& load,
                     const std::optional<std::vector<std::string>>& minions) override {
    if (!load.is_map()) throw StoreError("save_load: the load of " + jid + " is not a map");
    const std::string* cmd = load.FindString("cmd");
    Write("save_load", [&] {
      JobState& job = EnsureJob(jid);
      if (cmd != nullptr && *cmd == "publish") {
        PutLoad(job, load, LoadKind::kCachePublish);
      } else if (cmd != nullptr && *cmd == "_return") {
        // store_job hands every return to save_load when the cache is not
        // local_cache (spec 7.1 step 11); the publish load must survive it
        // (case C6). A job with no load yet gets Returner's stub.
        const std::string* minion = load.FindString("id");
        if (job.load_kind == LoadKind::kNone && minion != nullptr && !minion->empty()) {
          SaveStubLoad(job, jid, load, *minion);
        }
      } else if (job.load_kind != LoadKind::kCachePublish) {
        PutLoad(job, load, LoadKind::kPublish);
      }
      if (minions) MergeMinions(job, *minions);
    });
  }

  void SaveMinions(const std::string& jid, const std::vector<std::string>& minions,
                   const std::optional<std::string>&) override {
    Write("save_minions", [&] { MergeMinions(EnsureJob(jid), minions); });
  }

  ReturnOutcome Returner(const Value& ret) override { return StoreReturn(ret, nullptr); }

  ReturnOutcome Returner(const Value& ret, const std::string& ret_json) override {
    return StoreReturn(ret, &ret_json);
  }

  std::optional<ReturnOutcome> FindSameReturn(const Value& ret) override {
    const std::string* jid = ret.FindString("jid");
    const std::string* minion = ret.FindString("id");
    if (!ret.is_map() || jid == nullptr || minion == nullptr) return std::nullopt;
    std::optional<std::pair<ReturnId, std::string>> found;
    try {
      found = backend_->FindReturn(*jid, *minion);
      backend_->EndCall();
    } catch (...) {
      // Inside a batch the lookup ran in the batch's transaction, which a
      // failure may have ended (PostgreSQL aborts it): the batch is lost as
      // after a failed write.
      if (!in_batch_) backend_->Rethrow("find_same_return", Op::kRead);
      in_batch_ = false;
      Abandon();
      backend_->Rethrow("find_same_return", Op::kWrite);
    }
    if (!found) return std::nullopt;
    const Value stored = ParseJson(found->second);
    if (!EqualExceptKey(stored, ret, "_stamp")) return std::nullopt;
    ReturnOutcome out;
    out.kind = ReturnOutcome::Kind::kRepeat;
    out.id = found->first;
    out.jid = *jid;
    out.stamp_differs = StampsDiffer(stored, ret);
    return out;
  }

  void EventReturn(std::span<const Event> events) override {
    Write("event_return", [&] {
      std::vector<EventRow> rows;
      rows.reserve(events.size());
      for (const Event& e : events) rows.push_back(ArchiveRow(e));
      backend_->AppendEvents(std::move(rows));
    });
  }

  void Quarantine(std::string_view raw, const std::string& reason, Micros received) override {
    Write("quarantine", [&] { backend_->Quarantine(raw, reason, Arrival(received)); });
  }

  std::int64_t FutureArrivals() const override { return future_arrivals_; }

  void UpdateEndtime(const std::string& jid, const std::string& endtime) override {
    Write("update_endtime", [&] { backend_->SetEndtime(EnsureJob(jid).id, endtime); });
  }

  CleanResult ApplyRetention(const Retention& retention, std::int64_t max_rows) override {
    CleanResult result;
    Write("clean_old_jobs", [&] {
      result = ApplyRetentionPlan(retention, max_rows, *backend_);
      jobs_.clear();
    });
    return result;
  }

  CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) override {
    CleanResult result;
    Write("prune_oldest", [&] {
      result = backend_->PruneOldest(bytes, max_rows);
      jobs_.clear();
    });
    return result;
  }

  std::int64_t UsedBytes() override { return backend_->UsedBytes(); }

  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override {
    Write("put_counters", [&] { backend_->PutCounters(counters); });
  }

  void PutMasterInfo(const MasterInfo& info) override {
    Write("put_master_info", [&] { backend_->PutMasterInfo(info); });
  }
  void AddHourlyCounts(std::span<const HourCounts> hours) override {
    if (!hours.empty()) Write("add_hourly_counts", [&] { backend_->AddHourlyCounts(hours); });
  }
  void ForgetHoursBefore(Micros before) override {
    Write("forget_hours_before", [&] { backend_->ForgetHoursBefore(ToUnixMicros(before)); });
  }

  void OpenBusGap(GapReason reason, Micros start, std::optional<Micros> last_frame) override {
    Write("open_bus_gap", [&] {
      backend_->OpenBusGap(GapReasonText(reason), ToUnixMicros(start),
                           last_frame ? std::optional(ToUnixMicros(*last_frame)) : std::nullopt);
    });
  }
  void CloseBusGap(Micros end) override {
    Write("close_bus_gap", [&] { backend_->CloseBusGap(ToUnixMicros(end)); });
  }
  std::vector<BusGap> GetBusGaps(Micros since) override { return backend_->GetBusGaps(ToUnixMicros(since)); }

  void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) override {
    Write("put_spool_progress", [&] { backend_->PutSpoolProgress(file_key, offset_bytes); });
  }

  void ForgetSpoolProgress(const std::string& file_key) override {
    Write("forget_spool_progress", [&] { backend_->ForgetSpoolProgress(file_key); });
  }

  // --- maintenance: StoreMaintenance, when the backend has it --------------------

  StoreMaintenance* Maintenance() override {
    return backend_->Maintenance() != nullptr ? static_cast<StoreMaintenance*>(this) : nullptr;
  }

  SpaceInfo Space() override { return backend_->Maintenance()->Space(); }

  void IncrementalVacuum(std::int64_t pages) override {
    if (in_batch_) throw StoreError("incremental_vacuum cannot run inside a batch");
    CheckWritable("incremental_vacuum");
    try {
      backend_->Maintenance()->IncrementalVacuum(pages);
    } catch (...) {
      Abandon();
      backend_->Rethrow("incremental_vacuum", Op::kWrite);
    }
  }

  void Checkpoint() override {
    CheckWritable("checkpoint");
    if (in_batch_) throw StoreError("a checkpoint cannot run inside a batch");
    backend_->Maintenance()->Checkpoint();
  }

  void RefreshStatistics() override {
    if (in_batch_) throw StoreError("statistics cannot be refreshed inside a batch");
    CheckWritable("refresh_statistics");
    try {
      backend_->Maintenance()->RefreshStatistics();
    } catch (...) {
      Abandon();
      backend_->Rethrow("refresh_statistics", Op::kWrite);
    }
  }

  void BackupTo(const std::filesystem::path& to) override {
    if (in_batch_) throw StoreError("a backup cannot run inside a batch");
    backend_->Maintenance()->BackupTo(to);
  }
  std::string IntegrityCheck() override { return backend_->Maintenance()->IntegrityCheck(); }

  // --- reads --------------------------------------------------------------------

  RowCounts CountRows() override { return backend_->CountRows(); }
  std::optional<Micros> OldestEvent() override { return backend_->OldestEvent(); }
  Value GetCounters() override { return backend_->GetCounters(); }
  std::vector<MasterStatus> GetMasterStatus() override { return CombineMasterStatus(*backend_); }
  std::vector<HourCounts> HourlyCounts(Micros from, Micros until, const std::optional<std::string>& master) override {
    return HourlySeries(*backend_, from, until, master);
  }
  std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() override {
    return backend_->GetSpoolProgress();
  }
  Value GetLoad(const std::string& jid) override { return backend_->GetLoad(jid); }
  // Salt's get_jid: {minion: {return, retcode, success, out}}, with the keys
  // each return has, minions in the byte order of their names.
  Value GetJid(const std::string& jid) override {
    static constexpr std::string_view kKeys[] = {"return", "retcode", "success", "out"};
    return Returns(jid, [](std::string_view text) {
      Value full = ParseJsonMembers(text, kKeys);
      Value r = Value::EmptyMap();
      for (const std::string_view key : kKeys) {
        if (Value* v = full.Find(key)) r.as_map().emplace_back(key, std::move(*v));
      }
      return r;
    });
  }
  // {minion: the whole return load}.
  Value GetJidFull(const std::string& jid) override {
    return Returns(jid, [](std::string_view text) { return ParseJson(text); });
  }
  void ForEachReturnJson(const std::string& jid, const ReturnTextFn& fn) override {
    backend_->ForEachReturnJson(jid, fn);
  }
  JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query) override {
    return backend_->ListJobMinions(jid, query);
  }

  std::vector<JobRecord> GetJids(const JobFilter& filter) override {
    std::vector<JobRecord> jobs;
    ForEachJob(filter, [&](JobRecord&& r) { jobs.push_back(std::move(r)); });
    return jobs;
  }

  JobPage ListJobs(const JobFilter& filter) override {
    std::vector<JobRecord> jobs;
    JobPage page = Query(filter, [&](JobRecord&& r) { jobs.push_back(std::move(r)); });
    page.jobs = std::move(jobs);
    return page;
  }

  void ForEachJob(const JobFilter& filter, const std::function<void(JobRecord&&)>& fn) override {
    if (!filter.time_budget) {
      (void)Query(filter, fn);
      return;
    }
    JobFilter whole = filter;  // a budget is ListJobs' alone
    whole.time_budget.reset();
    (void)Query(whole, fn);
  }

  JobPage Query(const JobFilter& filter, const std::function<void(JobRecord&&)>& fn) {
    return RunJobQuery(
        filter,
        [&](const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row) {
          backend_->ForEachJobRow(pushdown, row);
        },
        fn);
  }

  void ForEachStoredJob(const std::optional<std::string>& jid_min, const std::optional<std::string>& jid_max,
                        const std::function<void(StoredJob&&)>& fn) override {
    backend_->ForEachStoredJob(jid_min, jid_max, fn);
  }

  void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                    const std::function<void(ArchivedEvent&&)>& fn) override {
    backend_->ForEachEvent(from, until, fn);
  }

  EventPage ListEvents(const EventQuery& query) override {
    const auto started = std::chrono::steady_clock::now();
    const std::string prefix(GlobLiteralPrefix(query.tag_glob));
    EventPage page;
    std::optional<std::int64_t> before = query.before_id;
    // Bounded windows of the archive, newest first: the page's size without
    // a glob, else 2,000 rows (so a glob that matches little is neither a
    // round trip per row nor one unbounded scan), until the page is full,
    // the archive ends or the budget runs out.
    const std::size_t window = query.tag_glob.empty() ? query.limit : std::max<std::size_t>(query.limit, 2000);
    while (page.events.size() < query.limit) {
      Backend::EventWindow w = backend_->EventsBefore(before, prefix, window);
      for (ListedEvent& e : w.events) {
        if (query.tag_glob.empty() || FnMatch(query.tag_glob, e.event.tag)) page.events.push_back(std::move(e));
        if (page.events.size() == query.limit) return page;
      }
      if (!w.lowest) return page;
      before = w.lowest;
      if (query.time_budget && std::chrono::steady_clock::now() - started >= *query.time_budget) {
        page.complete = false;
        page.reached = before;
        return page;
      }
    }
    return page;
  }

  std::string TailStart() override { return backend_->TailStart(); }

  TailBatch TailEvents(const std::string& cursor, const std::string& tag_glob, std::size_t limit) override {
    return backend_->TailEvents(
        cursor, std::string(GlobLiteralPrefix(tag_glob)),
        [&](std::string_view tag) { return tag_glob.empty() || FnMatch(tag_glob, tag); }, limit);
  }

  std::vector<JobRecord> GetJidsFilter(std::size_t count, FindJobs find_jobs) override {
    JobFilter f;
    f.limit = count;
    if (find_jobs == FindJobs::kDrop) f.exclude_functions.push_back("saltutil.find_job");
    return GetJids(f);
  }

  Value GetFun(const std::string& fun) override { return backend_->GetFun(fun); }
  std::vector<std::string> GetMinions() override { return backend_->GetMinions(); }
  std::optional<std::string> GetEndtime(const std::string& jid) override { return backend_->GetEndtime(jid); }
  int SchemaVersion() override { return backend_->SchemaVersion(); }

 private:
  // {minion: shape(its return's JSON)} for each return of `jid`, minions in
  // the byte order of their names (std::string's order: SQLite's BINARY,
  // PostgreSQL's "C"). Positions are sorted, not the parsed returns.
  template <typename Shape>
  Value Returns(const std::string& jid, Shape&& shape) {
    std::vector<std::pair<std::string, Value>> rows;
    backend_->ForEachReturnText(jid, [&](std::string_view minion, std::string_view text) {
      rows.emplace_back(std::string(minion), shape(text));
    });
    std::vector<std::size_t> order(rows.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a].first < rows[b].first; });
    Value out = Value::EmptyMap();
    out.as_map().reserve(rows.size());
    for (const std::size_t i : order) out.as_map().emplace_back(std::move(rows[i].first), std::move(rows[i].second));
    return out;
  }

 protected:
  void BeginBatchImpl() override {
    CheckWritable("begin a batch");
    if (in_batch_) throw StoreError("a batch is already open on this store");
    try {
      backend_->Begin();
    } catch (...) {
      // A batch that never opened is no failed commit: the store stays usable.
      backend_->Rollback();
      backend_->Rethrow("begin batch", Op::kWrite);
    }
    in_batch_ = true;
  }

  void CommitBatchImpl() override {
    if (!in_batch_) return;
    in_batch_ = false;
    try {
      backend_->Commit();
      Committed();
    } catch (...) {
      Abandon();
      backend_->Rethrow("commit", Op::kWrite);
    }
  }

  void RollbackBatchImpl() noexcept override {
    if (!in_batch_) return;
    in_batch_ = false;
    Abandon();
    failed_ = false;  // a rollback the caller asked for leaves the store usable
  }

 private:
  // Returner; `ret_json`: ToJson(ret) made by the caller, or nullptr.
  ReturnOutcome StoreReturn(const Value& ret, const std::string* ret_json) {
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
    const std::string encoded = ret_json != nullptr ? std::string() : ToJson(ret);
    const std::string& full_ret = ret_json != nullptr ? *ret_json : encoded;
    Write("returner", [&] {
      JobState& job = EnsureJob(jid);
      if (job.nocache) return;
      const std::optional<ReturnId> id = backend_->InsertReturn(
          Outcome(ret, {.job_id = job.id, .minion = *minion, .received = clock_->Now(), .full_ret = &full_ret}));
      if (!id) {
        ClassifyRepeat(job.id, *minion, ret, out);
        return;
      }
      out.kind = ReturnOutcome::Kind::kStored;
      out.id = *id;
      batch_returns_[out.id] = {job.id, *minion};
      if (job.load_kind == LoadKind::kNone) {
        SaveStubLoad(job, jid, ret, *minion);
      } else if (job.stub_minions) {
        backend_->AddExpected(job.id, std::span(minion, 1));
      }
      if (!job.has_metadata) {
        if (const Value* m = ret.Find("metadata"); m != nullptr && m->is_map()) {
          backend_->SetMetadataIfNull(job.id, ToJson(*m));
          job.has_metadata = true;
        }
      }
    });
    return out;
  }

  // SaveLoad; `load_json`: ToJson(load) made by the caller, or nullptr.
  void SaveEventLoad(const std::string& jid, const Value& load, const std::string* load_json,
                     const std::optional<std::vector<std::string>>& minions) {
    if (!load.is_map()) throw StoreError("save_load: the load of " + jid + " is not a map");
    Write("save_load", [&] {
      JobState& job = EnsureJob(jid);
      if (job.load_kind != LoadKind::kCachePublish) PutLoad(job, load, LoadKind::kPublish, load_json);
      if (minions) MergeMinions(job, *minions);
    });
  }

  void CheckWritable(const char* what) const {
    if (read_only_) throw StoreError(std::string("cannot ") + what + ": the store is open read-only");
    if (failed_) {
      throw StoreError(std::string("cannot ") + what +
                       ": an earlier commit failed; reopen the store and replay the batch");
    }
  }

  // Runs `f` inside the open batch, or in a transaction of its own. A failure
  // inside a batch abandons the whole batch (the database may already have
  // rolled it back) and leaves the store refusing writes.
  template <class F>
  void Write(const char* what, F&& f) {
    CheckWritable(what);
    const bool own = !in_batch_;
    try {
      if (own) backend_->Begin();
      f();
      backend_->EndCall();
      if (own) {
        backend_->Commit();
        Committed();
      }
    } catch (...) {
      in_batch_ = false;
      Abandon();
      backend_->Rethrow(what, Op::kWrite);
    }
  }

  void Committed() {
    batch_returns_.clear();
    // Other masters change job rows between our transactions.
    if (backend_->Shared()) jobs_.clear();
  }

  // Rolls back whatever is open, forgets cached rows that may not exist any
  // more, and refuses writes until reopened.
  void Abandon() noexcept {
    backend_->Rollback();
    jobs_.clear();
    batch_returns_.clear();
    failed_ = true;
  }

  JobState& EnsureJob(const std::string& jid) {
    if (auto it = jobs_.find(jid); it != jobs_.end()) return it->second;
    if (jobs_.size() >= kMaxCachedJobs) jobs_.clear();
    return jobs_.emplace(jid, backend_->GetOrCreateJob(jid, clock_->Now())).first->second;
  }

  void MergeMinions(JobState& job, const std::vector<std::string>& minions) {
    const std::uint64_t hash = ListHash(minions);
    if (job.stub_minions) {
      // The stub's guess (the minions that returned) gives way to a real list.
      backend_->DropStubMinions(job.id);
      job.stub_minions = false;
    } else if (hash == job.merged_minions) {
      // The list this job was given last, again: Salt announces a job's
      // minions twice (the bare-jid event, then the `new` event), and adding
      // a set a second time changes nothing. Nothing but DropStubMinions
      // takes minions away, and a rollback forgets the cached state with its
      // writes.
      return;
    }
    backend_->AddExpected(job.id, minions);
    job.merged_minions = hash;
  }

  // A 64-bit hash of a list of names, never 0 (0: no list): FNV-1a over each
  // name and its length.
  static std::uint64_t ListHash(const std::vector<std::string>& names) {
    std::uint64_t h = 14695981039346656037ULL;
    auto mix = [&h](unsigned char c) { h = (h ^ c) * 1099511628211ULL; };
    for (const std::string& n : names) {
      for (const char c : n) mix(static_cast<unsigned char>(c));
      for (std::size_t len = n.size(), i = 0; i < sizeof len; ++i) mix(static_cast<unsigned char>(len >> (8 * i)));
    }
    return h == 0 ? 1 : h;
  }

  static LoadMembers MembersOf(const Value& load) { return {.fun = load.FindString("fun"), .user = load.Find("user")}; }

  // `load_json`: ToJson(load) when the caller made it, else nullptr.
  void PutLoad(JobState& job, const Value& load, LoadKind kind, const std::string* load_json = nullptr) {
    const Value* metadata = LoadMetadata(load);
    const std::string encoded = load_json != nullptr ? std::string() : ToJson(load);
    backend_->PutLoad(job.id, load_json != nullptr ? *load_json : encoded, MembersOf(load), kind,
                      metadata ? std::optional(ToJson(*metadata)) : std::nullopt);
    job.load_kind = kind;
    if (metadata != nullptr) job.has_metadata = true;
  }

  // Salt's store_job defaults for a jid whose publish was never seen (spec 7.1 step 3).
  void SaveStubLoad(JobState& job, const std::string& jid, const Value& ret, const std::string& minion) {
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
    backend_->PutStubLoad(job.id, ToJson(stub), MembersOf(stub), minion);
    job.load_kind = LoadKind::kStub;
    job.stub_minions = true;
  }

  void ClassifyRepeat(std::int64_t job_id, const std::string& minion, const Value& ret, ReturnOutcome& out) {
    auto [id, text] = backend_->StoredReturn(job_id, minion);
    out.id = id;
    const Value stored = ParseJson(text);
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
      const std::string full_ret = ToJson(ret);
      backend_->ReplaceReturn(out.id, Outcome(ret, {.job_id = job_id, .minion = minion, .full_ret = &full_ret}));
      out.kind = ReturnOutcome::Kind::kCompleted;
    } else {
      out.kind = ReturnOutcome::Kind::kConflict;
    }
  }

  // `received`, or the skew clock's now when it is more than max_clock_skew_
  // ahead of it (OpenOptions::max_clock_skew says why).
  Micros Arrival(Micros received) {
    const Micros now = skew_clock_->Now();
    // Compared as an unsigned difference: now + skew, or received - now,
    // could pass the largest int64 (an imported INT64_MAX).
    const std::uint64_t ahead_us = static_cast<std::uint64_t>(ToUnixMicros(received)) -
                                   static_cast<std::uint64_t>(ToUnixMicros(now));
    const auto skew_us = static_cast<std::uint64_t>(std::chrono::microseconds(max_clock_skew_).count());
    if (received > now && ahead_us > skew_us) {
      ++future_arrivals_;
      return now;
    }
    return received;
  }

  EventRow ArchiveRow(const Event& e) {
    EventRow row;
    row.received = Arrival(e.received);
    const std::string jid = JobEventJid(e.tag, e.data);
    if (!jid.empty()) row.job_id = EnsureJob(jid).id;
    row.tag = e.tag;
    const std::string* own_stamp = e.data.FindString("_stamp");
    if (e.same_as_return && (!e.own_stamp || own_stamp != nullptr)) {
      row.ret_id = *e.same_as_return;
      if (e.own_stamp) row.stamp = *own_stamp;
      if (IsCanonicalReturnTag(e.tag, jid, *row.ret_id)) row.tag.reset();
    } else {
      row.data = e.data_json.empty() ? ToJson(e.data) : e.data_json;
    }
    return row;
  }

  // True when `tag` is exactly salt/job/<jid>/ret/<minion> of return `ret_id`,
  // so the archive can leave the tag out and the view rebuild it.
  bool IsCanonicalReturnTag(const std::string& tag, const std::string& jid, ReturnId ret_id) {
    const std::string prefix = "salt/job/" + jid + "/ret/";
    if (jid.empty() || tag.compare(0, prefix.size(), prefix) != 0) return false;
    std::pair<std::int64_t, std::string> owner;
    if (auto it = batch_returns_.find(ret_id); it != batch_returns_.end()) {
      owner = it->second;
    } else {
      auto found = backend_->ReturnOwner(ret_id);
      if (!found) return false;
      owner = std::move(*found);
    }
    return owner.first == EnsureJob(jid).id && owner.second == std::string_view(tag).substr(prefix.size());
  }

  SystemClock system_clock_;
  const Clock* clock_;  // the options' clock or system_clock_
  const Clock* skew_clock_;  // the options' skew_clock or system_clock_
  const std::chrono::seconds max_clock_skew_;
  std::int64_t future_arrivals_ = 0;
  JidGenerator jids_;
  std::unique_ptr<Backend> backend_;
  bool read_only_ = false;
  bool in_batch_ = false;
  bool failed_ = false;
  // Job rows this Store wrote or read; dropped on rollback (and after each
  // commit on a shared database).
  std::unordered_map<std::string, JobState> jobs_;
  // (job, minion) of the returns stored in the open transaction.
  std::unordered_map<ReturnId, std::pair<std::int64_t, std::string>> batch_returns_;
};

}  // namespace

std::unique_ptr<Store> MakeJobCache(std::unique_ptr<Backend> backend, const OpenOptions& options) {
  return std::make_unique<JobCache>(std::move(backend), options);
}

}  // namespace brine::store::detail
