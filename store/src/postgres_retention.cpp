// PostgresBackend's retention primitives (RetentionBackend: the plan in
// retention_plan.cpp decides the classes, the order and the budget) and the
// size cap's pruning (PruneOldest, UsedBytes). A class reaches SQL only as
// what translates exactly (fun = ANY of the plan's names), and each picked
// row is checked again by the plan. Whole days the plan allows are dropped
// as partitions outside the row budget, under kRetentionLock; archived
// events that share a deleted return's payload get their own copy first
// (DetachEvents).
#include "postgres_backend.h"

#include <algorithm>
#include <map>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "postgres_arrays.h"

namespace brine::store::detail {

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

namespace {

// The jobs of `c` as SQL selects them exactly (empty: every job).
SqlCondition ClassCondition(const JobClass& c) {
  if (c.all || (c.others && c.funs.empty())) return {};
  if (c.funs.empty()) return {"false", {}};
  ArrayText names;
  for (const std::string& f : c.funs) names.Add(f);
  if (c.others) return {"(fun IS NULL OR NOT fun = ANY($A::text[]))", {names.Take()}};
  return {"fun = ANY($A::text[])", {names.Take()}};
}

// The canonical tag of an event that shares a return's payload, else its own.
constexpr const char* kEventTag =
    "coalesce(tag, (SELECT 'salt/job/' || j.jid || '/ret/' || m.name FROM ret AS r"
    " JOIN job AS j ON j.id = r.job_id JOIN minion AS m ON m.id = r.minion_id WHERE r.id = event.ret_id))";

}  // namespace

void PostgresBackend::StartRetention() {
  Send(std::nullopt);
  read_jobs_.clear();  // returns may go
}

std::vector<std::string> PostgresBackend::JobFunctions() {
  PgResult r = Db().Exec("SELECT DISTINCT fun FROM job WHERE fun IS NOT NULL");
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
  return out;
}

// Whole days go at once: a DROP costs the same for ten rows or ten million.
void PostgresBackend::DropEventDays(Micros before, CleanResult& result) {
  PgResult parts = Db().Exec(
      "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid"
      " WHERE i.inhparent = 'event'::regclass ORDER BY 1");
  for (int i = 0; i < parts.rows(); ++i) {
    const std::string name(parts.text(i, 0));
    const auto day = PartitionDay(name, "event");
    if (!day || *day + 1 > DayOf(before)) continue;
    result.events += Db().Exec("SELECT count(*) FROM " + name).integer(0, 0);
    Db().Exec("DROP TABLE " + name);
  }
}

std::int64_t PostgresBackend::DeleteOldEvents(Micros before, std::int64_t budget,
                                              const std::function<bool(std::string_view)>* is_member) {
  const std::string cut = TimeText(before);
  if (is_member == nullptr) return DeleteOlder("event", cut, budget, {});
  // The rows before the cut in id order, a chunk at a time; the plan picks
  // its class's.
  constexpr int kChunk = 5000;
  ArrayText ids;
  std::int64_t picked = 0;
  std::optional<std::string> after;
  while (picked < budget) {
    PgResult r = Db().Exec(std::string("SELECT id, ") + kEventTag +
                               " FROM event WHERE received < to_timestamp($1) AND ($2::bigint IS NULL OR id > $2)"
                               " ORDER BY id LIMIT " + Int(kChunk),
                           {P(cut), after ? P(*after) : PgParam::Null()});
    for (int i = 0; i < r.rows() && picked < budget; ++i) {
      if ((*is_member)(r.text(i, 1))) {
        ids.AddNumber(r.text(i, 0));
        ++picked;
      }
    }
    if (r.rows() < kChunk) break;
    after = std::string(r.text(r.rows() - 1, 0));
  }
  if (picked == 0) return 0;
  return Db().Exec("DELETE FROM event WHERE id = ANY($1::bigint[])", {P(ids.Take())}).affected();
}

std::int64_t PostgresBackend::DeleteOldQuarantine(Micros before, std::int64_t budget) {
  return DeleteOlder("quarantine", TimeText(before), budget, {});
}

std::int64_t PostgresBackend::DeleteOldBusGaps(Micros before, std::int64_t budget) {
  const std::string cut = Int(ToUnixMicros(before));
  const std::string limit = Int(budget);
  return Db()
      .Exec("DELETE FROM bus_gap WHERE id IN (SELECT id FROM bus_gap"
            " WHERE gap_end_us < $1::bigint ORDER BY gap_end_us LIMIT $2::bigint)",
            {P(cut), P(limit)})
      .affected();
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
void PostgresBackend::DropJobDays(const std::vector<JobClass>& classes, Micros before, CleanResult& result) {
  const std::optional<Micros> cut = before;
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
  auto kept_from = [&](const std::optional<Micros>& class_cut) {
    return class_cut ? " AND jid ~ '^[0-9]{20}(_|$)' AND jid >= " + param(FormatJid(*class_cut)) : std::string();
  };
  std::string kept;
  for (const JobClass& c : classes) {
    kept += std::string(kept.empty() ? "" : " OR ") + "(" + numbered(ClassCondition(c)) + kept_from(c.before) + ")";
  }
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
    // Dropped partitions fire no trigger: the minions' rollups (postgres
    // 0011) of the day's hours go with them, all the jobs of those hours
    // being the day's.
    Db().Exec("DELETE FROM minion_hour WHERE hour IN (SELECT DISTINCT substr(jid, 1, 10) FROM job"
              " WHERE part_day = $1::date)", {params[0]});
    Db().Exec("DROP TABLE " + ret_p + ", job_minion_p" + DayText(day, false));
    result.returns += ids.integer(0, 2);
    result.jobs += Db().Exec("DELETE FROM job WHERE part_day = $1::date", {params[0]}).affected();
  }
}

// Deletes jobs older than `before` for which `condition` holds, with their
// returns and expected minions.
void PostgresBackend::DeleteOldJobs(Micros before, const JobClass& job_class, std::int64_t& budget,
                                    CleanResult& result) {
  const SqlCondition condition = ClassCondition(job_class);
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
  // The jid pattern picks candidates; JidToMicros (SQLite's
  // brine_jid_is_time) decides, so "20241399000000000000" is no time on
  // either backend; the plan decides each candidate's class.
  PgResult pick = Db().Exec(
      "(SELECT id, jid, true, fun FROM job WHERE jid < $1 AND jid ~ '^[0-9]{20}(_|$)'" + and_condition +
          ") UNION ALL (SELECT id, jid, false, fun FROM job WHERE seen < to_timestamp($2)" + and_condition +
          ") LIMIT $3",
      params);
  for (int i = 0; i < pick.rows() && budget > 0; ++i) {
    const bool is_time = JidToMicros(pick.text(i, 1)).has_value();
    if (is_time != (pick.text(i, 2) == "t")) continue;
    if (!job_class.is_member(pick.null(i, 3) ? std::nullopt : std::optional(pick.text(i, 3)))) continue;
    DeleteJob(pick.integer(i, 0), budget, result);
  }
}

// Deletes one job with its returns and expected minions.
void PostgresBackend::DeleteJob(std::int64_t job, std::int64_t& budget, CleanResult& result) {
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
std::int64_t PostgresBackend::DeleteOldestRows(const std::string& table, const std::string& payload,
                                               std::int64_t until, std::int64_t n,
                                               CleanResult& result) {
  const std::string t = TimeText(FromUnixMicros(until));
  const std::string limit = Int(n);
  PgResult r = Db().Exec("WITH d AS (DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                             " WHERE received <= to_timestamp($1) ORDER BY received, id LIMIT $2) RETURNING " +
                             payload + " AS b) SELECT count(*), coalesce(sum(b), 0)::bigint FROM d",
                         {P(t), P(limit)});
  result.bytes += r.integer(0, 1);
  return r.integer(0, 0);
}

std::int64_t PostgresBackend::OldestArrival(const std::string& table) {
  PgResult r = Db().Exec("SELECT (extract(epoch FROM received) * 1000000)::bigint FROM " + table +
                         " ORDER BY received LIMIT 1");
  return r.rows() == 0 ? std::numeric_limits<std::int64_t>::max() : r.integer(0, 0);
}

CleanResult PostgresBackend::PruneOldest(std::int64_t bytes, std::int64_t max_rows) {
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

std::int64_t PostgresBackend::UsedBytes() {
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

// Gives archived return events matching `where` their own copy of the
// payload (with their own _stamp) and tag, before the return changes or goes.
void PostgresBackend::DetachEvents(const std::string& where) {
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
std::int64_t PostgresBackend::DeleteOlder(const std::string& table, const std::string& cut,
                                          std::int64_t budget, const SqlCondition& condition) {
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

}  // namespace brine::store::detail
