// PostgresBackend's write primitives (backend.h's "job cache primitives").
// Each runs inside the batch's transaction and throws PgError. A write that
// returns nothing waits for the next round trip (postgres_pipeline.cpp says
// when that is); first-wins is decided from the job row, read and locked once
// per batch (GetOrCreateJob: the minions that returned ride with it), and a
// lock-less writer's race fails the commit as BusyError.
#include "postgres_backend.h"

#include <algorithm>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "postgres_arrays.h"

namespace brine::store::detail {

JobState PostgresBackend::GetOrCreateJob(const std::string& jid, Micros seen) {
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

void PostgresBackend::SetNocache(std::int64_t job) {
  SendLoadOf(job);
  Defer("UPDATE job SET nocache = true WHERE id = $1", {O(Int(job))}, Plan::kReuse);
}

void PostgresBackend::PutLoad(std::int64_t job, const std::string& load_json,
                              const LoadMembers& members, LoadKind kind,
                              const std::optional<std::string>& metadata_json) {
  WaitLoad({job, load_json, members.fun ? std::optional(*members.fun) : std::nullopt, kind, metadata_json,
            LoadUserOf(members.user), false});
}

void PostgresBackend::PutStubLoad(std::int64_t job, const std::string& load_json,
                                  const LoadMembers& members, std::string_view minion) {
  WaitLoad({job, load_json, members.fun ? std::optional(*members.fun) : std::nullopt, LoadKind::kStub, std::nullopt,
            LoadUserOf(members.user), true});
  const std::string m(minion);
  AddExpected(job, std::span(&m, 1));
}

void PostgresBackend::DropStubMinions(std::int64_t job) {
  SendLoadOf(job);
  // The job's expected minions that wait would go with the rows: they go
  // now (the DELETE, deferred, is sent ahead of what waits).
  std::erase_if(pending_expected_, [job](const PendingExpected& e) { return e.job == job; });
  Defer("DELETE FROM job_minion WHERE job_id = " + Int(job));
  Defer("UPDATE job SET stub_minions = false WHERE id = " + Int(job));
}

void PostgresBackend::AddExpected(std::int64_t job, std::span<const std::string> minions) {
  if (minions.empty()) return;
  // The job's day as read with it; asked of its row when NULL (a job this
  // transaction did not read, or one from before 0003, whose day is NULL).
  const std::optional<std::string>* read_day = DayOfJob(job);
  const std::optional<std::string> day = read_day != nullptr ? *read_day : std::nullopt;
  for (std::int64_t id : MinionIds(minions)) pending_expected_.push_back({job, id, day});
  if (pending_expected_.size() >= kExpectedPerInsert) Send(std::nullopt);
}

std::optional<ReturnId> PostgresBackend::InsertReturn(const ReturnRow& row) {
  const std::int64_t minion = MinionId(row.minion);
  auto known = read_jobs_.find(row.job_id);
  if (known == read_jobs_.end()) {
    // A job this transaction did not read (JobCache always reads it
    // first); ask, as before batching.
    const std::string t = TimeText(row.received);
    // Counted in the minions' rollups as AppendReturnInserts counts.
    PgResult r = Query(
        "WITH ins AS (INSERT INTO ret (job_id, minion_id, recv, success, retcode, full_ret, trimmed, job_day)"
        " SELECT " + Int(row.job_id) + ", " + Int(minion) + ", to_timestamp($1), $2, $3, $4, $5, part_day"
        " FROM job WHERE id = " + Int(row.job_id) + " ON CONFLICT DO NOTHING"
        " RETURNING id, job_id, minion_id, success, retcode, job_day),"
        " counted AS (INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)"
        " SELECT i.minion_id, (SELECT substr(jid, 1, 10) FROM job WHERE id = i.job_id), " + Int(master_row_) + ","
        " 0, 1, brine_ret_failed(i.retcode, i.success) FROM ins AS i"
        " WHERE EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = i.job_id AND jm.minion_id = i.minion_id"
        " AND jm.job_day IS NOT DISTINCT FROM i.job_day)"
        " ON CONFLICT (minion_id, hour, writer) DO UPDATE SET"
        " returned = h.returned + excluded.returned, failed = h.failed + excluded.failed)"
        " SELECT id FROM ins",
        {O(t), OBool(row.success), OInt(row.retcode), O(*row.full_ret), OBool(row.trimmed)});
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
      {id, row.job_id, minion, TimeText(row.received), row.success, row.retcode, *row.full_ret, row.trimmed,
       known->second.day});
  if (pending_returns_.size() >= kReturnsPerInsert) Send(std::nullopt);
  return id;
}

std::pair<ReturnId, std::string> PostgresBackend::StoredReturn(std::int64_t job, std::string_view minion) {
  const std::int64_t minion_id = MinionId(minion);
  for (auto it = pending_returns_.rbegin(); it != pending_returns_.rend(); ++it) {
    if (it->job == job && it->minion == minion_id) return {it->id, it->full_ret};
  }
  PgResult r = Query("SELECT id, full_ret FROM ret WHERE job_id = " + Int(job) + " AND minion_id = " + Int(minion_id));
  return {r.integer(0, 0), std::string(r.text(0, 1))};
}

std::optional<std::pair<ReturnId, std::string>> PostgresBackend::FindReturn(
    const std::string& jid, const std::string& minion) {
  PgResult r = Query(
      "SELECT r.id, r.full_ret FROM ret AS r JOIN job AS j ON j.id = r.job_id"
      " JOIN minion AS m ON m.id = r.minion_id WHERE j.jid = $1 AND m.name = $2",
      {O(jid), O(minion)});
  if (r.rows() == 0) return std::nullopt;
  return std::pair<ReturnId, std::string>{r.integer(0, 0), std::string(r.text(0, 1))};
}

void PostgresBackend::ReplaceReturn(ReturnId id, const ReturnRow& row) {
  DetachEvents("ret_id = " + Int(id));  // sends what waits first
  Defer("UPDATE ret SET full_ret = $1, success = $2, retcode = $3, trimmed = $4 WHERE id = " + Int(id),
        {O(*row.full_ret), OBool(row.success), OInt(row.retcode), OBool(row.trimmed)});
}

void PostgresBackend::SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) {
  SendLoadOf(job);
  Defer("UPDATE job SET metadata = $1 WHERE id = $2::bigint AND metadata IS NULL", {O(metadata_json), O(Int(job))},
        Plan::kReuse);
}

std::optional<std::pair<std::int64_t, std::string>> PostgresBackend::ReturnOwner(ReturnId id) {
  PgResult r = Query("SELECT r.job_id, m.name FROM ret AS r JOIN minion AS m ON m.id = r.minion_id WHERE r.id = " +
                     Int(id));
  if (r.rows() == 0) return std::nullopt;
  return std::pair<std::int64_t, std::string>{r.integer(0, 0), std::string(r.text(0, 1))};
}

void PostgresBackend::AppendEvents(std::vector<EventRow>&& events) {
  pending_events_.insert(pending_events_.end(), std::make_move_iterator(events.begin()),
                         std::make_move_iterator(events.end()));
  if (pending_events_.size() >= kPgEventsPerInsert) Send(std::nullopt);
}

void PostgresBackend::Quarantine(std::string_view raw, const std::string& reason, Micros received) {
  Defer("INSERT INTO quarantine (received, reason, raw) VALUES (to_timestamp($1), $2, $3)",
        {O(TimeText(received)), O(reason), Owned{std::string(raw), true}});
}

void PostgresBackend::SetEndtime(std::int64_t job, const std::string& endtime) {
  SendLoadOf(job);
  Defer("UPDATE job SET endtime = $1 WHERE id = $2::bigint", {O(endtime), O(Int(job))}, Plan::kReuse);
}

void PostgresBackend::PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) {
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

void PostgresBackend::PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) {
  Defer("INSERT INTO spool_progress (master_id, file_key, offset_bytes) VALUES ($1, $2, $3)"
        " ON CONFLICT (master_id, file_key) DO UPDATE SET offset_bytes = excluded.offset_bytes",
        {O(Int(master_row_)), O(file_key), O(Int(offset_bytes))}, Plan::kReuse);
}

void PostgresBackend::ForgetSpoolProgress(const std::string& file_key) {
  Defer("DELETE FROM spool_progress WHERE master_id = $1 AND file_key = $2", {O(Int(master_row_)), O(file_key)},
        Plan::kReuse);
}

// The ids of `names`, creating missing rows: one round trip for the unknown ones.
std::vector<std::int64_t> PostgresBackend::MinionIds(std::span<const std::string> names) {
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

}  // namespace brine::store::detail
