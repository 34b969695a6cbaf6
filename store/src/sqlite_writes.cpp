// SqliteBackend's write primitives (backend.h's "job cache primitives"):
// each runs inside the transaction Begin opened, binds every value (no text
// is spliced into SQL), and throws SQLiteCpp's errors. Archived events wait
// in pending_events_ and go kEventsPerInsert to a statement (FlushEvents);
// whatever reads or changes the event table flushes first. Minion ids are
// cached (kMaxCachedMinions) and dropped on rollback.
#include "sqlite_backend.h"

#include "brine/core/jid.h"

namespace brine::store::detail {

JobState SqliteBackend::GetOrCreateJob(const std::string& jid, Micros seen) {
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
    JobCreated(entry.id, jid);
  }
  return entry;
}

void SqliteBackend::SetNocache(std::int64_t job) {
  auto& q = Stmt("UPDATE job SET nocache = 1 WHERE id = ?");
  q.bind(1, job);
  q.exec();
}

// `user` is a generated column here (0004_forensics): members.fun only. A
// publication is this master's: it records master_id (0014_job_master).
void SqliteBackend::PutLoad(std::int64_t job, const std::string& load_json,
                            const LoadMembers& members, LoadKind kind,
                            const std::optional<std::string>& metadata_json) {
  auto& q = Stmt(
      "UPDATE job SET load = ?, fun = ?, load_kind = ?,"
      " metadata = coalesce(metadata, ?), master_id = ? WHERE id = ? AND (load_kind <> 3 OR ? = 3)");
  q.bind(1, load_json);
  BindOptionalText(q, 2, members.fun ? std::optional(*members.fun) : std::nullopt);
  q.bind(3, static_cast<int>(kind));
  BindOptionalText(q, 4, metadata_json);
  q.bind(5, master_row_);  // the publishing master: this one (0014_job_master)
  q.bind(6, job);
  q.bind(7, static_cast<int>(kind));
  q.exec();
}

void SqliteBackend::PutStubLoad(std::int64_t job, const std::string& load_json,
                                const LoadMembers& members, std::string_view minion) {
  auto& q = Stmt("UPDATE job SET load = ?, fun = ?, load_kind = 1, stub_minions = 1 WHERE id = ? AND load_kind = 0");
  q.bind(1, load_json);
  BindOptionalText(q, 2, members.fun ? std::optional(*members.fun) : std::nullopt);
  q.bind(3, job);
  q.exec();
  AddExpectedOne(job, MinionId(minion));
}

void SqliteBackend::DropStubMinions(std::int64_t job) {
  UncountJob(job, false);
  auto& del = Stmt("DELETE FROM job_minion WHERE job_id = ?");
  del.bind(1, job);
  del.exec();
  auto& upd = Stmt("UPDATE job SET stub_minions = 0 WHERE id = ?");
  upd.bind(1, job);
  upd.exec();
}

void SqliteBackend::AddExpected(std::int64_t job, std::span<const std::string> minions) {
  if (minions.size() == 1) return AddExpectedOne(job, MinionId(minions.front()));
  // One statement for the whole list, its ids as a JSON array: a statement
  // run per minion cost a VDBE start each (callgrind: 6,400 instructions a
  // row in ten-minion jobs).
  std::vector<std::int64_t> minion_ids;
  minion_ids.reserve(minions.size());
  for (const std::string& m : minions) minion_ids.push_back(MinionId(m));
  const std::string ids = JsonIds(minion_ids);
  CountExpected(job, minion_ids);
  auto& q = Stmt("INSERT OR IGNORE INTO job_minion (job_id, minion_id) SELECT ?1, value FROM json_each(?2)");
  q.bind(1, job);
  q.bind(2, ids);
  q.exec();
}

std::optional<ReturnId> SqliteBackend::InsertReturn(const ReturnRow& row) {
  auto& ins = Stmt(
      "INSERT INTO ret (job_id, minion_id, recv_us, success, retcode, full_ret, trimmed)"
      " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, minion_id) DO NOTHING");
  const std::int64_t minion_id = MinionId(row.minion);
  ins.bind(1, row.job_id);
  ins.bind(2, minion_id);
  ins.bind(3, ToUnixMicros(row.received));
  BindOutcome(ins, 4, row);
  ins.bind(6, *row.full_ret);
  ins.bind(7, row.trimmed ? 1 : 0);
  ins.exec();
  if (db_->getChanges() == 0) return std::nullopt;
  const ReturnId id = db_->getLastInsertRowid();
  CountReturn(id, row.job_id, minion_id, row);
  return id;
}

std::pair<ReturnId, std::string> SqliteBackend::StoredReturn(std::int64_t job, std::string_view minion) {
  auto& q = Stmt("SELECT id, full_ret FROM ret WHERE job_id = ? AND minion_id = ?");
  q.bind(1, job);
  q.bind(2, MinionId(minion));
  q.executeStep();
  std::pair<ReturnId, std::string> out{q.getColumn(0).getInt64(), q.getColumn(1).getString()};
  q.reset();
  return out;
}

std::optional<std::pair<ReturnId, std::string>> SqliteBackend::FindReturn(
    const std::string& jid, const std::string& minion) {
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

void SqliteBackend::ReplaceReturn(ReturnId id, const ReturnRow& row) {
  FlushEvents();
  RecountReplaced(id, row);
  // Archived events that share the trimmed payload keep it as their own.
  SQLite::Statement keep(*db_, std::string(kDetachEvents) +
                                   " WHERE job_id = (SELECT job_id FROM ret WHERE id = ?1) AND ret_id = ?1");
  keep.bind(1, id);
  keep.exec();
  auto& q = Stmt("UPDATE ret SET full_ret = ?, success = ?, retcode = ?, trimmed = ? WHERE id = ?");
  q.bind(1, *row.full_ret);
  BindOutcome(q, 2, row);
  q.bind(4, row.trimmed ? 1 : 0);
  q.bind(5, id);
  q.exec();
}

void SqliteBackend::SetMetadataIfNull(std::int64_t job, const std::string& metadata_json) {
  auto& q = Stmt("UPDATE job SET metadata = ? WHERE id = ? AND metadata IS NULL");
  q.bind(1, metadata_json);
  q.bind(2, job);
  q.exec();
}

std::optional<std::pair<std::int64_t, std::string>> SqliteBackend::ReturnOwner(ReturnId id) {
  auto& q = Stmt("SELECT r.job_id, m.name FROM ret AS r JOIN minion AS m ON m.id = r.minion_id WHERE r.id = ?");
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  std::pair<std::int64_t, std::string> owner{q.getColumn(0).getInt64(), q.getColumn(1).getString()};
  q.reset();
  return owner;
}

void SqliteBackend::AppendEvents(std::vector<EventRow>&& events) {
  for (EventRow& e : events) {
    // The id is the arrival time, made strictly increasing.
    last_event_id_ = NextArrivalId(last_event_id_, e.received, "event");
    pending_events_.emplace_back(last_event_id_, std::move(e));
  }
  if (pending_events_.size() >= 2 * kEventsPerInsert) FlushEvents();
}

void SqliteBackend::Quarantine(std::string_view raw, const std::string& reason, Micros received) {
  last_quarantine_id_ = NextArrivalId(last_quarantine_id_, received, "quarantine");
  auto& q = Stmt("INSERT INTO quarantine (id, reason, raw) VALUES (?, ?, ?)");
  q.bind(1, last_quarantine_id_);
  q.bind(2, reason);
  q.bind(3, raw.data(), static_cast<int>(raw.size()));
  q.exec();
}

void SqliteBackend::SetEndtime(std::int64_t job, const std::string& endtime) {
  auto& q = Stmt("UPDATE job SET endtime = ? WHERE id = ?");
  q.bind(1, endtime);
  q.bind(2, job);
  q.exec();
}

void SqliteBackend::PutCounters(const std::vector<std::pair<std::string, std::int64_t>>& counters) {
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

void SqliteBackend::PutSpoolProgress(const std::string& file_key, std::int64_t offset_bytes) {
  auto& q = Stmt(
      "INSERT INTO spool_progress (master_id, file_key, offset_bytes) VALUES (?, ?, ?)"
      " ON CONFLICT (master_id, file_key) DO UPDATE SET offset_bytes = excluded.offset_bytes");
  q.bind(1, master_row_);
  q.bind(2, file_key);
  q.bind(3, offset_bytes);
  q.exec();
}

void SqliteBackend::ForgetSpoolProgress(const std::string& file_key) {
  auto& q = Stmt("DELETE FROM spool_progress WHERE master_id = ? AND file_key = ?");
  q.bind(1, master_row_);
  q.bind(2, file_key);
  q.exec();
}

// The archive's rows wait in pending_events_ (AppendEvents) and go in
// kEventsPerInsert to a statement: a statement per event cost a VDBE start
// each. Everything that reads or changes the event table flushes first:
// Commit, Read, ReplaceReturn, CleanOldJobs, PruneOldest; Rollback drops them.
void SqliteBackend::FlushEvents() {
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

void SqliteBackend::BindEvent(SQLite::Statement& q, int base, const std::pair<std::int64_t, EventRow>& event) {
  const EventRow& e = event.second;
  q.bind(base + 1, event.first);
  q.bind(base + 2, master_row_);
  BindOptionalInt(q, base + 3, e.job_id);
  BindOptionalText(q, base + 4, e.tag);
  BindOptionalText(q, base + 5, e.data);
  BindOptionalInt(q, base + 6, e.ret_id);
  BindOptionalText(q, base + 7, e.stamp);
}

std::int64_t SqliteBackend::MinionId(std::string_view name_view) {
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

void SqliteBackend::AddExpectedOne(std::int64_t job_id, std::int64_t minion_id) {
  CountExpected(job_id, std::span(&minion_id, 1));
  auto& q = Stmt("INSERT OR IGNORE INTO job_minion (job_id, minion_id) VALUES (?, ?)");
  q.bind(1, job_id);
  q.bind(2, minion_id);
  q.exec();
}

}  // namespace brine::store::detail
