// SqliteBackend: the minions' hourly rollups (minion_hour, migration
// 0016_minion_records), kept in the write transaction that changes the rows
// they sum.
//
// Why not triggers (PostgreSQL's are, per statement): SQLite runs a trigger
// as a sub-program per row, with a frame allocated and cleared each time.
// Row triggers on ret and job_minion raised brine-master's instructions over
// ingest_bench's 20,000 events from 1,522M to 2,343M (+54 %, callgrind), and
// set-based statements per batch (a return's job, pair and hour looked up in
// SQL) still cost +32 %: three B-tree searches and an upsert per row.
//
// So a job this connection created is known here (KnownJob: its hour, the
// pairs it was given, the returns filed for it), which brine-master's jobs
// are: a publication creates the job and names its minions, then the returns
// come. Their counts add up in memory and go to minion_hour at commit, one
// upsert per (minion, hour) of the batch. Anything else (a job created by
// another connection or forgotten here, a stub's minions dropped, a return
// replaced, retention) takes the set-based statements, which read the rows.
//
// What keeps the sums exact: a return counts once, when both it and its pair
// exist. A known job's return counts when it or its pair comes second; an
// unknown job's returns are counted at commit by their ids, against the
// pairs then (unknown_returns_), and are counted before any statement that
// reads returns to count pairs or to take them out, so that statement sees
// only counted returns. The in-memory counts and the statements only add to
// the sums, so their order does not matter. known_jobs_ is dropped on a
// rollback, when another connection committed (PRAGMA data_version), and when
// it outgrows kMaxKnownEntries. A known job's counts are changed only in
// memory (a pending +1 may have no row yet to take a -1 from), an unknown
// job's only by the statements, whose rows exist: it was counted there.
#include <cstdint>

#include "sqlite_backend.h"

// Whether a return failed, as minion_job_outcome spells it (NULLs are not
// failures): a macro, so each statement stays one literal the statement
// cache can key by address.
#define BRINE_FAILED(r) "coalesce(" r ".retcode <> 0 OR " r ".success = 0, 0)"

namespace brine::store::detail {
namespace {

// Pairs and returns remembered over every known job (about 80 bytes each in
// the hash maps: 20 MB at most beside brine-master's 130 MB).
constexpr std::size_t kMaxKnownEntries = 250'000;
// Rows of minion_hour a statement adds to at commit.
constexpr std::size_t kHoursPerUpsert = 64;

bool Failed(const ReturnRow& row) {
  return (row.retcode && *row.retcode != 0) || (row.success && !*row.success);
}

}  // namespace

void SqliteBackend::ForgetKnownJobs() noexcept {
  known_jobs_.clear();
  known_entries_ = 0;
  pending_hours_.clear();
  unknown_returns_.clear();
}

void SqliteBackend::JobCreated(std::int64_t job_id, const std::string& jid) {
  if (known_entries_ >= kMaxKnownEntries) {
    // Forgotten jobs take the statements, which change rows of minion_hour
    // in place: their counts go there first.
    FlushPendingHours();
    known_jobs_.clear();
    known_entries_ = 0;
  }
  known_jobs_[job_id] = KnownJob{.hour = RollupHour(jid), .pairs = {}, .returns = {}};
}

void SqliteBackend::CountExpected(std::int64_t job_id, std::span<const std::int64_t> minion_ids) {
  if (auto known = known_jobs_.find(job_id); known != known_jobs_.end()) {
    KnownJob& job = known->second;
    for (const std::int64_t minion : minion_ids) {
      if (!job.pairs.insert(minion).second) continue;
      ++known_entries_;
      HourDelta& d = pending_hours_[{minion, job.hour}];
      ++d.targeted;
      if (auto r = job.returns.find(minion); r != job.returns.end()) {
        ++d.returned;
        d.failed += r->second ? 1 : 0;
      }
    }
    return;
  }
  CountUnknownReturns();
  auto& q = Stmt(
      "INSERT INTO minion_hour (minion_id, hour, targeted, returned, failed)"
      " SELECT n.id, (SELECT substr(jid, 1, 10) FROM job WHERE id = ?1), 1, r.id IS NOT NULL,"
      " " BRINE_FAILED("r")
      " FROM (SELECT DISTINCT value AS id FROM json_each(?2)) AS n"
      " LEFT JOIN ret AS r ON r.job_id = ?1 AND r.minion_id = n.id"
      " WHERE NOT EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = ?1 AND jm.minion_id = n.id)"
      " ON CONFLICT (minion_id, hour) DO UPDATE SET targeted = targeted + 1,"
      " returned = returned + excluded.returned, failed = failed + excluded.failed");
  q.bind(1, job_id);
  q.bind(2, JsonIds(minion_ids));
  q.exec();
}

void SqliteBackend::CountReturn(ReturnId id, std::int64_t job_id, std::int64_t minion_id, const ReturnRow& row) {
  auto known = known_jobs_.find(job_id);
  if (known == known_jobs_.end()) {
    unknown_returns_.push_back(id);
    return;
  }
  KnownJob& job = known->second;
  const bool failed = Failed(row);
  job.returns[minion_id] = failed;
  ++known_entries_;
  if (job.pairs.contains(minion_id)) {
    HourDelta& d = pending_hours_[{minion_id, job.hour}];
    ++d.returned;
    d.failed += failed ? 1 : 0;
  }
}

void SqliteBackend::CountUnknownReturns() {
  if (unknown_returns_.empty()) return;
  auto& q = Stmt(
      "INSERT INTO minion_hour (minion_id, hour, targeted, returned, failed)"
      " SELECT r.minion_id, substr(j.jid, 1, 10), 0, count(*), sum(" BRINE_FAILED("r") ")"
      " FROM ret AS r JOIN job AS j ON j.id = r.job_id"
      " WHERE r.id IN (SELECT value FROM json_each(?1))"
      " AND EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = r.job_id AND jm.minion_id = r.minion_id)"
      " GROUP BY r.minion_id, substr(j.jid, 1, 10)"
      " ON CONFLICT (minion_id, hour) DO UPDATE SET returned = returned + excluded.returned,"
      " failed = failed + excluded.failed");
  q.bind(1, JsonIds(unknown_returns_));
  q.exec();
  unknown_returns_.clear();
}

void SqliteBackend::UncountJob(std::int64_t job_id, bool forget) {
  if (auto known = known_jobs_.find(job_id); known != known_jobs_.end()) {
    // Everything it counted is known here, some of it still pending.
    KnownJob& job = known->second;
    for (const std::int64_t minion : job.pairs) {
      HourDelta& d = pending_hours_[{minion, job.hour}];
      --d.targeted;
      if (auto r = job.returns.find(minion); r != job.returns.end()) {
        --d.returned;
        d.failed -= r->second ? 1 : 0;
      }
    }
    if (forget) {
      known_jobs_.erase(known);
    } else {
      job.pairs.clear();  // its pairs go; its returns stay
    }
    return;
  }
  CountUnknownReturns();
  auto& q = Stmt(
      "UPDATE minion_hour SET targeted = minion_hour.targeted - 1,"
      " returned = minion_hour.returned - d.returned, failed = minion_hour.failed - d.failed"
      " FROM (SELECT jm.minion_id AS minion_id, (SELECT substr(jid, 1, 10) FROM job WHERE id = ?1) AS hour,"
      " r.id IS NOT NULL AS returned, " BRINE_FAILED("r") " AS failed"
      " FROM job_minion AS jm LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id"
      " WHERE jm.job_id = ?1) AS d"
      " WHERE minion_hour.minion_id = d.minion_id AND minion_hour.hour = d.hour");
  q.bind(1, job_id);
  q.exec();
}

void SqliteBackend::RecountReplaced(ReturnId id, const ReturnRow& row) {
  if (auto known = known_jobs_.find(row.job_id); known != known_jobs_.end()) {
    KnownJob& job = known->second;
    const std::int64_t minion = MinionId(row.minion);
    const bool failed = Failed(row);
    auto r = job.returns.find(minion);
    if (r != job.returns.end() && job.pairs.contains(minion)) {
      pending_hours_[{minion, job.hour}].failed += (failed ? 1 : 0) - (r->second ? 1 : 0);
    }
    job.returns[minion] = failed;
    return;
  }
  CountUnknownReturns();
  auto& q = Stmt(
      "UPDATE minion_hour SET failed = minion_hour.failed - o.failed + coalesce(?2 = 0 OR ?3 <> 0, 0)"
      " FROM (SELECT r.minion_id AS minion_id, substr(j.jid, 1, 10) AS hour, " BRINE_FAILED("r") " AS failed"
      " FROM ret AS r JOIN job AS j ON j.id = r.job_id"
      " JOIN job_minion AS jm ON jm.job_id = r.job_id AND jm.minion_id = r.minion_id WHERE r.id = ?1) AS o"
      " WHERE minion_hour.minion_id = o.minion_id AND minion_hour.hour = o.hour");
  q.bind(1, id);
  BindOutcome(q, 2, row);  // ?2 success, ?3 retcode
  q.exec();
}

void SqliteBackend::CountAtCommit() {
  CountUnknownReturns();
  FlushPendingHours();
}

// kHoursPerUpsert rows to a statement, as FlushEvents does: a statement per
// row cost a VDBE start each.
void SqliteBackend::FlushPendingHours() {
  static const auto upsert = [](std::size_t n) {
    std::string sql = "INSERT INTO minion_hour (minion_id, hour, targeted, returned, failed) VALUES ";
    for (std::size_t i = 0; i < n; ++i) sql += i == 0 ? "(?,?,?,?,?)" : ",(?,?,?,?,?)";
    return sql +
           " ON CONFLICT (minion_id, hour) DO UPDATE SET targeted = targeted + excluded.targeted,"
           " returned = returned + excluded.returned, failed = failed + excluded.failed";
  };
  // The statements' texts live as long as the cache that keys them by address.
  static const std::string many = upsert(kHoursPerUpsert);
  static const std::string one = upsert(1);
  auto bind = [](SQLite::Statement& q, int base, const std::pair<std::int64_t, std::string>& key, const HourDelta& d) {
    q.bind(base + 1, key.first);
    q.bind(base + 2, key.second);
    q.bind(base + 3, d.targeted);
    q.bind(base + 4, d.returned);
    q.bind(base + 5, d.failed);
  };
  auto at = pending_hours_.begin();
  for (std::size_t left = pending_hours_.size(); left >= kHoursPerUpsert; left -= kHoursPerUpsert) {
    auto& q = Stmt(many.c_str());
    for (std::size_t k = 0; k < kHoursPerUpsert; ++k, ++at) bind(q, static_cast<int>(5 * k), at->first, at->second);
    q.exec();
    q.reset();
  }
  for (; at != pending_hours_.end(); ++at) {
    auto& q = Stmt(one.c_str());
    bind(q, 0, at->first, at->second);
    q.exec();
    q.reset();
  }
  pending_hours_.clear();
}

#undef BRINE_FAILED

}  // namespace brine::store::detail
