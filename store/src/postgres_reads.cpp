// PostgresBackend's reads: Salt's getters, the job rows JobQuery filters
// (job_query.h), the export reads and the counters. Each runs under Guard
// (errors become store errors) and first sends what the batch has waiting
// (Db), so a read inside a batch sees its writes. Return payloads are sorted by minion here, not by the
// server (ForEachReturn says why).
#include "postgres_backend.h"

#include <algorithm>
#include <exception>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "job_minions.h"
#include "postgres_arrays.h"
#include "tail_cursor.h"

namespace brine::store::detail {

Store::RowCounts PostgresBackend::CountRows() {
  return Guard("count_rows", Op::kRead, [&] {
    PgResult r = Db().Exec("SELECT (SELECT count(*) FROM job), (SELECT count(*) FROM event)");
    Store::RowCounts c;
    c.jobs = r.integer(0, 0);
    c.events = r.integer(0, 1);
    return c;
  });
}

std::optional<Micros> PostgresBackend::OldestEvent() {
  return Guard("oldest_event", Op::kRead, [&]() -> std::optional<Micros> {
    PgResult r = Db().Exec("SELECT (extract(epoch FROM min(received)) * 1000000)::bigint FROM event");
    if (r.null(0, 0)) return std::nullopt;
    return FromUnixMicros(r.integer(0, 0));
  });
}

Value PostgresBackend::GetCounters() {
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

std::vector<std::pair<std::string, std::int64_t>> PostgresBackend::GetSpoolProgress() {
  return Guard("get_spool_progress", Op::kRead, [&] {
    PgResult r = Db().Exec("SELECT file_key, offset_bytes FROM spool_progress WHERE master_id = $1 ORDER BY file_key",
                           {P(Int(master_row_))});
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (int i = 0; i < r.rows(); ++i) out.emplace_back(std::string(r.text(i, 0)), r.integer(i, 1));
    return out;
  });
}

Value PostgresBackend::GetLoad(const std::string& jid) {
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

void PostgresBackend::ForEachReturnText(const std::string& jid, const Store::ReturnTextFn& fn) {
  Guard("get_jid", Op::kRead, [&] { ForEachReturn(jid, fn); });
}

JobMinionPage PostgresBackend::ListJobMinions(const std::string& jid, const JobMinionQuery& query) {
  return Guard("list_job_minions", Op::kRead, [&] {
    return detail::ListJobMinions(jid, query, kPostgresJobMinions, [&](const JobListingSql& built, const TextRowFn& row) {
      std::vector<PgParam> params;
      for (const std::string& b : built.binds) params.push_back(P(b));
      const PgResult r = Db().Exec(built.sql, params);
      std::vector<std::optional<std::string_view>> columns(static_cast<std::size_t>(r.fields()));
      for (int i = 0; i < r.rows(); ++i) {
        for (std::size_t c = 0; c < columns.size(); ++c) {
          const int field = static_cast<int>(c);
          columns[c] = r.null(i, field) ? std::nullopt : std::optional<std::string_view>(r.text(i, field));
        }
        row(columns);
      }
    });
  });
}

void PostgresBackend::ForEachReturnJson(const std::string& jid, const Store::ReturnTextFn& fn) {
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

void PostgresBackend::ForEachJobRow(const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row) {
  Guard("get_jids", Op::kRead, [&] {
    const JobRowsSql built = BuildJobRowsSql(pushdown, kPostgresFailedReturn);
    std::vector<PgParam> params;
    for (const std::string& b : built.binds) params.push_back(P(b));
    Db().StartRows(built.sql, params);
    bool stop = false;
    while (std::optional<PgResult> r = db_->NextRow()) {
      if (stop) continue;  // drain the rest
      const auto text_of = [&](int i) -> std::optional<std::string_view> {
        if (r->null(0, i)) return std::nullopt;
        return r->text(0, i);
      };
      JobRow job{.jid = r->text(0, 0), .fun = text_of(1), .load = r->text(0, 2), .metadata = text_of(3),
                 .endtime = text_of(4)};
      if (pushdown.counts) {
        job.counts = {.expected = r->integer(0, 5), .returned = r->integer(0, 6), .failed = r->integer(0, 7),
                      .missing = r->integer(0, 8)};
      }
      stop = !row(job);
    }
    return 0;
  });
}

void PostgresBackend::ForEachStoredJob(const std::optional<std::string>& jid_min,
                                       const std::optional<std::string>& jid_max,
                                       const std::function<void(StoredJob&&)>& fn) {
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

namespace {

// An archived event's columns as salt_events shows them; read by EventFromRow.
constexpr const char* kEventRowSelect =
    "SELECT e.id, (extract(epoch FROM e.received) * 1000000)::bigint, ms.name,"
    " coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name), coalesce(e.data, r.full_ret),"
    " e.ret_id IS NOT NULL AND e.stamp IS NOT NULL, e.stamp"
    " FROM event AS e JOIN master AS ms ON ms.id = e.master_id"
    " LEFT JOIN ret AS r ON r.id = e.ret_id LEFT JOIN job AS j ON j.id = r.job_id"
    " LEFT JOIN minion AS m ON m.id = r.minion_id";
// The tag prefix condition on the same tag ($n: the prefix, '' for none).
// As on SQLite, the first two terms read the event row only, so a row is
// judged before its joins.
std::string TagPrefixCondition(int n) {
  const std::string p = "$" + std::to_string(n) + "::text";
  return " AND (" + p + " = '' OR e.tag IS NULL OR starts_with(e.tag, " + p + "))" + " AND (" + p +
         " = '' OR e.tag IS NOT NULL OR starts_with('salt/job/', " + p + ") OR starts_with(" + p +
         ", 'salt/job/')) AND (" + p + " = '' OR starts_with(coalesce(e.tag, 'salt/job/' || j.jid || '/ret/' || m.name), " +
         p + "))";
}

ListedEvent EventFromRow(const PgResult& r, int i) {
  ListedEvent out{.id = r.integer(i, 0),
                  .event = {.received = FromUnixMicros(r.integer(i, 1)),
                            .master_id = std::string(r.text(i, 2)),
                            .tag = std::string(r.text(i, 3)),
                            .data_json = std::string(r.text(i, 4))}};
  if (r.text(i, 5) == "t") out.event.data_json = detail::WithStamp(out.event.data_json, std::string(r.text(i, 6)));
  return out;
}

}  // namespace

Backend::EventWindow PostgresBackend::EventsBefore(std::optional<std::int64_t> before_id,
                                                   const std::string& tag_prefix, std::size_t window) {
  return Guard("events_before", Op::kRead, [&] {
    const std::string before = Int(before_id.value_or(std::numeric_limits<std::int64_t>::max()));
    const std::string count = Int(static_cast<std::int64_t>(window));
    EventWindow out;
    PgResult low = Db().Exec(
        "SELECT min(id), count(*) FROM (SELECT id FROM event WHERE id < $1::bigint ORDER BY id DESC LIMIT $2::bigint)"
        " AS w",
        {P(before), P(count)});
    if (low.integer(0, 1) == 0) return out;
    out.lowest = low.integer(0, 0);
    const std::string lowest = Int(*out.lowest);
    PgResult r = Db().Exec(std::string(kEventRowSelect) + " WHERE e.id < $1::bigint AND e.id >= $3::bigint" +
                               TagPrefixCondition(2) + " ORDER BY e.id DESC",
                           {P(before), P(tag_prefix), P(lowest)});
    for (int i = 0; i < r.rows(); ++i) out.events.push_back(EventFromRow(r, i));
    return out;
  });
}

std::string PostgresBackend::TailStart() {
  return Guard("tail_start", Op::kRead, [&] {
    PgResult r = Db().Exec("SELECT coalesce(max(id), 0) FROM event");
    TailCursor c;
    c.floor = r.integer(0, 0);
    return c.Format();
  });
}

// The cursor's rules are tail_cursor.h's; this is one poll of them.
TailBatch PostgresBackend::TailEvents(const std::string& cursor, const std::string& tag_prefix,
                                      const std::function<bool(std::string_view tag)>& match, std::size_t limit) {
  TailCursor c = TailCursor::Parse(cursor);
  return Guard("tail_events", Op::kRead, [&] {
    // The snapshot before the rows are read: a transaction that had ended
    // by now has its rows visible to the read below.
    PgResult snap = Db().Exec(
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,"
        " pg_snapshot_xmax(pg_current_snapshot())::text::bigint");
    const std::int64_t xmin = snap.integer(0, 0);
    const bool settled = c.mark && c.xmax && xmin >= *c.xmax;
    if (c.mark && !c.xmax) c.xmax = snap.integer(0, 1);
    ArrayText lo;
    ArrayText hi;
    for (const auto& [a, b] : c.Holes()) {
      lo.Add(a);
      hi.Add(b);
    }
    const std::string floor = Int(c.floor);
    const std::string top = Int(c.Top());
    const std::string count = Int(static_cast<std::int64_t>(limit));
    const std::string lows = lo.Take();
    const std::string highs = hi.Take();
    PgResult r = Db().Exec(
        std::string(kEventRowSelect) +
            " WHERE e.id > $1::bigint AND (e.id > $2::bigint OR EXISTS (SELECT 1 FROM unnest($3::bigint[],"
            " $4::bigint[]) AS h (lo, hi) WHERE e.id BETWEEN h.lo AND h.hi))" + TagPrefixCondition(5) +
            " ORDER BY e.id LIMIT $6::bigint",
        {P(floor), P(top), P(lows), P(highs), P(tag_prefix), P(count)});
    TailBatch batch;
    bool full = false;  // a row waits for the floor to move (too many ranges)
    for (int i = 0; i < r.rows() && !full; ++i) {
      ListedEvent e = EventFromRow(r, i);
      if (!c.Mark(e.id)) {
        full = true;
      } else if (match(e.event.tag)) {
        batch.events.push_back({.cursor = c.Format(), .event = std::move(e)});
      }
    }
    batch.more = !full && r.rows() == static_cast<int>(limit);
    // Every row at or below the mark that will ever be visible was visible
    // to this read, and all of them were read unless the limit cut it.
    if (settled && !batch.more && !full) c.RaiseFloor(*c.mark);
    if (!c.mark) {
      PgResult newest = Db().Exec("SELECT coalesce(max(id), 0) FROM event");
      if (newest.integer(0, 0) > c.floor) c.mark = newest.integer(0, 0);
    }
    batch.cursor = c.Format();
    return batch;
  });
}

void PostgresBackend::ForEachEvent(std::optional<Micros> from, std::optional<Micros> until,
                                   const std::function<void(ArchivedEvent&&)>& fn) {
  std::exception_ptr caller_failure;
  Guard("export_events", Op::kRead, [&] {
    Db().StartRows(
        std::string(kEventRowSelect) +
            " WHERE ($1::text IS NULL OR e.received >= to_timestamp($1::double precision))"
            " AND ($2::text IS NULL OR e.received < to_timestamp($2::double precision)) ORDER BY e.id",
        {from ? P(TimeText(*from)) : PgParam::Null(), until ? P(TimeText(*until)) : PgParam::Null()});
    while (std::optional<PgResult> row = db_->NextRow()) {
      if (caller_failure) continue;  // drain the rest
      detail::Deliver(fn, EventFromRow(*row, 0).event, caller_failure);
    }
    return 0;
  });
  if (caller_failure) std::rethrow_exception(caller_failure);
}

Value PostgresBackend::GetFun(const std::string& fun) {
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

std::vector<std::string> PostgresBackend::GetMinions() {
  return Guard("get_minions", Op::kRead, [&] {
    PgResult r = Db().Exec(
        "SELECT name FROM minion AS m WHERE EXISTS (SELECT 1 FROM ret WHERE minion_id = m.id) ORDER BY name");
    std::vector<std::string> out;
    for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
    return out;
  });
}

std::optional<std::string> PostgresBackend::GetEndtime(const std::string& jid) {
  return Guard("get_endtime", Op::kRead, [&]() -> std::optional<std::string> {
    PgResult r = Db().Exec("SELECT endtime FROM job WHERE jid = $1", {P(jid)});
    if (r.rows() == 0 || r.null(0, 0)) return std::nullopt;
    return std::string(r.text(0, 0));
  });
}

// The names of minion rows `ids`, in one query. When the ids are dense (a
// job sent to a fleet's minions, which got their rows as they first
// appeared), one range of minion_pkey, whose unwanted rows are few; else a
// join with the ids as an array, whose length the planner then knows (a
// hash join for many, index probes for a few). `id = ANY(array)` would be
// planned element by element: 11 ms for 10,000 ids.
PostgresBackend::MinionNames PostgresBackend::NamesOf(std::vector<std::int64_t> ids) {
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

}  // namespace brine::store::detail
