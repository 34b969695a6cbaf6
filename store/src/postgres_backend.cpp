// The PostgreSQL Backend of the job cache (backend.h) on libpq. Layout:
// migrations/postgres/*.sql and docs/schema.md. Several brine-masters may
// write one database: job, minion and return rows are created with
// ON CONFLICT, so the first return wins across masters too, and events are
// numbered by the database.
//
// Round trips (the "one per batch, never per row"): a write that
// returns nothing waits, and so do returns and events; each round trip sends
// everything waiting in one libpq pipeline ahead of its own statement, and
// COMMIT is such a round trip. What still asks at once: a job's row, the
// first time a batch names the jid (its state, and which minions returned
// already, decide first-wins without asking per return); a minion's row the
// first time this connection sees the name; return ids, 1000 at a time; and
// the rare paths (repeats, retention). A batch whose jobs were all named
// earlier in it therefore costs one round trip.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "backend.h"
#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/utf8.h"
#include "job_cache.h"
#include "migrations.h"
#include "postgres_connection.h"

namespace brine::store::detail {
namespace {

// Any 64-bit key: the advisory lock that serialises migrations across masters.
constexpr std::int64_t kMigrationLock = 0x6272696e65L;  // "brine"
// Taken by the master whose retention drops whole days of jobs.
constexpr std::int64_t kRetentionLock = 0x6272696e6572L;  // "briner"
// Rows per write from arrays (one parameter a column, so any number fits a
// statement; the bound keeps what waits in memory, and one statement's work,
// in check): returns, events and expected minions a statement each, loads
// one UPDATE.
constexpr std::size_t kEventsPerInsert = 8000;
constexpr std::size_t kReturnsPerInsert = 8000;
constexpr std::size_t kExpectedPerInsert = 8000;
constexpr std::size_t kLoadsPerUpdate = 2000;
// Waiting writes that make a round trip of their own (memory bound).
constexpr std::size_t kMaxDeferred = 4 * PgConnection::kPipelineChunk;
// Return ids drawn from ret's sequence per round trip.
constexpr int kReturnIdsPerDraw = 1000;

std::string TimeText(Micros t) {
  // timestamptz accepts the epoch form with a fraction.
  const std::int64_t us = ToUnixMicros(t);
  const std::int64_t s = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
  const std::int64_t f = us - s * 1000000;
  std::string frac = std::to_string(f);
  frac.insert(0, 6 - frac.size(), '0');
  return std::to_string(s) + "." + frac;
}

std::string Int(std::int64_t v) { return std::to_string(v); }

// Python's fnmatch.translate for PostgreSQL's regular expressions (AREs):
// `*`, `?`, `[seq]`, `[!seq]`, everything else literal, the whole text.
std::string FnmatchRegex(std::string_view glob) {
  std::string out = "^(?:";
  const std::size_t n = glob.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = glob[i];
    if (c == '*') {
      out += ".*";
    } else if (c == '?') {
      out += '.';
    } else if (c == '[') {
      std::size_t j = i + 1;
      if (j < n && glob[j] == '!') ++j;
      if (j < n && glob[j] == ']') ++j;
      while (j < n && glob[j] != ']') ++j;
      if (j >= n) {
        out += "\\[";  // no closing ']': a literal '[' (fnmatch's rule)
        continue;
      }
      std::string_view stuff = glob.substr(i + 1, j - i - 1);
      out += '[';
      if (!stuff.empty() && stuff[0] == '!') {
        out += '^';
        stuff.remove_prefix(1);
      } else if (!stuff.empty() && stuff[0] == '^') {
        out += "\\^";
        stuff.remove_prefix(1);
      }
      for (const char k : stuff) {
        if (k == '\\') out += '\\';
        out += k;
      }
      out += ']';
      i = j;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (static_cast<unsigned char>(c) & 0x80) != 0) {
      out += c;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out + ")$";
}

// A condition for a statement: SQL whose parameters are written $A, $B, ...
// (numbered when placed), and their values.
struct SqlCondition {
  std::string sql;
  std::vector<std::string> params;
  // The SQL with $A.. numbered from `first`.
  [[nodiscard]] std::string Sql(int first) const {
    std::string out = sql;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string mark = std::string("$") + static_cast<char>('A' + i);
      for (auto at = out.find(mark); at != std::string::npos; at = out.find(mark)) {
        out.replace(at, mark.size(), "$" + std::to_string(first + static_cast<int>(i)));
      }
    }
    return out;
  }
};

// Retention classes by glob: conditions on an expression for "the first rule
// matching it is rule i" and "no rule matches it".
class ClassRegexes {
 public:
  explicit ClassRegexes(const std::vector<RetentionRule>& rules) {
    for (const RetentionRule& r : rules) regexes_.push_back(FnmatchRegex(r.glob));
  }
  [[nodiscard]] SqlCondition Rule(std::size_t i, const std::string& expr) const {
    if (i == 0) return {"coalesce(" + expr + " ~ $A, false)", {regexes_[0]}};
    return {"coalesce(" + expr + " ~ $A, false) AND NOT coalesce(" + expr + " ~ $B, false)",
            {regexes_[i], Any(i)}};
  }
  [[nodiscard]] SqlCondition None(const std::string& expr) const {
    if (regexes_.empty()) return {};
    return {"NOT coalesce(" + expr + " ~ $A, false)", {Any(regexes_.size())}};
  }

 private:
  // Any of the first `n` rules.
  [[nodiscard]] std::string Any(std::size_t n) const {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += (i == 0 ? "" : "|") + regexes_[i];
    return out;
  }
  std::vector<std::string> regexes_;
};

// Days since the Unix epoch (UTC) of `t`.
std::int64_t DayOf(Micros t) { return date::floor<date::days>(t).time_since_epoch().count(); }

// "YYYYMMDD" and "YYYY-MM-DD" of a day number.
std::string DayText(std::int64_t day, bool dashes) {
  const date::year_month_day ymd{date::sys_days{date::days{day}}};
  char buf[16];
  std::snprintf(buf, sizeof buf, dashes ? "%04d-%02u-%02u" : "%04d%02u%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

// The tables partitioned by day: the archive by arrival, a job's returns and
// expected minions by the day of the job (job.part_day, migrations/postgres/0003).
constexpr const char* kDayPartitioned[] = {"event", "ret", "job_minion"};

// The day of a partition of `table` named <table>_pYYYYMMDD, or nullopt.
std::optional<std::int64_t> PartitionDay(std::string_view name, std::string_view table) {
  const std::size_t at = table.size() + 2;
  if (name.size() != at + 8 || name.substr(0, table.size()) != table || name.substr(table.size(), 2) != "_p" ||
      name.substr(at).find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  const int y = std::stoi(std::string(name.substr(at, 4)));
  const unsigned m = static_cast<unsigned>(std::stoi(std::string(name.substr(at + 4, 2))));
  const unsigned d = static_cast<unsigned>(std::stoi(std::string(name.substr(at + 6, 2))));
  const date::year_month_day ymd{date::year{y}, date::month{m}, date::day{d}};
  if (!ymd.ok()) return std::nullopt;
  return date::sys_days{ymd}.time_since_epoch().count();
}

PgParam P(std::string_view v) { return PgParam{v}; }

// Parameters of a statement that waits (PgStatement owns them).
using Owned = PgStatement::Param;
Owned O(std::string v) { return Owned{std::move(v)}; }
Owned ONull() { return Owned{}; }
Owned OBool(const std::optional<bool>& b) { return b ? O(*b ? "t" : "f") : ONull(); }
Owned OInt(const std::optional<std::int64_t>& v) { return v ? O(std::to_string(*v)) : ONull(); }

// A PostgreSQL array literal ('{...}') built element by element, the value
// of one array parameter: a multi-row write is then one statement text for
// any number of rows, parsed and planned once per connection.
class ArrayText {
 public:
  void Add(std::string_view text) {
    Comma();
    out_ += '"';
    // Inside quotes only '"' and '\\' need a backslash.
    for (std::size_t at = 0;;) {
      const std::size_t special = text.find_first_of("\"\\", at);
      out_.append(text.substr(at, special - at));
      if (special == std::string_view::npos) break;
      out_ += '\\';
      out_ += text[special];
      at = special + 1;
    }
    out_ += '"';
  }
  void Add(const std::string& text) { Add(std::string_view(text)); }
  void Add(const std::optional<std::string>& text) {
    if (text) {
      Add(std::string_view(*text));
    } else {
      Null();
    }
  }
  void Add(std::int64_t v) {
    Comma();
    out_ += std::to_string(v);
  }
  void Add(const std::optional<std::int64_t>& v) {
    if (v) {
      Add(*v);
    } else {
      Null();
    }
  }
  void Add(const std::optional<bool>& b) {
    Comma();
    out_ += !b ? "NULL" : *b ? "t" : "f";
  }
  // A number already in text (TimeText).
  void AddNumber(std::string_view number) {
    Comma();
    out_ += number;
  }
  // The literal; the builder is empty afterwards.
  std::string Take() {
    out_ += '}';
    std::string done = std::move(out_);
    out_ = "{";
    return done;
  }

 private:
  void Null() {
    Comma();
    out_ += "NULL";
  }
  void Comma() {
    if (out_.size() > 1) out_ += ',';
  }
  std::string out_ = "{";
};

// Minion name -> row id cache bound (sqlite_backend.cpp says why).
constexpr std::size_t kMaxCachedMinions = 100000;

class PostgresBackend final : public Backend {
 public:
  PostgresBackend(const std::string& uri, const OpenOptions& options)
      : clock_(options.clock != nullptr ? options.clock : &system_clock_) {
    try {
      db_ = std::make_unique<PgConnection>(uri);
    } catch (...) {
      RethrowPgAsStoreError("opening the store", Op::kRead);
    }
    Guard("opening the store", options.access == OpenOptions::Access::kReadOnly ? Op::kRead : Op::kWrite, [&] {
      // The session's settings in one round trip (a simple query runs
      // several statements), and for a reader the schema check with them:
      // each round trip is a wake-up of the server process, and brine-run
      // opens a new connection for every call (round 4 folded five into one).
      std::string session = "SET statement_timeout = 0; SET lock_timeout = " + Int(options.busy_timeout.count());
      if (options.sync == OpenOptions::Sync::kNormal) {
        // Acknowledged still means committed; only a server crash may lose
        // the last commits (as SQLite's NORMAL loses them on a power cut).
        session += "; SET synchronous_commit = on";
      }
      if (options.access == OpenOptions::Access::kReadOnly) {
        const int version = ReadOnlySchemaVersion(*db_, session + "; SET default_transaction_read_only = on");
        const int latest = static_cast<int>(EmbeddedPostgresMigrations().size());
        if (version > latest) throw TooNewError(version, latest);
        if (version == 0) throw FatalError(db_->Where() + " is not a brine store (schema version 0)");
        return 0;
      }
      // A writer's statements are prepared once and every value in them is
      // a parameter (Plan::kReuse): a generic plan fits them all. Left to
      // choose, the plan cache kept planning the job read afresh for each
      // call, since a plan for one day's partition of ret looks cheaper than
      // one for all of them: 200,000 returns through one writer took 15-19 s
      // against 12-15 s before 0003, and take 13-14 s with generic plans.
      Db().Exec(session + "; SET plan_cache_mode = force_generic_plan");
      ApplyPostgresMigrations(*db_);
      EnsurePartitions();
      // The return ids' sequence is the identity of ret_default, the table
      // that was ret before 0003 made ret partitioned.
      PgResult r = Db().Exec(
          "WITH i AS (INSERT INTO master (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id)"
          " SELECT id, quote_literal(pg_get_serial_sequence('ret_default', 'id'))"
          " FROM (SELECT id FROM i UNION ALL SELECT id FROM master WHERE name = $1) AS m",
          {P(options.master_id)});
      master_row_ = r.integer(0, 0);
      // The ids' statement names the sequence as a constant: looked up per
      // id (pg_get_serial_sequence in the statement), the name had cost
      // 5-12 ms per 1000 ids against 1-4 ms.
      draw_return_ids_ = "SELECT nextval(" + std::string(r.text(0, 1)) + "::regclass) FROM generate_series(1, " +
                         Int(kReturnIdsPerDraw) + ") ORDER BY 1 DESC";
      return 0;
    });
  }

  ~PostgresBackend() override { Rollback(); }

  // --- transactions -----------------------------------------------------------

  // BEGIN goes with the first statement of the batch: a server lost
  // between batches then fails a write (the caller replays the batch), not
  // the opening of one.
  void Begin() override { begin_pending_ = true; }

  void Commit() override {
    read_jobs_.clear();
    if (begin_pending_ && !Waiting()) {
      begin_pending_ = false;  // nothing was written
      return;
    }
    Send(PgStatement{"COMMIT", {}});
  }

  void Rollback() noexcept override {
    begin_pending_ = false;
    pending_events_.clear();
    pending_returns_.clear();
    pending_expected_.clear();
    pending_loads_.clear();
    waiting_load_jobs_.clear();
    waiting_load_jids_.clear();
    waiting_load_unread_ = false;
    deferred_.clear();
    read_jobs_.clear();
    minions_.clear();
    try {
      if (db_ && db_->in_transaction()) db_->Exec("ROLLBACK");
    } catch (...) {
    }
  }

  [[noreturn]] void Rethrow(std::string_view context, Op op) override { RethrowPgAsStoreError(context, op); }

  bool Shared() const override { return true; }

  // --- job cache primitives ---------------------------------------------------

  JobState GetOrCreateJob(const std::string& jid, Micros seen) override {
    // One round trip, two statements: create the row unless it exists, and
    // lock it until this batch commits either way (ON CONFLICT DO UPDATE
    // locks the row it meets even where its WHERE is false, and so writes no
    // new version: FOR NO KEY UPDATE, as `nocache` is in no unique key;
    // another master's batch naming the jid waits here for ours, so two
    // masters never both decide that the same minion's return is the first);
    // then, in a statement of its own whose snapshot is taken after the lock
    // (READ COMMITTED), read its state and which minions returned already
    // (InsertReturn decides first-wins from them). The returns' unique key
    // stays as the net for writers that take no lock (AppendReturnInserts).
    // part_day, the day the job's returns and expected minions are
    // partitioned by, is the UTC day of `seen` (migrations/postgres/0003).
    const std::string t = TimeText(seen);
    // start_time: brine_start_time's rule, once per row (migrations/postgres/0004).
    Defer("INSERT INTO job (jid, seen, part_day, start_time)"
          " VALUES ($1, to_timestamp($2), (to_timestamp($2) AT TIME ZONE 'UTC')::date,"
          " brine_start_time($1, to_timestamp($2)))"
          " ON CONFLICT (jid) DO UPDATE SET nocache = job.nocache WHERE false",
          {O(jid), O(t)}, Plan::kReuse);
    // The job's returns are in its day's partition. The day is a parameter
    // (a guess: the day this row would get, which an existing job has too
    // unless it was first seen on an earlier day), so that the executor
    // prunes the other partitions before it opens them; a wrong guess costs
    // one more round trip.
    const std::string guess = DayText(DayOf(seen), true);
    // The read must see this job's own load write if one waits.
    if (waiting_load_unread_ || waiting_load_jids_.contains(jid)) SendLoads();
    PgResult r = QueryAhead(
        "SELECT id, load_kind, nocache, metadata IS NOT NULL, stub_minions,"
        " (SELECT string_agg(r.minion_id::text, ',') FROM ret AS r WHERE r.job_id = job.id AND r.job_day = $2::date),"
        " part_day::text FROM job WHERE jid = $1",
        {O(jid), O(guess)}, Plan::kReuse);
    JobState s;
    s.id = r.integer(0, 0);
    s.load_kind = static_cast<LoadKind>(r.integer(0, 1));
    s.nocache = r.text(0, 2) == "t";
    s.has_metadata = r.text(0, 3) == "t";
    s.stub_minions = r.text(0, 4) == "t";
    ReadJob& read = read_jobs_[s.id];
    read.jid = jid;
    read.day = r.null(0, 6) ? std::nullopt : std::optional<std::string>(r.text(0, 6));
    std::optional<PgResult> again;
    if (read.day != guess) {
      // First seen on another day, or before 0003 (the default partition).
      again = read.day ? QueryAhead("SELECT string_agg(minion_id::text, ',') FROM ret"
                                    " WHERE job_id = $1::bigint AND job_day = $2::date",
                                    {O(Int(s.id)), O(*read.day)}, Plan::kReuse)
                       : QueryAhead("SELECT string_agg(minion_id::text, ',') FROM ret_default WHERE job_id = $1::bigint",
                                    {O(Int(s.id))}, Plan::kReuse);
    }
    // Added to what this batch knows already: a job named again in the batch
    // may have returns that wait, which the read above cannot see.
    auto& minions = read.returned;
    std::string_view list = again ? again->text(0, 0) : r.text(0, 5);
    while (!list.empty()) {
      const auto comma = list.find(',');
      minions.insert(std::stoll(std::string(list.substr(0, comma))));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return s;
  }

  void SetNocache(std::int64_t job) override {
    SendLoadOf(job);
    Defer("UPDATE job SET nocache = true WHERE id = $1", {O(Int(job))}, Plan::kReuse);
  }

  void PutLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members, LoadKind kind,
               const std::optional<std::string>& metadata_json) override {
    WaitLoad({job, load_json, members.fun ? std::optional(*members.fun) : std::nullopt, kind, metadata_json,
              LoadUserOf(members.user), false});
  }

  void PutStubLoad(std::int64_t job, const std::string& load_json, const LoadMembers& members,
                   std::string_view minion) override {
    WaitLoad({job, load_json, members.fun ? std::optional(*members.fun) : std::nullopt, LoadKind::kStub, std::nullopt,
              LoadUserOf(members.user), true});
    const std::string m(minion);
    AddExpected(job, std::span(&m, 1));
  }

  void DropStubMinions(std::int64_t job) override {
    SendLoadOf(job);
    // The job's expected minions that wait would go with the rows: they go
    // now (the DELETE, deferred, is sent ahead of what waits).
    std::erase_if(pending_expected_, [job](const PendingExpected& e) { return e.job == job; });
    Defer("DELETE FROM job_minion WHERE job_id = " + Int(job));
    Defer("UPDATE job SET stub_minions = false WHERE id = " + Int(job));
  }

  void AddExpected(std::int64_t job, std::span<const std::string> minions) override {
    if (minions.empty()) return;
    // The job's day as read with it; asked of its row when NULL (a job this
    // transaction did not read, or one from before 0003, whose day is NULL).
    const std::optional<std::string>* read_day = DayOfJob(job);
    const std::optional<std::string> day = read_day != nullptr ? *read_day : std::nullopt;
    for (std::int64_t id : MinionIds(minions)) pending_expected_.push_back({job, id, day});
    if (pending_expected_.size() >= kExpectedPerInsert) Send(std::nullopt);
  }

  std::optional<ReturnId> InsertReturn(const ReturnRow& row) override {
    const std::int64_t minion = MinionId(row.minion);
    auto known = read_jobs_.find(row.job_id);
    if (known == read_jobs_.end()) {
      // A job this transaction did not read (JobCache always reads it
      // first); ask, as before batching.
      const std::string t = TimeText(row.received);
      PgResult r = Query(
          "INSERT INTO ret (job_id, minion_id, recv, success, retcode, full_ret, job_day)"
          " SELECT " + Int(row.job_id) + ", " + Int(minion) + ", to_timestamp($1), $2, $3, $4, part_day"
          " FROM job WHERE id = " + Int(row.job_id) + " ON CONFLICT DO NOTHING RETURNING id",
          {O(t), OBool(row.success), OInt(row.retcode), O(*row.full_ret)});
      if (r.rows() == 0) return std::nullopt;
      return r.integer(0, 0);
    }
    // First wins, decided here: the job's returned minions as read with the
    // job, plus this batch's. A writer that takes no lock storing the same
    // return before the commit fails the batch (AppendReturnInserts), and the
    // replay sees it.
    if (!known->second.returned.insert(minion).second) return std::nullopt;
    const ReturnId id = NextReturnId();
    pending_returns_.push_back(
        {id, row.job_id, minion, TimeText(row.received), row.success, row.retcode, *row.full_ret, known->second.day});
    if (pending_returns_.size() >= kReturnsPerInsert) Send(std::nullopt);
    return id;
  }

  std::pair<ReturnId, std::string> StoredReturn(std::int64_t job, std::string_view minion) override {
    const std::int64_t minion_id = MinionId(minion);
    for (auto it = pending_returns_.rbegin(); it != pending_returns_.rend(); ++it) {
      if (it->job == job && it->minion == minion_id) return {it->id, it->full_ret};
    }
    PgResult r = Query("SELECT id, full_ret FROM ret WHERE job_id = " + Int(job) + " AND minion_id = " + Int(minion_id));
    return {r.integer(0, 0), std::string(r.text(0, 1))};
  }

  std::optional<std::pair<ReturnId, std::string>> FindReturn(const std::string& jid,
                                                             const std::string& minion) override {
    PgResult r = Query(
        "SELECT r.id, r.full_ret FROM ret AS r JOIN job AS j ON j.id = r.job_id"
        " JOIN minion AS m ON m.id = r.minion_id WHERE j.jid = $1 AND m.name = $2",
        {O(jid), O(minion)});
    if (r.rows() == 0) return std::nullopt;
    return std::pair<ReturnId, std::string>{r.integer(0, 0), std::string(r.text(0, 1))};
  }

  void ReplaceReturn(ReturnId id, const ReturnRow& row) override {
    DetachEvents("ret_id = " + Int(id));  // sends what waits first
    Defer("UPDATE ret SET full_ret = $1, success = $2, retcode = $3 WHERE id = " + Int(id),
          {O(*row.full_ret), OBool(row.success), OInt(row.retcode)});
  }

  void SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) override {
    SendLoadOf(job);
    Defer("UPDATE job SET metadata = $1 WHERE id = $2::bigint AND metadata IS NULL", {O(metadata_json), O(Int(job))},
          Plan::kReuse);
  }

  std::optional<std::pair<std::int64_t, std::string>> ReturnOwner(ReturnId id) override {
    PgResult r = Query("SELECT r.job_id, m.name FROM ret AS r JOIN minion AS m ON m.id = r.minion_id WHERE r.id = " +
                       Int(id));
    if (r.rows() == 0) return std::nullopt;
    return std::pair<std::int64_t, std::string>{r.integer(0, 0), std::string(r.text(0, 1))};
  }

  void AppendEvents(std::vector<EventRow>&& events) override {
    pending_events_.insert(pending_events_.end(), std::make_move_iterator(events.begin()),
                           std::make_move_iterator(events.end()));
    if (pending_events_.size() >= kEventsPerInsert) Send(std::nullopt);
  }

  void Quarantine(std::string_view raw, const std::string& reason, Micros received) override {
    Defer("INSERT INTO quarantine (received, reason, raw) VALUES (to_timestamp($1), $2, $3)",
          {O(TimeText(received)), O(reason), Owned{std::string(raw), true}});
  }

  void SetEndtime(std::int64_t job, const std::string& endtime) override {
    SendLoadOf(job);
    Defer("UPDATE job SET endtime = $1 WHERE id = $2::bigint", {O(endtime), O(Int(job))}, Plan::kReuse);
  }

  CleanResult CleanOldJobs(const Retention& retention, std::int64_t max_rows) override {
    Send(std::nullopt);
    read_jobs_.clear();  // returns may go
    CleanResult result;
    std::int64_t budget = max_rows;
    // With rules by class, each row's class is the first glob that matches
    // (its regular expression here: FnmatchRegex); each class goes by its own cut.
    const ClassRegexes tags(retention.events_by_tag);
    // Whole days before every event cut go at once, outside the row budget:
    // a DROP costs the same for ten rows or ten million.
    std::optional<Micros> drop_before = retention.events_before;
    for (const RetentionRule& r : retention.events_by_tag) {
      drop_before = drop_before && r.before ? std::optional(std::min(*drop_before, *r.before)) : std::nullopt;
    }
    if (drop_before) {
      PgResult parts = Db().Exec(
          "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid"
          " WHERE i.inhparent = 'event'::regclass ORDER BY 1");
      for (int i = 0; i < parts.rows(); ++i) {
        const std::string name(parts.text(i, 0));
        const auto day = PartitionDay(name, "event");
        if (!day || *day + 1 > DayOf(*drop_before)) continue;
        result.events += Db().Exec("SELECT count(*) FROM " + name).integer(0, 0);
        Db().Exec("DROP TABLE " + name);
      }
    }
    const std::string tag =
        "coalesce(tag, (SELECT 'salt/job/' || j.jid || '/ret/' || m.name FROM ret AS r"
        " JOIN job AS j ON j.id = r.job_id JOIN minion AS m ON m.id = r.minion_id WHERE r.id = event.ret_id))";
    for (std::size_t i = 0; i < retention.events_by_tag.size() && budget > 0; ++i) {
      if (!retention.events_by_tag[i].before) continue;
      const std::int64_t n =
          DeleteOlder("event", TimeText(*retention.events_by_tag[i].before), budget, tags.Rule(i, tag));
      result.events += n;
      budget -= n;
    }
    if (retention.events_before && budget > 0) {
      const std::string cut = TimeText(*retention.events_before);
      const std::int64_t deleted = DeleteOlder("event", cut, budget, tags.None(tag));
      result.events += deleted;
      budget -= deleted;
      if (budget > 0) {
        result.quarantined = DeleteOlder("quarantine", cut, budget, {});
        budget -= result.quarantined;
      }
    }
    const ClassRegexes funs(retention.jobs_by_fun);
    DropJobDays(retention, funs, result);
    for (std::size_t i = 0; i < retention.jobs_by_fun.size() && budget > 0; ++i) {
      if (!retention.jobs_by_fun[i].before) continue;
      DeleteOldJobs(*retention.jobs_by_fun[i].before, funs.Rule(i, "fun"), budget, result);
    }
    if (retention.jobs_before && budget > 0) DeleteOldJobs(*retention.jobs_before, funs.None("fun"), budget, result);
    result.more = budget <= 0;
    return result;
  }

  // Drops whole days of returns and expected minions (migrations/postgres/0003),
  // outside the row budget like the archive's days, and deletes those days'
  // job rows. A day goes once no job first seen that day is kept, whatever
  // its class. Only days before every job cut qualify: every job of such a
  // day was seen before its cut, so one whose jid is no time (it ages by
  // `seen`) is past it; a time jid is kept while its text is at or after its
  // class's cut. (A jid that looks like a time but names no date, which ages
  // by `seen` too, can only keep a day here, never drop one too early.)
  // A day qualifies only with both its partitions: a day whose rows went to a
  // default partition (created late, see EnsurePartitions) goes job by job.
  void DropJobDays(const Retention& retention, const ClassRegexes& funs, CleanResult& result) {
    std::optional<Micros> cut = retention.jobs_before;
    for (const RetentionRule& r : retention.jobs_by_fun) {
      if (r.before) cut = cut ? std::min(*cut, *r.before) : *r.before;
    }
    if (!cut) return;
    std::map<std::int64_t, int> tables_of_day;  // 2: both partitions exist
    PgResult parts = Db().Exec(
        "SELECT c.relname, p.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid"
        " JOIN pg_class AS p ON p.oid = i.inhparent WHERE i.inhparent IN ('ret'::regclass, 'job_minion'::regclass)");
    for (int i = 0; i < parts.rows(); ++i) {
      const auto day = PartitionDay(parts.text(i, 0), parts.text(i, 1));
      if (day && *day + 1 <= DayOf(*cut)) ++tables_of_day[*day];
    }
    if (tables_of_day.empty()) return;
    // Two masters' retention would meet on the same days: one drops them.
    if (Db().Exec("SELECT pg_try_advisory_xact_lock(" + Int(kRetentionLock) + ")").text(0, 0) != "t") return;
    // A job of the day that is kept: of a class kept forever, or a time
    // jid at or after its class's cut.
    std::vector<std::string> values;
    auto param = [&](std::string v) {
      values.push_back(std::move(v));
      return "$" + std::to_string(values.size() + 1);  // $1 is the day
    };
    auto numbered = [&](const SqlCondition& c) {
      const int first = static_cast<int>(values.size()) + 2;
      values.insert(values.end(), c.params.begin(), c.params.end());
      return c.sql.empty() ? std::string("true") : c.Sql(first);
    };
    auto kept_from = [&](const std::optional<Micros>& before) {
      return before ? " AND jid ~ '^[0-9]{20}(_|$)' AND jid >= " + param(FormatJid(*before)) : std::string();
    };
    std::string kept;
    for (std::size_t i = 0; i < retention.jobs_by_fun.size(); ++i) {
      const std::string cls = numbered(funs.Rule(i, "fun"));
      kept += "(" + cls + kept_from(retention.jobs_by_fun[i].before) + ") OR ";
    }
    const std::string none = numbered(funs.None("fun"));
    kept += "(" + none + kept_from(retention.jobs_before) + ")";
    for (const auto& [day, tables] : tables_of_day) {
      if (tables != 2) continue;
      const std::string day_text = DayText(day, true);
      std::vector<PgParam> params = {P(day_text)};
      for (const std::string& v : values) params.push_back(P(v));
      if (Db().Exec("SELECT 1 FROM job WHERE part_day = $1::date AND (" + kept + ") LIMIT 1", params).rows() > 0) {
        continue;
      }
      const std::string ret_p = "ret_p" + DayText(day, false);
      // The day's ids are a range in every index that names them, which
      // keeps the archive's lookups below to index ranges.
      PgResult ids = Db().Exec("SELECT min(id), max(id), count(*) FROM " + ret_p);
      if (ids.integer(0, 2) > 0) {
        // Archived events that outlive the day's returns get their payload back.
        DetachEvents("ret_id BETWEEN " + std::string(ids.text(0, 0)) + " AND " + std::string(ids.text(0, 1)) +
                     " AND e.ret_id IN (SELECT id FROM " + ret_p + ")");
      }
      PgResult jobs = Db().Exec("SELECT min(id), max(id) FROM job WHERE part_day = $1::date", {params[0]});
      if (!jobs.null(0, 0)) {
        Db().Exec("UPDATE event SET job_id = NULL WHERE job_id BETWEEN " + std::string(jobs.text(0, 0)) + " AND " +
                      std::string(jobs.text(0, 1)) + " AND job_id IN (SELECT id FROM job WHERE part_day = $1::date)",
                  {params[0]});
      }
      Db().Exec("DROP TABLE " + ret_p + ", job_minion_p" + DayText(day, false));
      result.returns += ids.integer(0, 2);
      result.jobs += Db().Exec("DELETE FROM job WHERE part_day = $1::date", {params[0]}).affected();
    }
  }

  // Deletes jobs older than `before` for which `condition` holds, with their
  // returns and expected minions.
  void DeleteOldJobs(Micros before, const SqlCondition& condition, std::int64_t& budget, CleanResult& result) {
    // Jids that name a time (20 digits, maybe _<pid>: FormatJid's form)
    // are UTC times, so their text order is time order; every other jid
    // ("req", "12345", "0") ages by when brine first saw it, as on SQLite
    // (brine_jid_is_time there): a short numeric jid sorts before every
    // real one and would otherwise be deleted at once.
    const std::string seen = TimeText(before);
    const std::string jid = FormatJid(before);
    const std::string limit = Int(budget);
    std::vector<PgParam> params = {P(jid), P(seen), P(limit)};
    const std::string and_condition = condition.sql.empty() ? "" : " AND " + condition.Sql(4);
    for (const std::string& p : condition.params) params.push_back(P(p));
    // The regex picks candidates; JidToMicros (SQLite's brine_jid_is_time)
    // decides, so "20241399000000000000" is no time on either backend.
    PgResult pick = Db().Exec(
        "(SELECT id, jid, true FROM job WHERE jid < $1 AND jid ~ '^[0-9]{20}(_|$)'" + and_condition +
            ") UNION ALL (SELECT id, jid, false FROM job WHERE seen < to_timestamp($2)" + and_condition + ") LIMIT $3",
        params);
    for (int i = 0; i < pick.rows() && budget > 0; ++i) {
      const bool is_time = JidToMicros(pick.text(i, 1)).has_value();
      if (is_time != (pick.text(i, 2) == "t")) continue;
      DeleteJob(pick.integer(i, 0), budget, result);
    }
  }

  // Deletes one job with its returns and expected minions.
  void DeleteJob(std::int64_t job, std::int64_t& budget, CleanResult& result) {
    const std::string id = Int(job);
    DetachEvents("job_id = " + id + " AND ret_id IS NOT NULL");
    Db().Exec("UPDATE event SET job_id = NULL WHERE job_id = " + id);
    const std::int64_t n = Db().Exec("DELETE FROM ret WHERE job_id = " + id).affected();
    Db().Exec("DELETE FROM job_minion WHERE job_id = " + id);
    Db().Exec("DELETE FROM job WHERE id = " + id);
    result.returns += n;
    result.jobs += 1;
    budget -= n + 1;
  }

  // Deletes up to `n` of the oldest rows of `table` (event or quarantine)
  // that arrived up to `until` (inclusive), adding their payload bytes.
  std::int64_t DeleteOldestRows(const std::string& table, const std::string& payload, std::int64_t until,
                                std::int64_t n, CleanResult& result) {
    const std::string t = TimeText(FromUnixMicros(until));
    const std::string limit = Int(n);
    PgResult r = Db().Exec("WITH d AS (DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                               " WHERE received <= to_timestamp($1) ORDER BY received, id LIMIT $2) RETURNING " +
                               payload + " AS b) SELECT count(*), coalesce(sum(b), 0)::bigint FROM d",
                           {P(t), P(limit)});
    result.bytes += r.integer(0, 1);
    return r.integer(0, 0);
  }

  std::int64_t OldestArrival(const std::string& table) {
    PgResult r = Db().Exec("SELECT (extract(epoch FROM received) * 1000000)::bigint FROM " + table +
                           " ORDER BY received LIMIT 1");
    return r.rows() == 0 ? std::numeric_limits<std::int64_t>::max() : r.integer(0, 0);
  }

  CleanResult PruneOldest(std::int64_t bytes, std::int64_t max_rows) override {
    Send(std::nullopt);
    read_jobs_.clear();  // returns may go
    CleanResult result;
    std::int64_t budget = max_rows;
    constexpr std::int64_t kRowsPerStep = 500;
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
    while (result.bytes < bytes && budget > 0) {
      PgResult j = Db().Exec("SELECT id, jid, (extract(epoch FROM seen) * 1000000)::bigint,"
                             " coalesce(octet_length(load), 0) + coalesce((SELECT sum(octet_length(full_ret))"
                             " FROM ret WHERE ret.job_id = job.id), 0)::bigint FROM job ORDER BY jid LIMIT 1");
      std::int64_t job_t = kNone;
      if (j.rows() > 0) {
        const auto t = JidToMicros(j.text(0, 1));
        job_t = t ? ToUnixMicros(*t) : j.integer(0, 2);
      }
      const std::int64_t event_t = OldestArrival("event");
      const std::int64_t frame_t = OldestArrival("quarantine");
      if (job_t == kNone && event_t == kNone && frame_t == kNone) break;
      if (job_t <= event_t && job_t <= frame_t) {
        result.bytes += j.integer(0, 3);
        DeleteJob(j.integer(0, 0), budget, result);
      } else if (event_t <= frame_t) {
        const std::int64_t n =
            DeleteOldestRows("event", "coalesce(octet_length(data), 0) + coalesce(octet_length(tag), 0)",
                             std::min(job_t, frame_t), std::min(budget, kRowsPerStep), result);
        result.events += n;
        budget -= n;
      } else {
        const std::int64_t n = DeleteOldestRows("quarantine", "octet_length(raw) + octet_length(reason)",
                                                std::min(job_t, event_t), std::min(budget, kRowsPerStep), result);
        result.quarantined += n;
        budget -= n;
      }
    }
    result.more = result.bytes < bytes && budget <= 0;
    return result;
  }

  std::int64_t UsedBytes() override {
    return Guard("used_bytes", Op::kRead, [&] {
      // Live rows x (average width of their columns + a tuple header), per
      // table and partition of this schema, from the statistics: a measure
      // that shrinks as rows are deleted, which pg_database_size does not
      // (freed space stays in the files for reuse).
      PgResult r = Db().Exec(
          "SELECT coalesce(sum(s.n_live_tup * (w.width + 28)), 0)::bigint FROM pg_stat_user_tables AS s"
          " JOIN (SELECT tablename, sum(avg_width) AS width FROM pg_stats WHERE schemaname = current_schema()"
          " GROUP BY tablename) AS w ON w.tablename = s.relname WHERE s.schemaname = current_schema()");
      return r.integer(0, 0);
    });
  }

  void PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) override {
    if (counters.empty()) return;
    ArrayText names, values;
    for (const auto& [name, value] : counters) {
      names.Add(name);
      values.Add(value);
    }
    Defer("INSERT INTO master_counter (master_id, name, value) SELECT $1::bigint, n, v FROM unnest($2::text[], $3::bigint[])"
          " AS u(n, v) ON CONFLICT (master_id, name) DO UPDATE SET value = excluded.value",
          {O(Int(master_row_)), O(names.Take()), O(values.Take())}, Plan::kReuse);
  }

  void PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) override {
    Defer("INSERT INTO spool_progress (master_id, file_key, offset_bytes) VALUES ($1, $2, $3)"
          " ON CONFLICT (master_id, file_key) DO UPDATE SET offset_bytes = excluded.offset_bytes",
          {O(Int(master_row_)), O(file_key), O(Int(offset_bytes))}, Plan::kReuse);
  }

  void ForgetSpoolProgress(const std::string& file_key) override {
    Defer("DELETE FROM spool_progress WHERE master_id = $1 AND file_key = $2", {O(Int(master_row_)), O(file_key)},
          Plan::kReuse);
  }

  // --- reads ----------------------------------------------------------------------

  Store::RowCounts CountRows() override {
    return Guard("count_rows", Op::kRead, [&] {
      PgResult r = Db().Exec("SELECT (SELECT count(*) FROM job), (SELECT count(*) FROM event)");
      Store::RowCounts c;
      c.jobs = r.integer(0, 0);
      c.events = r.integer(0, 1);
      return c;
    });
  }

  std::optional<Micros> OldestEvent() override {
    return Guard("oldest_event", Op::kRead, [&]() -> std::optional<Micros> {
      PgResult r = Db().Exec("SELECT (extract(epoch FROM min(received)) * 1000000)::bigint FROM event");
      if (r.null(0, 0)) return std::nullopt;
      return FromUnixMicros(r.integer(0, 0));
    });
  }

  Value GetCounters() override {
    return Guard("get_counters", Op::kRead, [&] {
      PgResult r = Db().Exec("SELECT master_id, name, value FROM brine_counters ORDER BY master_id, name");
      Value out = Value::EmptyMap();
      for (int i = 0; i < r.rows(); ++i) {
        const std::string master(r.text(i, 0));
        Value* m = out.Find(master);
        if (m == nullptr) {
          out.Set(master, Value::EmptyMap());
          m = out.Find(master);
        }
        m->Set(std::string(r.text(i, 1)), static_cast<long long>(r.integer(i, 2)));
      }
      return out;
    });
  }

  std::vector<std::pair<std::string, std::int64_t>> GetSpoolProgress() override {
    return Guard("get_spool_progress", Op::kRead, [&] {
      PgResult r = Db().Exec("SELECT file_key, offset_bytes FROM spool_progress WHERE master_id = $1 ORDER BY file_key",
                             {P(Int(master_row_))});
      std::vector<std::pair<std::string, std::int64_t>> out;
      for (int i = 0; i < r.rows(); ++i) out.emplace_back(std::string(r.text(i, 0)), r.integer(i, 1));
      return out;
    });
  }

  Value GetLoad(const std::string& jid) override {
    return Guard("get_load", Op::kRead, [&] {
      PgResult r = Db().Exec("SELECT id, load FROM job WHERE jid = $1", {P(jid)});
      if (r.rows() == 0 || r.null(0, 1)) return Value::EmptyMap();
      Value load = ParseJson(r.text(0, 1));
      PgResult m = Db().Exec(
          "SELECT m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
          " WHERE jm.job_id = " + Int(r.integer(0, 0)) + " ORDER BY m.name");
      ValueList minions;
      for (int i = 0; i < m.rows(); ++i) minions.emplace_back(std::string(m.text(i, 0)));
      if (!minions.empty()) load.Set("Minions", Value(std::move(minions)));
      return load;
    });
  }

  Value GetJid(const std::string& jid) override {
    return Guard("get_jid", Op::kRead, [&] {
      static constexpr std::string_view kKeys[] = {"return", "retcode", "success", "out"};
      Value out = Value::EmptyMap();
      ForEachReturn(jid, [&](std::string_view minion, std::string_view text) {
        Value full = ParseJsonMembers(text, kKeys);
        Value r = Value::EmptyMap();
        for (const std::string_view key : kKeys) {
          if (Value* v = full.Find(key)) r.as_map().emplace_back(key, std::move(*v));
        }
        out.as_map().emplace_back(std::string(minion), std::move(r));
      });
      return out;
    });
  }

  Value GetJidFull(const std::string& jid) override {
    return Guard("get_jid", Op::kRead, [&] {
      Value out = Value::EmptyMap();
      ForEachReturn(jid, [&](std::string_view minion, std::string_view text) {
        out.as_map().emplace_back(std::string(minion), ParseJson(text));
      });
      return out;
    });
  }

  void ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) override {
    // The texts are handed out from the query's result, uncopied.
    std::exception_ptr caller_failure;
    Guard("get_jid", Op::kRead, [&] {
      ForEachReturn(jid, [&](std::string_view minion, std::string_view text) {
        if (caller_failure) return;
        try {
          fn(minion, text);
        } catch (...) {
          caller_failure = std::current_exception();
        }
      });
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  void ForEachJob(const JobFilter& filter, const std::function<void(JobRecord&&)>& fn) override {
    std::exception_ptr caller_failure;
    std::vector<JobRecord> newest;
    Guard("get_jids", Op::kRead, [&] {
      std::string sql = "SELECT jid, load, metadata, endtime FROM job WHERE load IS NOT NULL";
      std::vector<std::string> binds;
      auto bind = [&](std::string v) {
        binds.push_back(std::move(v));
        return "$" + std::to_string(binds.size());
      };
      if (filter.jid_min) sql += " AND jid >= " + bind(*filter.jid_min);
      if (filter.jid_max) sql += " AND jid <= " + bind(*filter.jid_max);
      const bool literal = std::all_of(filter.function_globs.begin(), filter.function_globs.end(),
                                       [](const std::string& g) { return IsLiteralGlob(g); });
      if (!filter.function_globs.empty() && literal) {
        sql += " AND fun IN (";
        for (std::size_t i = 0; i < filter.function_globs.size(); ++i) {
          sql += (i == 0 ? "" : ", ") + bind(filter.function_globs[i]);
        }
        sql += ")";
      }
      for (const std::string& f : filter.exclude_functions) sql += " AND fun IS DISTINCT FROM " + bind(f);
      if (filter.has_returns) {
        sql += *filter.has_returns ? " AND EXISTS" : " AND NOT EXISTS";
        sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id)";
      }
      if (filter.has_failures) {
        sql += *filter.has_failures ? " AND EXISTS" : " AND NOT EXISTS";
        sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id AND (ret.retcode <> 0 OR ret.success = false))";
      }
      sql += filter.limit ? " ORDER BY jid DESC" : " ORDER BY jid";
      // Globs on fun and tgt and the metadata rule are brine's own
      // (fnmatch, Salt's search_metadata), so they are applied here.
      const bool glob_fun = !filter.function_globs.empty() && !literal;
      const bool in_sql_only = !glob_fun && filter.target_globs.empty() && !filter.metadata;
      if (filter.limit && in_sql_only) sql += " LIMIT " + std::to_string(*filter.limit);
      std::vector<PgParam> params;
      for (const std::string& b : binds) params.push_back(P(b));
      Db().StartRows(sql, params);
      bool stop = false;
      while (std::optional<PgResult> row = db_->NextRow()) {
        if (stop) continue;  // drain the rest
        const std::string_view load_text = row->text(0, 1);
        if (!in_sql_only && !Passes(filter, glob_fun, row->text(0, 0), load_text, row->null(0, 2),
                                    row->text(0, 2))) {
          continue;
        }
        JobRecord r;
        r.jid = row->text(0, 0);
        if (filter.json_text) {
          r.load_json = load_text;
          if (!row->null(0, 2)) r.metadata_json = std::string(row->text(0, 2));
        } else {
          r.load = ParseJson(load_text);
          if (!row->null(0, 2)) r.metadata = ParseJson(row->text(0, 2));
        }
        if (!row->null(0, 3)) r.endtime = std::string(row->text(0, 3));
        if (filter.limit) {
          newest.push_back(std::move(r));
          if (newest.size() >= *filter.limit) stop = true;
        } else if (!caller_failure) {
          try {
            fn(std::move(r));
          } catch (...) {
            caller_failure = std::current_exception();
            stop = true;
          }
        }
      }
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
    // Newest first from the index, handed out oldest first.
    for (auto it = newest.rbegin(); it != newest.rend(); ++it) fn(std::move(*it));
  }

  void ForEachStoredJob(const std::optional<std::string>& jid_min, const std::optional<std::string>& jid_max,
                        const std::function<void(StoredJob&&)>& fn) override {
    // 500 jobs a chunk, three statements each: minions and returns for the
    // whole chunk at once (ANY of its ids), not a round trip per job.
    constexpr int kChunk = 500;
    std::optional<std::string> after;
    while (true) {
      std::vector<StoredJob> jobs;
      Guard("export_jobs", Op::kRead, [&] {
        PgResult q = Db().Exec(
            "SELECT id, jid, load_kind, load, metadata, nocache, endtime,"
            " (extract(epoch FROM seen) * 1000000)::bigint FROM job"
            " WHERE ($1::text IS NULL OR jid >= $1) AND ($2::text IS NULL OR jid <= $2)"
            " AND ($3::text IS NULL OR jid > $3) ORDER BY jid LIMIT " + Int(kChunk),
            {jid_min ? P(*jid_min) : PgParam::Null(), jid_max ? P(*jid_max) : PgParam::Null(),
             after ? P(*after) : PgParam::Null()});
        std::string ids = "{";
        std::unordered_map<std::int64_t, std::size_t> index;
        for (int i = 0; i < q.rows(); ++i) {
          StoredJob job;
          const std::int64_t id = q.integer(i, 0);
          job.jid = q.text(i, 1);
          job.origin = detail::OriginOf(static_cast<int>(q.integer(i, 2)));
          if (!q.null(i, 3)) job.load_json = std::string(q.text(i, 3));
          if (!q.null(i, 4)) job.metadata_json = std::string(q.text(i, 4));
          job.nocache = q.text(i, 5) == "t";
          if (!q.null(i, 6)) job.endtime = std::string(q.text(i, 6));
          job.seen = FromUnixMicros(q.integer(i, 7));
          index[id] = jobs.size();
          jobs.push_back(std::move(job));
          ids += (i == 0 ? "" : ",") + Int(id);
        }
        ids += "}";
        if (jobs.empty()) return 0;
        PgResult m = Db().Exec(
            "SELECT jm.job_id, m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
            " WHERE jm.job_id = ANY($1::bigint[]) ORDER BY jm.job_id, m.name",
            {P(ids)});
        for (int i = 0; i < m.rows(); ++i) jobs[index.at(m.integer(i, 0))].minions.emplace_back(m.text(i, 1));
        PgResult r = Db().Exec(
            "SELECT r.job_id, m.name, (extract(epoch FROM r.recv) * 1000000)::bigint, r.full_ret"
            " FROM ret AS r JOIN minion AS m ON m.id = r.minion_id"
            " WHERE r.job_id = ANY($1::bigint[]) ORDER BY r.job_id, r.id",
            {P(ids)});
        for (int i = 0; i < r.rows(); ++i) {
          jobs[index.at(r.integer(i, 0))].returns.push_back({.minion = std::string(r.text(i, 1)),
                                                             .received = FromUnixMicros(r.integer(i, 2)),
                                                             .full_ret_json = std::string(r.text(i, 3))});
        }
        return 0;
      });
      if (jobs.empty()) return;
      after = jobs.back().jid;
      const bool last = jobs.size() < static_cast<std::size_t>(kChunk);
      for (StoredJob& job : jobs) fn(std::move(job));
      if (last) return;
    }
  }

  void ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                    const std::function<void(ArchivedEvent&&)>& fn) override {
    std::exception_ptr caller_failure;
    Guard("export_events", Op::kRead, [&] {
      Db().StartRows(
          "SELECT (extract(epoch FROM e.received) * 1000000)::bigint, ms.name,"
          " coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name), coalesce(e.data, r.full_ret),"
          " e.ret_id IS NOT NULL AND e.stamp IS NOT NULL, e.stamp"
          " FROM event AS e JOIN master AS ms ON ms.id = e.master_id"
          " LEFT JOIN ret AS r ON r.id = e.ret_id LEFT JOIN job AS j ON j.id = r.job_id"
          " LEFT JOIN minion AS m ON m.id = r.minion_id"
          " WHERE ($1::text IS NULL OR e.received >= to_timestamp($1::double precision))"
          " AND ($2::text IS NULL OR e.received < to_timestamp($2::double precision)) ORDER BY e.id",
          {from ? P(TimeText(*from)) : PgParam::Null(), until ? P(TimeText(*until)) : PgParam::Null()});
      while (std::optional<PgResult> row = db_->NextRow()) {
        if (caller_failure) continue;  // drain the rest
        ArchivedEvent e{.received = FromUnixMicros(row->integer(0, 0)),
                        .master_id = std::string(row->text(0, 1)),
                        .tag = std::string(row->text(0, 2)),
                        .data_json = std::string(row->text(0, 3))};
        if (row->text(0, 4) == "t") e.data_json = detail::WithStamp(e.data_json, std::string(row->text(0, 5)));
        detail::Deliver(fn, std::move(e), caller_failure);
      }
      return 0;
    });
    if (caller_failure) std::rethrow_exception(caller_failure);
  }

  Value GetFun(const std::string& fun) override {
    return Guard("get_fun", Op::kRead, [&] {
      PgResult r = Db().Exec(
          "SELECT m.name, r.full_ret FROM"
          " (SELECT r.minion_id AS mid, max(j.jid) AS jid FROM job AS j"
          "  JOIN ret AS r ON r.job_id = j.id WHERE j.fun = $1 GROUP BY r.minion_id) AS x"
          " JOIN job AS j ON j.jid = x.jid"
          " JOIN ret AS r ON r.job_id = j.id AND r.minion_id = x.mid"
          " JOIN minion AS m ON m.id = x.mid ORDER BY m.name",
          {P(fun)});
      Value out = Value::EmptyMap();
      for (int i = 0; i < r.rows(); ++i) out.as_map().emplace_back(std::string(r.text(i, 0)), ParseJson(r.text(i, 1)));
      return out;
    });
  }

  std::vector<std::string> GetMinions() override {
    return Guard("get_minions", Op::kRead, [&] {
      PgResult r = Db().Exec(
          "SELECT name FROM minion AS m WHERE EXISTS (SELECT 1 FROM ret WHERE minion_id = m.id) ORDER BY name");
      std::vector<std::string> out;
      for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
      return out;
    });
  }

  std::optional<std::string> GetEndtime(const std::string& jid) override {
    return Guard("get_endtime", Op::kRead, [&]() -> std::optional<std::string> {
      PgResult r = Db().Exec("SELECT endtime FROM job WHERE jid = $1", {P(jid)});
      if (r.rows() == 0 || r.null(0, 0)) return std::nullopt;
      return std::string(r.text(0, 0));
    });
  }

  int SchemaVersion() override {
    return Guard("schema_version", Op::kRead, [&] { return SchemaVersionOf(*db_); });
  }

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

  // One round trip: BEGIN if the batch has not begun, the batch's returns,
  // the deferred writes in order, its expected minions and events, then
  // `last` (if any), whose result is returned. Returns go first: events and
  // later statements name them, and they need nothing that waits (jobs and
  // minions exist already).
  std::optional<PgResult> Send(std::optional<PgStatement> last, Rows rows = Rows::kSend) {
    std::vector<PgStatement> all;
    if (begin_pending_) {
      begin_pending_ = false;
      EnsurePartitions();  // DDL of its own, before the batch's transaction
      all.push_back({"BEGIN", {}});
    }
    if (rows == Rows::kSend) AppendReturnInserts(all);
    if (rows == Rows::kSend) SendLoads();
    for (PgStatement& st : deferred_) all.push_back(std::move(st));
    deferred_.clear();
    if (rows == Rows::kSend) {
      AppendExpectedInserts(all);  // after the deferred: a DropStubMinions' DELETE goes first
      AppendEventInserts(all);
    }
    const bool has_last = last.has_value();
    if (has_last) all.push_back(std::move(*last));
    if (all.empty()) return std::nullopt;
    std::vector<PgResult> results = db_->ExecPipeline(all);
    if (!has_last) return std::nullopt;
    return std::move(results.back());
  }

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

  // A load write of PutLoad (or PutStubLoad, `stub`) waits, with the others
  // of the batch, for one UPDATE from arrays (SendLoads): one statement a
  // batch instead of one a job. At most one waits per job, so that the
  // writes of a job keep their order: a second one, or another write of the
  // job's row (SendLoadOf), sends what waits first.
  void WaitLoad(PendingLoad load) {
    if (waiting_load_jobs_.contains(load.job)) SendLoads();
    if (auto read = read_jobs_.find(load.job); read != read_jobs_.end()) {
      waiting_load_jids_.insert(read->second.jid);
    } else {
      waiting_load_unread_ = true;  // GetOrCreateJob cannot tell it is this job's: it sends it
    }
    waiting_load_jobs_.insert(load.job);
    pending_loads_.push_back(std::move(load));
    if (pending_loads_.size() >= kLoadsPerUpdate) SendLoads();
  }

  void SendLoadOf(std::int64_t job) {
    if (waiting_load_jobs_.contains(job)) SendLoads();
  }

  // The waiting load writes, as one UPDATE joined to arrays, appended to the
  // deferred writes (so before any later write of those rows). Each row's
  // condition is the one its own statement had: a stub only over no load,
  // and nothing but Salt's own save_load over Salt's own save_load.
  void SendLoads() {
    if (pending_loads_.empty()) return;
    ArrayText id, load, fun, kind, metadata, user, ask, stub;
    for (const PendingLoad& l : pending_loads_) {
      id.Add(l.job);
      load.Add(l.load);
      fun.Add(l.fun);
      kind.Add(static_cast<std::int64_t>(l.kind));
      metadata.Add(l.metadata);
      user.Add(l.user.user);
      ask.Add(std::optional(l.user.ask));
      stub.Add(std::optional(l.stub));
    }
    deferred_.push_back(
        {"UPDATE job SET load = v.load, fun = v.fun, load_kind = v.kind, metadata = coalesce(job.metadata, v.metadata),"
         " stub_minions = job.stub_minions OR v.stub,"
         " load_user = CASE WHEN v.ask THEN brine_load_field(v.load, 'user') ELSE v.usr END"
         " FROM unnest($1::bigint[], $2::text[], $3::text[], $4::smallint[], $5::text[], $6::text[], $7::boolean[],"
         " $8::boolean[]) AS v (id, load, fun, kind, metadata, usr, ask, stub)"
         " WHERE job.id = v.id AND CASE WHEN v.stub THEN job.load_kind = 0 ELSE job.load_kind <> 3 OR v.kind = 3 END",
         {O(id.Take()), O(load.Take()), O(fun.Take()), O(kind.Take()), O(metadata.Take()), O(user.Take()),
          O(ask.Take()), O(stub.Take())},
         true});
    pending_loads_.clear();
    waiting_load_jobs_.clear();
    waiting_load_jids_.clear();
    waiting_load_unread_ = false;
    // No Send here when deferred_ is full: Send calls this after its BEGIN
    // is queued, and a nested Send would run the writes outside it. The next
    // Defer sends them.
  }

  // The next return id from ret's identity sequence, drawn 1000 at a time
  // (ids drawn and not used are skipped, as any sequence's after a rollback).
  ReturnId NextReturnId() {
    if (free_return_ids_.empty()) {
      PgResult r = QueryAhead(draw_return_ids_, {}, Plan::kReuse);
      for (int i = 0; i < r.rows(); ++i) free_return_ids_.push_back(r.integer(i, 0));
    }
    const ReturnId id = free_return_ids_.back();
    free_return_ids_.pop_back();
    return id;
  }

  // The waiting returns, as INSERTs of up to kReturnsPerInsert rows from
  // arrays (the same statement for any number of rows). No ON CONFLICT:
  // first-wins was decided under the job's lock (InsertReturn), so a row
  // that is there already was stored by a writer that takes no lock, and
  // its unique violation fails the batch as BusyError (the replay counts a
  // repeat), as brine_check_stored's count did (migrations/postgres/0002).
  // The speculative insertion ON CONFLICT takes had cost the server a third
  // of each row's insert (docs/performance.md, issue 16 round 7).
  void AppendReturnInserts(std::vector<PgStatement>& out) {
    for (std::size_t done = 0; done < pending_returns_.size(); done += kReturnsPerInsert) {
      const std::size_t end = std::min(pending_returns_.size(), done + kReturnsPerInsert);
      ArrayText id, job, minion, recv, success, retcode, full_ret, day;
      for (std::size_t i = done; i < end; ++i) {
        PendingReturn& r = pending_returns_[i];
        id.Add(r.id);
        job.Add(r.job);
        minion.Add(r.minion);
        recv.AddNumber(r.received);
        success.Add(r.success);
        retcode.Add(r.retcode);
        full_ret.Add(r.full_ret);
        day.Add(r.day);
      }
      out.push_back(
          {"INSERT INTO ret (id, job_id, minion_id, recv, success, retcode, full_ret, job_day)"
           " SELECT id, job_id, minion_id, to_timestamp(recv), success, retcode, full_ret, job_day"
           " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::double precision[], $5::boolean[], $6::bigint[],"
           " $7::text[], $8::date[]) AS v (id, job_id, minion_id, recv, success, retcode, full_ret, job_day)",
           {O(id.Take()), O(job.Take()), O(minion.Take()), O(recv.Take()), O(success.Take()), O(retcode.Take()),
            O(full_ret.Take()), O(day.Take())},
           true});
    }
    pending_returns_.clear();
  }

  // The waiting expected minions of every job, as INSERTs of up to
  // kExpectedPerInsert rows (one per batch, not one per job: a statement's
  // own cost on the server was most of a job's ten rows').
  void AppendExpectedInserts(std::vector<PgStatement>& out) {
    for (std::size_t done = 0; done < pending_expected_.size(); done += kExpectedPerInsert) {
      const std::size_t end = std::min(pending_expected_.size(), done + kExpectedPerInsert);
      ArrayText job, minion, day;
      for (std::size_t i = done; i < end; ++i) {
        const PendingExpected& e = pending_expected_[i];
        job.Add(e.job);
        minion.Add(e.minion);
        day.Add(e.day);
      }
      out.push_back({"INSERT INTO job_minion (job_id, minion_id, job_day)"
                     " SELECT j, m, coalesce(d, (SELECT part_day FROM job WHERE id = j))"
                     " FROM unnest($1::bigint[], $2::bigint[], $3::date[]) AS u (j, m, d) ON CONFLICT DO NOTHING",
                     {O(job.Take()), O(minion.Take()), O(day.Take())}, true});
    }
    pending_expected_.clear();
  }

  // The waiting events, in order, as INSERTs of up to kEventsPerInsert rows
  // from arrays (unnest keeps the arrays' order, and so the ids follow it).
  void AppendEventInserts(std::vector<PgStatement>& out) {
    for (std::size_t done = 0; done < pending_events_.size(); done += kEventsPerInsert) {
      const std::size_t end = std::min(pending_events_.size(), done + kEventsPerInsert);
      ArrayText received, job, tag, data, ret, stamp;
      for (std::size_t i = done; i < end; ++i) {
        const EventRow& e = pending_events_[i];
        received.AddNumber(TimeText(e.received));
        job.Add(e.job_id);
        tag.Add(e.tag);
        data.Add(e.data);
        ret.Add(e.ret_id);
        stamp.Add(e.stamp);
      }
      out.push_back({"INSERT INTO event (received, master_id, job_id, tag, data, ret_id, stamp)"
                     " SELECT to_timestamp(r), $1::bigint, j, t, d, x, s FROM unnest($2::double precision[],"
                     " $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[]) AS u (r, j, t, d, x, s)",
                     {O(Int(master_row_)), O(received.Take()), O(job.Take()), O(tag.Take()), O(data.Take()),
                      O(ret.Take()), O(stamp.Take())},
                     true});
    }
    pending_events_.clear();
  }

  // Creates the day partitions (kDayPartitioned) for yesterday, today and
  // tomorrow (UTC) once a day, each in a transaction of its own. A day whose
  // rows already went to the default partition (the database was down at
  // midnight, say) keeps them there; so does a partition another master
  // creates at the same moment.
  void EnsurePartitions() {
    const std::int64_t today = DayOf(clock_->Now());
    if (today == partitions_day_) return;
    for (const std::string table : kDayPartitioned) {
      // The archive is partitioned by a timestamptz, the job tables by a date.
      const std::string from_suffix = table == "event" ? " 00:00:00+00" : "";
      for (std::int64_t day = today - 1; day <= today + 1; ++day) {
        try {
          db_->Exec("CREATE TABLE IF NOT EXISTS " + table + "_p" + DayText(day, false) + " PARTITION OF " + table +
                    " FOR VALUES FROM ('" + DayText(day, true) + from_suffix + "') TO ('" + DayText(day + 1, true) +
                    from_suffix + "')");
        } catch (const PgError& e) {
          // 23514: the default partition holds rows of that day; 23505/42P07: created concurrently.
          if (e.sqlstate() != "23514" && e.sqlstate() != "23505" && e.sqlstate() != "42P07") throw;
        }
      }
    }
    partitions_day_ = today;
  }

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


  static bool Passes(const JobFilter& filter, bool glob_fun, std::string_view, std::string_view load_text,
                     bool metadata_null, std::string_view metadata_text) {
    auto any = [](const std::vector<std::string>& globs, std::string_view t) {
      for (const std::string& g : globs) {
        if (FnMatch(g, t)) return true;
      }
      return false;
    };
    if (glob_fun || !filter.target_globs.empty()) {
      const Value load = ParseJson(load_text);
      if (glob_fun) {
        const std::string* fun = load.FindString("fun");
        if (fun == nullptr || !any(filter.function_globs, *fun)) return false;
      }
      if (!filter.target_globs.empty()) {
        const Value* tgt = load.Find("tgt");
        bool hit = false;
        if (tgt != nullptr && tgt->is_string()) {
          hit = any(filter.target_globs, tgt->as_string());
        } else if (tgt != nullptr && tgt->is_list()) {
          for (const Value& t : tgt->as_list()) {
            if (t.is_string() && any(filter.target_globs, t.as_string())) hit = true;
          }
        }
        if (!hit) return false;
      }
    }
    if (filter.metadata) {
      if (metadata_null) return false;
      const Value m = ParseJson(metadata_text);
      bool hit = false;
      if (filter.metadata->is_map()) {
        for (const auto& [k, v] : filter.metadata->as_map()) {
          const Value* have = m.Find(k);
          if (have != nullptr && *have == v) hit = true;
        }
      }
      if (!hit) return false;
    }
    return true;
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

  // The names of minion rows `ids`, in one query. When the ids are dense (a
  // job sent to a fleet's minions, which got their rows as they first
  // appeared), one range of minion_pkey, whose unwanted rows are few; else a
  // join with the ids as an array, whose length the planner then knows (a
  // hash join for many, index probes for a few). `id = ANY(array)` would be
  // planned element by element: 11 ms for 10,000 ids.
  MinionNames NamesOf(std::vector<std::int64_t> ids) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const std::int64_t span = ids.back() - ids.front() + 1;
    if (span <= 2 * static_cast<std::int64_t>(ids.size()) + 64) {
      return MinionNames(Db().Exec("SELECT id, name FROM minion WHERE id BETWEEN $1 AND $2",
                                   {P(Int(ids.front())), P(Int(ids.back()))}));
    }
    std::string array = "{";
    for (const std::int64_t id : ids) {
      if (array.size() > 1) array += ',';
      array += Int(id);
    }
    array += '}';
    return MinionNames(
        Db().Exec("SELECT m.id, m.name FROM unnest($1::bigint[]) AS u(id) JOIN minion AS m ON m.id = u.id", {P(array)}));
  }

  std::int64_t MinionId(std::string_view name) {
    const std::string n(name);
    return MinionIds(std::span(&n, 1))[0];
  }

  // The ids of `names`, creating missing rows: one round trip for the unknown ones.
  std::vector<std::int64_t> MinionIds(std::span<const std::string> names) {
    std::vector<std::int64_t> ids(names.size(), 0);
    // Bounded as on SQLite: a fleet that churns names would grow it for ever.
    if (minions_.size() >= kMaxCachedMinions) minions_.clear();
    std::string array = "[";
    std::vector<std::size_t> unknown;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (auto it = minions_.find(names[i]); it != minions_.end()) {
        ids[i] = it->second;
        continue;
      }
      if (!unknown.empty()) array += ',';
      array += ToJson(Value(names[i]));
      unknown.push_back(i);
    }
    if (unknown.empty()) return ids;
    array += "]";
    PgResult r = QueryAhead(
        "WITH n AS (SELECT DISTINCT value AS name FROM json_array_elements_text($1::json)),"
        " i AS (INSERT INTO minion (name) SELECT name FROM n ORDER BY name ON CONFLICT (name) DO NOTHING"
        "  RETURNING id, name)"
        " SELECT id, name FROM i UNION ALL SELECT m.id, m.name FROM minion AS m JOIN n ON n.name = m.name",
        {O(std::move(array))}, Plan::kOnce);
    for (int row = 0; row < r.rows(); ++row) minions_[std::string(r.text(row, 1))] = r.integer(row, 0);
    for (std::size_t i : unknown) {
      if (auto it = minions_.find(names[i]); it != minions_.end()) {
        ids[i] = it->second;
        continue;
      }
      // Inserted by another master at the same moment: visible to a new statement.
      PgResult again = Query("SELECT id FROM minion WHERE name = $1", {O(names[i])});
      ids[i] = minions_[names[i]] = again.integer(0, 0);
    }
    return ids;
  }

  // Gives archived return events matching `where` their own copy of the
  // payload (with their own _stamp) and tag, before the return changes or goes.
  void DetachEvents(const std::string& where) {
    PgResult r = Query(
        "SELECT e.id, r.full_ret, e.stamp, coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name)"
        " FROM event AS e JOIN ret AS r ON r.id = e.ret_id JOIN job AS j ON j.id = r.job_id"
        " JOIN minion AS m ON m.id = r.minion_id WHERE e." + where);
    for (int i = 0; i < r.rows(); ++i) {
      std::string data(r.text(i, 1));
      if (!r.null(i, 2)) {
        Value v = ParseJson(data);
        v.Set("_stamp", std::string(r.text(i, 2)));
        data = ToJson(v);
      }
      Defer("UPDATE event SET data = $1, tag = $2, ret_id = NULL, stamp = NULL WHERE id = " + Int(r.integer(i, 0)),
            {O(std::move(data)), O(std::string(r.text(i, 3)))});
    }
  }

  // Deletes the oldest rows of `table` that arrived before `cut` and for
  // which `condition` holds, at most `budget`.
  std::int64_t DeleteOlder(const std::string& table, const std::string& cut, std::int64_t budget,
                           const SqlCondition& condition) {
    const std::string limit = Int(budget);
    std::vector<PgParam> params = {P(cut), P(limit)};
    for (const std::string& p : condition.params) params.push_back(P(p));
    return Db()
        .Exec("DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                  " WHERE received < to_timestamp($1)" + (condition.sql.empty() ? "" : " AND " + condition.Sql(3)) +
                  " ORDER BY id LIMIT $2)",
              params)
        .affected();
  }

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
  std::vector<ReturnId> free_return_ids_;  // drawn from ret's sequence, not yet used
  std::unordered_map<std::string, std::int64_t> minions_;  // dropped on rollback
};

}  // namespace

int SchemaVersionOf(PgConnection& db) {
  PgResult r = db.Exec("SELECT to_regclass('brine_schema') IS NOT NULL");
  if (r.text(0, 0) != "t") return 0;
  PgResult v = db.Exec("SELECT version FROM brine_schema");
  return v.rows() == 0 ? 0 : static_cast<int>(v.integer(0, 0));
}

int ReadOnlySchemaVersion(PgConnection& db, const std::string& session) {
  try {
    PgResult v = db.Exec(session + "; SELECT version FROM brine_schema");
    return v.rows() == 0 ? 0 : static_cast<int>(v.integer(0, 0));
  } catch (const PgError& e) {
    // undefined_table: no brine schema (and the settings rolled back with it,
    // which does not matter: the caller gives up).
    if (e.sqlstate() == "42P01") return 0;
    throw;
  }
}

void ApplyPostgresMigrations(PgConnection& db) {
  const auto& migrations = EmbeddedPostgresMigrations();
  const int latest = static_cast<int>(migrations.size());
  db.Exec("BEGIN");
  try {
    db.Exec("SELECT pg_advisory_xact_lock(" + Int(kMigrationLock) + ")");
    db.Exec("CREATE TABLE IF NOT EXISTS brine_schema (version integer NOT NULL)");
    int version = SchemaVersionOf(db);
    if (version > latest) throw TooNewError(version, latest);
    if (version == 0) {
      PgResult t = db.Exec(
          "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'brine_schema'");
      if (t.integer(0, 0) > 0) {
        throw FatalError("the database has tables but no brine schema version: not a brine store");
      }
      db.Exec("INSERT INTO brine_schema VALUES (0)");
    }
    for (const Migration& m : migrations) {
      if (m.version <= version) continue;
      db.Exec(m.sql);
      version = m.version;
    }
    db.Exec("UPDATE brine_schema SET version = " + Int(version));
    db.Exec("COMMIT");
  } catch (...) {
    try {
      db.Exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

std::unique_ptr<Backend> OpenPostgresBackend(const std::string& uri, const OpenOptions& options) {
  return std::make_unique<PostgresBackend>(uri, options);
}

int LatestPostgresSchemaVersion() { return static_cast<int>(EmbeddedPostgresMigrations().size()); }

}  // namespace brine::store::detail
