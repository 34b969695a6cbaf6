// SqliteBackend's retention primitives (RetentionBackend: the plan in
// retention_plan.cpp decides what goes) and the size cap's pruning
// (PruneOldest, UsedBytes). Jobs go by jid time, or by first sight for a jid
// that is not a time; events and quarantined frames by id, their arrival
// time; archived events that share a deleted return's payload get their own
// copy first (kDetachEvents).
#include "sqlite_backend.h"

#include "brine/core/jid.h"

namespace brine::store::detail {

void SqliteBackend::StartRetention() { FlushEvents(); }

std::vector<std::string> SqliteBackend::JobFunctions() {
  SQLite::Statement q(*db_, "SELECT DISTINCT fun FROM job WHERE fun IS NOT NULL");
  std::vector<std::string> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

std::int64_t SqliteBackend::DeleteOldEvents(Micros before, std::int64_t budget,
                                            const std::function<bool(std::string_view)>* is_member) {
  const std::int64_t cut = ToUnixMicros(before);
  if (is_member == nullptr) return DeleteOlderRows("event", cut, budget);
  // The rows before the cut in arrival order; the plan picks its class's.
  SQLite::Statement q(*db_,
                      "SELECT id, coalesce(tag, (SELECT 'salt/job/' || j.jid || '/ret/' || m.name FROM ret AS r"
                      " JOIN job AS j ON j.id = r.job_id JOIN minion AS m ON m.id = r.minion_id"
                      " WHERE r.id = event.ret_id)) FROM event WHERE id < ?1 ORDER BY id");
  q.bind(1, cut);
  std::vector<std::int64_t> ids;
  while (static_cast<std::int64_t>(ids.size()) < budget && q.executeStep()) {
    const SQLite::Column tag = q.getColumn(1);
    if ((*is_member)(std::string_view(tag.getText(), static_cast<std::size_t>(tag.getBytes())))) {
      ids.push_back(q.getColumn(0).getInt64());
    }
  }
  q.reset();
  SQLite::Statement del(*db_, "DELETE FROM event WHERE id = ?");
  std::int64_t n = 0;
  for (const std::int64_t id : ids) {
    del.bind(1, id);
    n += del.exec();
    del.reset();
  }
  return n;
}

std::int64_t SqliteBackend::DeleteOldQuarantine(Micros before, std::int64_t budget) {
  return DeleteOlderRows("quarantine", ToUnixMicros(before), budget);
}

std::int64_t SqliteBackend::DeleteOldBusGaps(Micros before, std::int64_t budget) {
  SQLite::Statement q(*db_, "DELETE FROM bus_gap WHERE id IN (SELECT id FROM bus_gap"
                            " WHERE gap_end_us < ?1 ORDER BY gap_end_us LIMIT ?2)");
  q.bind(1, ToUnixMicros(before));
  q.bind(2, budget);
  return q.exec();
}

CleanResult SqliteBackend::PruneOldest(std::int64_t bytes, std::int64_t max_rows) {
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

std::int64_t SqliteBackend::UsedBytes() {
  return Read("used_bytes", [&] {
    return (PragmaInt("PRAGMA page_count") - PragmaInt("PRAGMA freelist_count")) * PragmaInt("PRAGMA page_size");
  });
}

// Deletes the oldest rows of `table` before `cut`, at most `budget`.
std::int64_t SqliteBackend::DeleteOlderRows(const std::string& table, std::int64_t cut, std::int64_t budget) {
  SQLite::Statement q(*db_, "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                                " WHERE id < ?1 ORDER BY id LIMIT ?2)");
  q.bind(1, cut);
  q.bind(2, budget);
  return q.exec();
}

void SqliteBackend::DeleteOldJobs(Micros before, const JobClass& job_class, std::int64_t& budget,
                                  CleanResult& result) {
  // The class as SQL selects it exactly: fun IN (...), or NULL or NOT IN.
  std::string condition;
  if (!job_class.all && !(job_class.others && job_class.funs.empty())) {
    std::string list;
    for (std::size_t i = 0; i < job_class.funs.size(); ++i) list += (i == 0 ? "?" : ", ?") + std::to_string(i + 4);
    condition = job_class.others ? " AND (fun IS NULL OR fun NOT IN (" + list + "))" : " AND fun IN (" + list + ")";
  }
  // Jids that name a time are UTC times, so their text order is time
  // order; every other jid (rare, hand-made: "req", "12345", "0") ages by
  // when brine first saw it. A numeric jid that is not a time sorts before
  // every real one, so the digit test alone would delete it at once.
  SQLite::Statement pick(*db_,
                         "SELECT id, fun FROM job WHERE jid < ?1 AND jid GLOB '[0-9]*' AND brine_jid_is_time(jid)" +
                             condition +
                             " UNION ALL SELECT id, fun FROM job WHERE seen_us < ?2"
                             " AND NOT (jid GLOB '[0-9]*' AND brine_jid_is_time(jid))" +
                             condition + " LIMIT ?3");
  pick.bind(1, FormatJid(before));
  pick.bind(2, ToUnixMicros(before));
  pick.bind(3, budget);
  for (std::size_t i = 0; i < job_class.funs.size(); ++i) pick.bind(static_cast<int>(i + 4), job_class.funs[i]);
  std::vector<std::int64_t> ids;
  while (pick.executeStep()) {
    const SQLite::Column fun = pick.getColumn(1);
    const auto fun_text = fun.isNull() ? std::nullopt : std::optional(std::string_view(fun.getText(),
                                                                                       static_cast<std::size_t>(fun.getBytes())));
    if (job_class.is_member(fun_text)) ids.push_back(pick.getColumn(0).getInt64());
  }
  pick.reset();
  for (std::int64_t id : ids) {
    if (budget <= 0) break;
    DeleteJob(id, budget, result);
  }
}

// Deletes one job with its returns and expected minions.
void SqliteBackend::DeleteJob(std::int64_t id, std::int64_t& budget, CleanResult& result) {
  // Archived events that share a return's payload get their own copy first.
  SQLite::Statement keep(*db_, std::string(kDetachEvents) + " WHERE job_id = ?1 AND ret_id IS NOT NULL");
  keep.bind(1, id);
  keep.exec();
  SQLite::Statement unlink(*db_, "UPDATE event SET job_id = NULL WHERE job_id = ?");
  unlink.bind(1, id);
  unlink.exec();
  UncountJob(id, true);
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
std::optional<std::pair<std::int64_t, std::int64_t>> SqliteBackend::OldestJob() {
  SQLite::Statement q(*db_, "SELECT id, jid, seen_us FROM job ORDER BY jid LIMIT 1");
  if (!q.executeStep()) return std::nullopt;
  const auto t = JidToMicros(q.getColumn(1).getString());
  return std::pair(q.getColumn(0).getInt64(), t ? ToUnixMicros(*t) : q.getColumn(2).getInt64());
}

std::optional<std::int64_t> SqliteBackend::OldestId(const char* table) {
  SQLite::Statement q(*db_, std::string("SELECT min(id) FROM ") + table);
  if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
  return q.getColumn(0).getInt64();
}

// Deletes up to `n` of the oldest rows of `table` (event or quarantine: the
// id is the arrival time) up to `until` (inclusive), adding their payload bytes.
void SqliteBackend::DeleteOldestRows(const char* table, const char* payload, std::int64_t until,
                                     std::int64_t n, std::int64_t& count, CleanResult& result) {
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

}  // namespace brine::store::detail
