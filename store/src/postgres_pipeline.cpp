// The PostgreSQL pipeline: what a batch's writes wait in and how they reach
// the server. The contract (the issue's "one round trip per batch, never
// per row"), which every write primitive (postgres_writes.cpp) keeps:
//
//  1. A write that returns nothing waits (Defer); so do returns, expected
//     minions, events and loads, in their own buffers. Each round trip
//     (Send) sends everything waiting in one libpq pipeline ahead of its own
//     statement, and COMMIT is such a round trip.
//  2. Order within a round trip: BEGIN (when the batch has not begun; the
//     day partitions are made first, outside it), the returns, the loads'
//     UPDATE, the deferred writes in order, the expected minions, the
//     events, then the statement whose result is wanted. Returns go first:
//     events and later statements name them.
//  3. What asks at once: a job's row the first time a batch names the jid
//     (its state and which minions returned decide first-wins without
//     asking per return); a minion's row the first time this connection
//     sees the name; return ids, kReturnIdsPerDraw at a time; the rare
//     paths (repeats, retention). A batch whose jobs were all named earlier
//     in it costs one round trip.
//  4. QueryAhead (Rows::kMayWait) lets returns, expected minions and events
//     keep waiting: no deferred write reads them (ReplaceReturn's and
//     DetachEvents' writes follow a Query, which sent them; DropStubMinions
//     drops its job's waiting expected minions with its DELETE).
//  5. At most one load waits per job, so a job's writes keep their order;
//     another write of that job's row sends the loads first (SendLoadOf).
//  6. Bounds: kMaxDeferred waiting writes, and kReturnsPerInsert,
//     kExpectedPerInsert, kPgEventsPerInsert, kLoadsPerUpdate rows per
//     statement, keep memory and one statement's work in check; each
//     multi-row write is one statement text over array parameters
//     (postgres_arrays.h), prepared once per connection (Plan::kReuse).
//  7. BEGIN goes with the batch's first statement (Begin only marks it), so
//     a server lost between batches fails a write, which the writer
//     replays, not the opening of a batch.
//  8. SendLoads only adds to the round trip Send is making; it never sends
//     itself (a nested Send would run writes outside that round trip's
//     BEGIN).
//  9. The returns' INSERT has no ON CONFLICT: first-wins was decided from
//     the job row, read and locked once per batch; the unique key of (job,
//     minion) is the net, and its violation (another master's race) fails
//     the commit as BusyError, which the writer replays.
// 10. A rollback drops everything waiting (Rollback) and every cached row.
#include <unordered_set>

#include "postgres_backend.h"

#include <algorithm>
#include <iterator>

#include "postgres_arrays.h"

namespace brine::store::detail {
namespace {

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    return std::hash<std::int64_t>{}(p.first) * 31 + std::hash<std::int64_t>{}(p.second);
  }
};

}  // namespace

// One round trip: BEGIN if the batch has not begun, the batch's returns,
// the deferred writes in order, its expected minions and events, then
// `last` (if any), whose result is returned. Returns go first: events and
// later statements name them, and they need nothing that waits (jobs and
// minions exist already).
std::optional<PgResult> PostgresBackend::Send(std::optional<PgStatement> last, Rows rows) {
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

// A load write of PutLoad (or PutStubLoad, `stub`) waits, with the others
// of the batch, for one UPDATE from arrays (SendLoads): one statement a
// batch instead of one a job. At most one waits per job, so that the
// writes of a job keep their order: a second one, or another write of the
// job's row (SendLoadOf), sends what waits first.
void PostgresBackend::WaitLoad(PendingLoad load) {
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

// The waiting load writes, as one UPDATE joined to arrays, appended to the
// deferred writes (so before any later write of those rows). Each row's
// condition is the one its own statement had: a stub only over no load,
// and nothing but Salt's own save_load over Salt's own save_load. A
// publication (not a stub) records this master as the job's (0009_job_master).
void PostgresBackend::SendLoads() {
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
       " master_id = CASE WHEN v.stub THEN job.master_id ELSE $9::bigint END,"
       " load_user = CASE WHEN v.ask THEN brine_load_field(v.load, 'user') ELSE v.usr END"
       " FROM unnest($1::bigint[], $2::text[], $3::text[], $4::smallint[], $5::text[], $6::text[], $7::boolean[],"
       " $8::boolean[]) AS v (id, load, fun, kind, metadata, usr, ask, stub)"
       " WHERE job.id = v.id AND CASE WHEN v.stub THEN job.load_kind = 0 ELSE job.load_kind <> 3 OR v.kind = 3 END",
       {O(id.Take()), O(load.Take()), O(fun.Take()), O(kind.Take()), O(metadata.Take()), O(user.Take()),
        O(ask.Take()), O(stub.Take()), O(Int(master_row_))},
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
ReturnId PostgresBackend::NextReturnId() {
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
// The rollup hour of a job read in this transaction; nullopt (the statement
// reads it from the job's row) for another.
std::optional<std::string> PostgresBackend::ReadJobHour(std::int64_t job) const {
  const auto read = read_jobs_.find(job);
  if (read == read_jobs_.end()) return std::nullopt;
  return RollupHour(read->second.jid);
}

void PostgresBackend::AppendReturnInserts(std::vector<PgStatement>& out) {
  for (std::size_t done = 0; done < pending_returns_.size(); done += kReturnsPerInsert) {
    const std::size_t end = std::min(pending_returns_.size(), done + kReturnsPerInsert);
    ArrayText id, job, minion, recv, success, retcode, full_ret, trimmed, day, hour;
    for (std::size_t i = done; i < end; ++i) {
      PendingReturn& r = pending_returns_[i];
      id.Add(r.id);
      job.Add(r.job);
      minion.Add(r.minion);
      recv.AddNumber(r.received);
      success.Add(r.success);
      retcode.Add(r.retcode);
      full_ret.Add(r.full_ret);
      trimmed.Add(std::optional<bool>(r.trimmed));
      day.Add(r.day);
      hour.Add(ReadJobHour(r.job));
    }
    // The returns of expected pairs count in the minions' rollups
    // (minion_hour, postgres 0011) in the same statement: their hour from
    // the jid read with the job, the pair searched in its day's partition.
    // A pair inserted later counts the return itself (AppendExpectedInserts).
    // A row trigger did this at a statement of its own per return.
    out.push_back(
        {"WITH ins AS (INSERT INTO ret (id, job_id, minion_id, recv, success, retcode, full_ret, trimmed, job_day)"
         " SELECT id, job_id, minion_id, to_timestamp(recv), success, retcode, full_ret, trimmed, job_day"
         " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::double precision[], $5::boolean[], $6::bigint[],"
         " $7::text[], $8::boolean[], $9::date[])"
         " AS v (id, job_id, minion_id, recv, success, retcode, full_ret, trimmed, job_day))"
         " INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)"
         " SELECT v.minion_id, coalesce(v.hour, (SELECT substr(jid, 1, 10) FROM job WHERE id = v.job_id)), $11::bigint,"
         " 0, count(*), sum(brine_ret_failed(v.retcode, v.success))"
         " FROM unnest($2::bigint[], $3::bigint[], $5::boolean[], $6::bigint[], $9::date[], $10::text[])"
         " AS v (job_id, minion_id, success, retcode, job_day, hour)"
         " WHERE CASE WHEN v.job_day IS NULL"
         " THEN EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = v.job_id AND jm.minion_id = v.minion_id"
         " AND jm.job_day IS NULL)"
         " ELSE EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = v.job_id AND jm.minion_id = v.minion_id"
         " AND jm.job_day = v.job_day) END"
         " GROUP BY 1, 2 ORDER BY 1, 2"
         " ON CONFLICT (minion_id, hour, writer) DO UPDATE SET"
         " returned = h.returned + excluded.returned, failed = h.failed + excluded.failed",
         {O(id.Take()), O(job.Take()), O(minion.Take()), O(recv.Take()), O(success.Take()), O(retcode.Take()),
          O(full_ret.Take()), O(trimmed.Take()), O(day.Take()), O(hour.Take()), O(std::to_string(master_row_))},
         true});
  }
  pending_returns_.clear();
}

// The waiting expected minions of every job, as INSERTs of up to
// kExpectedPerInsert rows (one per batch, not one per job: a statement's
// own cost on the server was most of a job's ten rows'). Each also counts
// the pairs it inserted into the minions' rollups (minion_hour, postgres
// 0011): their hour from the jid read with the job, whether the minion
// returned from the job's returned minions as read and filed in this batch
// (the job's row is locked for the batch, so no other writer adds one), and
// a return's failure read only where a return exists or the job was not
// read. A statement trigger on job_minion did the same from the rows, with a
// search of job and of ret per pair: pg_bench's ingest ran at 13-14k
// events/s against 23-24k.
void PostgresBackend::AppendExpectedInserts(std::vector<PgStatement>& out) {
  for (std::size_t done = 0; done < pending_expected_.size(); done += kExpectedPerInsert) {
    const std::size_t end = std::min(pending_expected_.size(), done + kExpectedPerInsert);
    ArrayText job, minion, day, hour, look;
    std::unordered_set<std::pair<std::int64_t, std::int64_t>, PairHash> seen;
    for (std::size_t i = done; i < end; ++i) {
      const PendingExpected& e = pending_expected_[i];
      if (!seen.emplace(e.job, e.minion).second) continue;  // a row inserted twice would count twice
      job.Add(e.job);
      minion.Add(e.minion);
      day.Add(e.day);
      hour.Add(ReadJobHour(e.job));
      const auto read = read_jobs_.find(e.job);
      look.Add(std::optional<bool>(read == read_jobs_.end() || read->second.returned.contains(e.minion)));
    }
    out.push_back({"WITH ins AS (INSERT INTO job_minion (job_id, minion_id, job_day)"
                   " SELECT j, m, coalesce(d, (SELECT part_day FROM job WHERE id = j))"
                   " FROM unnest($1::bigint[], $2::bigint[], $3::date[]) AS u (j, m, d) ON CONFLICT DO NOTHING"
                   " RETURNING job_id, minion_id, job_day),"
                   " p AS (SELECT i.minion_id, coalesce(v.hour, (SELECT substr(jid, 1, 10) FROM job WHERE id = i.job_id))"
                   " AS hour, CASE WHEN v.look THEN (SELECT brine_ret_failed(r.retcode, r.success) FROM ret AS r"
                   " WHERE r.job_id = i.job_id AND r.minion_id = i.minion_id AND r.job_day IS NOT DISTINCT FROM i.job_day)"
                   " END AS failed"
                   " FROM ins AS i JOIN unnest($1::bigint[], $2::bigint[], $4::text[], $5::boolean[]) AS v (j, m, hour, look)"
                   " ON v.j = i.job_id AND v.m = i.minion_id)"
                   " INSERT INTO minion_hour AS h (minion_id, hour, writer, targeted, returned, failed)"
                   " SELECT minion_id, hour, $6::bigint, count(*), count(failed), coalesce(sum(failed), 0) FROM p"
                   " WHERE hour IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2"
                   " ON CONFLICT (minion_id, hour, writer) DO UPDATE SET targeted = h.targeted + excluded.targeted,"
                   " returned = h.returned + excluded.returned, failed = h.failed + excluded.failed",
                   {O(job.Take()), O(minion.Take()), O(day.Take()), O(hour.Take()), O(look.Take()),
                    O(std::to_string(master_row_))},
                   true});
  }
  pending_expected_.clear();
}

// The waiting events, in order, as INSERTs of up to kPgEventsPerInsert rows
// from arrays (unnest keeps the arrays' order, and so the ids follow it).
void PostgresBackend::AppendEventInserts(std::vector<PgStatement>& out) {
  for (std::size_t done = 0; done < pending_events_.size(); done += kPgEventsPerInsert) {
    const std::size_t end = std::min(pending_events_.size(), done + kPgEventsPerInsert);
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

}  // namespace brine::store::detail
