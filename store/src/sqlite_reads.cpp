// SqliteBackend's reads: Salt's getters, the job rows JobQuery filters
// (job_query.h), the export reads and the counters. Each
// runs under Read (a read inside a batch sees its events; errors become
// store errors; statements are reset so no snapshot is kept).
#include "sqlite_backend.h"

#include <sqlite3.h>

#include <exception>
#include <memory>

#include "brine/core/jid.h"
#include "job_minions.h"
#include "migrations.h"

namespace brine::store::detail {

Store::RowCounts SqliteBackend::CountRows() {
  return Read("count_rows", [&] {
    Store::RowCounts c;
    SQLite::Statement jobs(*db_, "SELECT count(*) FROM job");
    if (jobs.executeStep()) c.jobs = jobs.getColumn(0).getInt64();
    SQLite::Statement events(*db_, "SELECT count(*) FROM event");
    if (events.executeStep()) c.events = events.getColumn(0).getInt64();
    return c;
  });
}

std::optional<Micros> SqliteBackend::OldestEvent() {
  return Read("oldest_event", [&]() -> std::optional<Micros> {
    SQLite::Statement q(*db_, "SELECT min(id) FROM event");
    if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
    return FromUnixMicros(q.getColumn(0).getInt64());
  });
}

Value SqliteBackend::GetCounters() {
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

std::vector<std::pair<std::string, std::int64_t>> SqliteBackend::GetSpoolProgress() {
  return Read("get_spool_progress", [&] {
    SQLite::Statement q(*db_, "SELECT file_key, offset_bytes FROM spool_progress WHERE master_id = ? ORDER BY file_key");
    q.bind(1, master_row_);
    std::vector<std::pair<std::string, std::int64_t>> out;
    while (q.executeStep()) out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getInt64());
    return out;
  });
}

Value SqliteBackend::GetLoad(const std::string& jid) {
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

void SqliteBackend::ForEachReturnText(const std::string& jid, const Store::ReturnTextFn& fn) {
  Read("get_jid", [&] {
    auto& q = Stmt(kReturnsSql);
    q.bind(1, jid);
    while (q.executeStep()) {
      const SQLite::Column name = q.getColumn(0);
      const SQLite::Column text = q.getColumn(1);
      fn(std::string_view(name.getText(), static_cast<std::size_t>(name.getBytes())),
         std::string_view(text.getText(), static_cast<std::size_t>(text.getBytes())));
    }
    q.reset();
    return 0;
  });
}

void SqliteBackend::ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) {
  std::exception_ptr caller_failure;
  const auto deliver = [&](std::string_view minion, std::string_view text) {
    if (caller_failure) return;
    try {
      fn(minion, text);
    } catch (...) {
      caller_failure = std::current_exception();
    }
  };
  const auto text_of = [](const SQLite::Column& c) {
    return std::string_view(c.getText(), static_cast<std::size_t>(c.getBytes()));
  };
  Read("get_jid", [&] {
    // The count first, from ret's (job_id, minion_id) index. Its statement
    // stays open until the rows are read, so both read one snapshot.
    auto& count = Stmt("SELECT count(*) FROM job AS j JOIN ret AS r ON r.job_id = j.id WHERE j.jid = ?");
    count.bind(1, jid);
    count.executeStep();
    const std::int64_t n = count.getColumn(0).getInt64();
    auto& q = Stmt(kReturnsSql);
    q.bind(1, jid);
    if (n <= 1) {
      // One return (the big ones: a 50 MB pillar dict) is handed out from
      // SQLite's own buffer: a copy would be one more return's size in RSS.
      while (q.executeStep()) deliver(text_of(q.getColumn(0)), text_of(q.getColumn(1)));
    } else {
      // Sorted here rather than by ORDER BY, whose sorter copies every
      // payload: names and texts go into one buffer (not a string per row)
      // and positions are sorted.
      struct Row {
        std::size_t at, name_size, text_size;
      };
      std::string arena;
      std::vector<Row> rows;
      rows.reserve(static_cast<std::size_t>(n));
      while (q.executeStep()) {
        const std::string_view name = text_of(q.getColumn(0));
        const std::string_view text = text_of(q.getColumn(1));
        rows.push_back({arena.size(), name.size(), text.size()});
        arena += name;
        arena += text;
      }
      const auto name_of = [&](const Row& r) { return std::string_view(arena).substr(r.at, r.name_size); };
      std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return name_of(a) < name_of(b); });
      for (const Row& r : rows) {
        deliver(name_of(r), std::string_view(arena).substr(r.at + r.name_size, r.text_size));
      }
    }
    q.reset();
    count.reset();
    return 0;
  });
  if (caller_failure) std::rethrow_exception(caller_failure);
}

namespace {

using RawStatement = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

// `built` prepared and bound with sqlite3's own calls: SQLiteCpp's Column
// costs a shared_ptr copy per field, and the loops over these run once per
// row listed. The binds must outlive the statement (SQLITE_STATIC).
RawStatement PrepareBound(sqlite3* handle, const JobListingSql& built) {
  sqlite3_stmt* raw = nullptr;
  if (const int rc = sqlite3_prepare_v2(handle, built.sql.c_str(), -1, &raw, nullptr); rc != SQLITE_OK) {
    throw SQLite::Exception(handle, rc);
  }
  RawStatement stmt(raw, sqlite3_finalize);
  // `$N` is SQLite's parameter N here: numbered in order of first use.
  for (std::size_t i = 0; i < built.binds.size(); ++i) {
    sqlite3_bind_text(raw, static_cast<int>(i + 1), built.binds[i].data(), static_cast<int>(built.binds[i].size()),
                      SQLITE_STATIC);
  }
  return stmt;
}

std::optional<std::string_view> TextOf(sqlite3_stmt* raw, int i) {
  const unsigned char* text = sqlite3_column_text(raw, i);
  if (text == nullptr) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(raw, i)));
}

}  // namespace

JobMinionPage SqliteBackend::ListJobMinions(const std::string& jid, const JobMinionQuery& query) {
  return Read("list_job_minions", [&] {
    sqlite3* const handle = db_->getHandle();
    return detail::ListJobMinions(jid, query, kSqliteJobMinions, [&](const JobListingSql& built, const TextRowFn& row) {
      const RawStatement stmt = PrepareBound(handle, built);
      std::vector<std::optional<std::string_view>> columns(static_cast<std::size_t>(sqlite3_column_count(stmt.get())));
      while (true) {
        const int rc = sqlite3_step(stmt.get());
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) throw SQLite::Exception(handle, rc);
        for (std::size_t i = 0; i < columns.size(); ++i) columns[i] = TextOf(stmt.get(), static_cast<int>(i));
        row(columns);
      }
    });
  });
}

void SqliteBackend::ForEachJobRow(const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row) {
  Read("get_jids", [&] {
    const JobRowsSql built = BuildJobRowsSql(pushdown, kSqliteFailedReturn);
    sqlite3* const handle = db_->getHandle();
    const RawStatement stmt = PrepareBound(handle, built);
    sqlite3_stmt* const raw = stmt.get();
    const auto text_of = [raw](int i) { return TextOf(raw, i); };
    while (true) {
      const int rc = sqlite3_step(raw);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw SQLite::Exception(handle, rc);
      JobRow r{.jid = *text_of(0), .fun = text_of(1), .load = *text_of(2), .metadata = text_of(3),
               .endtime = text_of(4)};
      if (pushdown.counts) {
        r.counts = {.expected = sqlite3_column_int64(raw, 5), .returned = sqlite3_column_int64(raw, 6),
                    .failed = sqlite3_column_int64(raw, 7), .missing = sqlite3_column_int64(raw, 8)};
      }
      if (!row(r)) break;
    }
    return 0;
  });
}

void SqliteBackend::ForEachStoredJob(const std::optional<std::string>& jid_min,
                                     const std::optional<std::string>& jid_max,
                                     const std::function<void(StoredJob&&)>& fn) {
  std::exception_ptr caller_failure;
  Read("export_jobs", [&] {
    // The outer statement holds one read transaction open until it is
    // done, so the inner ones read the same snapshot.
    SQLite::Statement q(*db_,
                        "SELECT id, jid, load_kind, load, metadata, nocache, endtime, seen_us FROM job"
                        " WHERE (?1 IS NULL OR jid >= ?1) AND (?2 IS NULL OR jid <= ?2) ORDER BY jid");
    if (jid_min) q.bind(1, *jid_min);
    if (jid_max) q.bind(2, *jid_max);
    SQLite::Statement minions(*db_,
                              "SELECT m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
                              " WHERE jm.job_id = ? ORDER BY m.name");
    SQLite::Statement rets(*db_,
                           "SELECT m.name, r.recv_us, r.full_ret FROM ret AS r JOIN minion AS m ON m.id = r.minion_id"
                           " WHERE r.job_id = ? ORDER BY r.id");
    while (!caller_failure && q.executeStep()) {
      StoredJob job;
      const std::int64_t id = q.getColumn(0).getInt64();
      job.jid = q.getColumn(1).getString();
      job.origin = detail::OriginOf(q.getColumn(2).getInt());
      if (!q.getColumn(3).isNull()) job.load_json = q.getColumn(3).getString();
      if (!q.getColumn(4).isNull()) job.metadata_json = q.getColumn(4).getString();
      job.nocache = q.getColumn(5).getInt() != 0;
      if (!q.getColumn(6).isNull()) job.endtime = q.getColumn(6).getString();
      job.seen = FromUnixMicros(q.getColumn(7).getInt64());
      minions.bind(1, id);
      while (minions.executeStep()) job.minions.push_back(minions.getColumn(0).getString());
      minions.reset();
      rets.bind(1, id);
      while (rets.executeStep()) {
        job.returns.push_back({.minion = rets.getColumn(0).getString(),
                               .received = FromUnixMicros(rets.getColumn(1).getInt64()),
                               .full_ret_json = rets.getColumn(2).getString()});
      }
      rets.reset();
      detail::Deliver(fn, std::move(job), caller_failure);
    }
    return 0;
  });
  if (caller_failure) std::rethrow_exception(caller_failure);
}

namespace {

// An archived event's columns as salt_events shows them, without its UNION
// (whose ORDER BY would sort the whole window in a temp b-tree): the event's
// id is its order. Read by EventFromRow.
constexpr const char* kEventRowSelect =
    "SELECT e.id, ms.name, coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name),"
    " coalesce(e.data, r.full_ret), e.ret_id IS NOT NULL AND e.stamp IS NOT NULL, e.stamp"
    " FROM event AS e JOIN master AS ms ON ms.id = e.master_id"
    " LEFT JOIN ret AS r ON r.id = e.ret_id LEFT JOIN job AS j ON j.id = r.job_id"
    " LEFT JOIN minion AS m ON m.id = r.minion_id";
// The tag prefix condition (?3: the prefix) on the same tag, or nothing for
// no prefix. The first two terms read the event row only, so a row is
// judged before its joins: a stored tag by itself, and a return's event
// (tag NULL: salt/job/<jid>/ret/<minion>) only when such a tag can start
// with the prefix.
std::string TagPrefixCondition(const std::string& prefix) {
  if (prefix.empty()) return "";
  return " AND (e.tag IS NULL OR substr(e.tag, 1, length(?3)) = ?3)"
         " AND (e.tag IS NOT NULL OR substr('salt/job/', 1, length(?3)) = ?3 OR substr(?3, 1, 9) = 'salt/job/')"
         " AND substr(coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name), 1, length(?3)) = ?3";
}

ListedEvent EventFromRow(SQLite::Statement& q) {
  ListedEvent out{.id = q.getColumn(0).getInt64(),
                  .event = {.received = FromUnixMicros(q.getColumn(0).getInt64()),
                            .master_id = q.getColumn(1).getString(),
                            .tag = q.getColumn(2).getString(),
                            .data_json = q.getColumn(3).getString()}};
  if (q.getColumn(4).getInt() != 0) {
    out.event.data_json = detail::WithStamp(out.event.data_json, q.getColumn(5).getString());
  }
  return out;
}

}  // namespace

Backend::EventWindow SqliteBackend::EventsBefore(std::optional<std::int64_t> before_id,
                                                 const std::string& tag_prefix, std::size_t window) {
  return Read("events_before", [&] {
    const std::int64_t before = before_id.value_or(std::numeric_limits<std::int64_t>::max());
    const auto size = static_cast<std::int64_t>(window);
    EventWindow out;
    SQLite::Statement low(*db_, "SELECT min(id), count(*) FROM (SELECT id FROM event WHERE id < ?1 ORDER BY id DESC LIMIT ?2)");
    low.bind(1, before);
    low.bind(2, size);
    low.executeStep();
    if (low.getColumn(1).getInt64() == 0) return out;
    out.lowest = low.getColumn(0).getInt64();
    SQLite::Statement q(*db_, std::string(kEventRowSelect) + " WHERE e.id < ?1 AND e.id >= ?2" +
                                  TagPrefixCondition(tag_prefix) + " ORDER BY e.id DESC");
    q.bind(1, before);
    q.bind(2, *out.lowest);
    if (!tag_prefix.empty()) q.bind(3, tag_prefix);
    while (q.executeStep()) out.events.push_back(EventFromRow(q));
    return out;
  });
}

// On SQLite the cursor is the last row id given: one writer holds the
// database's write lock from its first insert to its commit, and ids only
// grow (NextArrivalId), so rows become visible in id order.
std::string SqliteBackend::TailStart() {
  return Read("tail_start", [&] {
    SQLite::Statement q(*db_, "SELECT coalesce(max(id), 0) FROM event");
    q.executeStep();
    return "s" + std::to_string(q.getColumn(0).getInt64());
  });
}

TailBatch SqliteBackend::TailEvents(const std::string& cursor, const std::string& tag_prefix,
                                    const std::function<bool(std::string_view tag)>& match, std::size_t limit) {
  std::int64_t after = 0;
  std::size_t used = 0;
  try {
    if (cursor.size() < 2 || cursor[0] != 's') throw std::invalid_argument("no 's'");
    after = std::stoll(cursor.substr(1), &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used + 1 != cursor.size()) {
    throw std::invalid_argument("not a live-tail cursor of this store: '" + cursor.substr(0, 64) + "'");
  }
  return Read("tail_events", [&] {
    SQLite::Statement q(*db_, std::string(kEventRowSelect) + " WHERE e.id > ?1" + TagPrefixCondition(tag_prefix) +
                                  " ORDER BY e.id LIMIT ?2");
    q.bind(1, after);
    q.bind(2, static_cast<std::int64_t>(limit));
    if (!tag_prefix.empty()) q.bind(3, tag_prefix);
    TailBatch batch;
    std::size_t rows = 0;
    while (q.executeStep()) {
      ++rows;
      ListedEvent e = EventFromRow(q);
      after = e.id;
      if (match(e.event.tag)) batch.events.push_back({.cursor = "s" + std::to_string(after), .event = std::move(e)});
    }
    batch.cursor = "s" + std::to_string(after);
    batch.more = rows == limit;
    return batch;
  });
}

void SqliteBackend::ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                                 const std::function<void(ArchivedEvent&&)>& fn) {
  std::exception_ptr caller_failure;
  Read("export_events", [&] {
    SQLite::Statement q(*db_, std::string(kEventRowSelect) + " WHERE e.id >= ?1 AND e.id < ?2 ORDER BY e.id");
    q.bind(1, from ? ToUnixMicros(*from) : std::numeric_limits<std::int64_t>::min());
    q.bind(2, until ? ToUnixMicros(*until) : std::numeric_limits<std::int64_t>::max());
    while (!caller_failure && q.executeStep()) detail::Deliver(fn, EventFromRow(q).event, caller_failure);
    return 0;
  });
  if (caller_failure) std::rethrow_exception(caller_failure);
}

Value SqliteBackend::GetFun(const std::string& fun) {
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

std::vector<std::string> SqliteBackend::GetMinions() {
  return Read("get_minions", [&] {
    SQLite::Statement q(*db_,
                        "SELECT name FROM minion AS m WHERE EXISTS"
                        " (SELECT 1 FROM ret WHERE minion_id = m.id) ORDER BY name");
    std::vector<std::string> out;
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  });
}

std::optional<std::string> SqliteBackend::GetEndtime(const std::string& jid) {
  return Read("get_endtime", [&]() -> std::optional<std::string> {
    auto& q = Stmt("SELECT endtime FROM job WHERE jid = ?");
    q.bind(1, jid);
    if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
    return q.getColumn(0).getString();
  });
}

int SqliteBackend::SchemaVersion() {
  return Read("schema_version", [&] { return ReadSchemaVersion(*db_); });
}

std::vector<std::string> SqliteBackend::ExpectedMinions(std::int64_t job_id) {
  auto& q = Stmt(
      "SELECT m.name FROM job_minion AS jm JOIN minion AS m ON m.id = jm.minion_id"
      " WHERE jm.job_id = ? ORDER BY m.name");
  q.bind(1, job_id);
  std::vector<std::string> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

}  // namespace brine::store::detail
