// SqliteBackend's retention (Store::ApplyRetention) and the size cap's
// pruning (PruneOldest, UsedBytes). Contract: at most `max_rows` rows go per
// call, oldest first (jobs by jid time, or by first sight for a jid that is
// not a time; events and quarantined frames by id, their arrival time);
// archived events that share a deleted return's payload get their own copy
// first (kDetachEvents); `more` says the budget ran out.
#include "sqlite_backend.h"

#include "brine/core/jid.h"

namespace brine::store::detail {

CleanResult SqliteBackend::CleanOldJobs(const Retention& retention, std::int64_t max_rows) {
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

std::string SqliteBackend::Globs(const std::vector<RetentionRule>& rules) {
  Value list = Value::EmptyList();
  for (const RetentionRule& r : rules) list.as_list().emplace_back(r.glob);
  return ToJson(list);
}

// Deletes the oldest rows of `table` before `cut` for which `condition`
// (SQL; ?3 is `globs`) holds, at most `budget`.
std::int64_t SqliteBackend::DeleteOlderRows(const std::string& table, std::int64_t cut,
                                            std::int64_t budget, const std::string& condition,
                                            const std::string& globs) {
  SQLite::Statement q(*db_, "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table + " WHERE id < ?1" +
                                (condition.empty() ? "" : " AND " + condition) + " ORDER BY id LIMIT ?2)");
  q.bind(1, cut);
  q.bind(2, budget);
  if (!condition.empty()) q.bind(3, globs);
  return q.exec();
}

// Deletes jobs older than `before` for which `condition` (SQL over job; ?4
// is `globs`) holds, with their returns and expected minions.
void SqliteBackend::DeleteOldJobs(Micros before, const std::string& condition,
                                  const std::string& globs, std::int64_t& budget,
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
void SqliteBackend::DeleteJob(std::int64_t id, std::int64_t& budget, CleanResult& result) {
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
