// PostgresBackend: master_status.sql's tables, brine-master's status row and
// hourly rollups (master_status.h has the readers' shapes). Writes are
// deferred into the batch's pipeline as every write is.
#include "postgres_backend.h"
#include "postgres_arrays.h"

namespace brine::store::detail {

void PostgresBackend::PutMasterInfo(const MasterInfo& info) {
  Defer("INSERT INTO master_status (master_id, version, host, pid, started_us) VALUES ($1, $2, $3, $4, $5)"
        " ON CONFLICT (master_id) DO UPDATE SET version = excluded.version, host = excluded.host,"
        " pid = excluded.pid, started_us = excluded.started_us",
        {O(Int(master_row_)), O(info.version), O(info.host), O(Int(info.pid)), O(Int(info.started_us))});
}

void PostgresBackend::AddHourlyCounts(std::span<const HourCounts> hours) {
  if (hours.empty()) return;
  ArrayText hour, jobs, returns, failures, events;
  for (const HourCounts& h : hours) {
    hour.Add(ToUnixMicros(h.hour));
    jobs.Add(h.jobs);
    returns.Add(h.returns);
    failures.Add(h.failures);
    events.Add(h.events);
  }
  // Several masters add to their own rows only: no row is shared.
  Defer("INSERT INTO master_hour AS t (master_id, hour_us, jobs, returns, failures, events)"
        " SELECT $1::bigint, h, j, r, f, e FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],"
        " $6::bigint[]) AS u(h, j, r, f, e)"
        " ON CONFLICT (master_id, hour_us) DO UPDATE SET jobs = t.jobs + excluded.jobs,"
        " returns = t.returns + excluded.returns, failures = t.failures + excluded.failures,"
        " events = t.events + excluded.events",
        {O(Int(master_row_)), O(hour.Take()), O(jobs.Take()), O(returns.Take()), O(failures.Take()),
         O(events.Take())},
        Plan::kReuse);
}

void PostgresBackend::ForgetHoursBefore(std::int64_t before_us) {
  Defer("DELETE FROM master_hour WHERE hour_us + 3600000000 <= $1::bigint", {O(Int(before_us))});
  // The minions' rollups (postgres 0011) of an hour before the cut with no
  // job left; a dropped day's went with its partitions (DropJobDays).
  Defer(std::string("DELETE FROM minion_hour WHERE hour < $1") + kHourHasNoJob,
        {O(RollupHour(FromUnixMicros(before_us)))});
}

std::vector<std::pair<std::string, MasterInfo>> PostgresBackend::GetMasterInfos() {
  return Guard("get_master_status", Op::kRead, [&] {
    PgResult r = Db().Exec(
        "SELECT m.name, s.version, s.host, s.pid, s.started_us FROM master_status AS s"
        " JOIN master AS m ON m.id = s.master_id ORDER BY m.name");
    std::vector<std::pair<std::string, MasterInfo>> out;
    for (int i = 0; i < r.rows(); ++i) {
      out.emplace_back(std::string(r.text(i, 0)), MasterInfo{.version = std::string(r.text(i, 1)),
                                                             .host = std::string(r.text(i, 2)),
                                                             .pid = r.integer(i, 3),
                                                             .started_us = r.integer(i, 4)});
    }
    return out;
  });
}

std::vector<HourCounts> PostgresBackend::GetHourlyCounts(std::int64_t from_us, std::int64_t until_us,
                                                         const std::optional<std::string>& master) {
  return Guard("hourly_counts", Op::kRead, [&] {
    const std::string from = Int(from_us), until = Int(until_us);
    const char* sql =
        "SELECT h.hour_us, sum(h.jobs)::bigint, sum(h.returns)::bigint, sum(h.failures)::bigint,"
        " sum(h.events)::bigint FROM master_hour AS h"
        " WHERE h.hour_us >= $1::bigint AND h.hour_us < $2::bigint"
        " AND ($3::text IS NULL OR h.master_id = (SELECT id FROM master WHERE name = $3::text))"
        " GROUP BY h.hour_us ORDER BY h.hour_us";
    PgResult r = master ? Db().Exec(sql, {P(from), P(until), P(*master)})
                        : Db().Exec(sql, {P(from), P(until), PgParam{}});
    std::vector<HourCounts> out;
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back({.hour = FromUnixMicros(r.integer(i, 0)),
                     .jobs = r.integer(i, 1),
                     .returns = r.integer(i, 2),
                     .failures = r.integer(i, 3),
                     .events = r.integer(i, 4)});
    }
    return out;
  });
}

void PostgresBackend::OpenBusGap(std::string_view reason, std::int64_t start_us,
                                 std::optional<std::int64_t> last_frame_us) {
  Defer("INSERT INTO bus_gap (master_id, gap_start_us, last_frame_us, reason) SELECT $1::bigint, $2::bigint,"
        " $3::bigint, $4::text WHERE NOT EXISTS (SELECT 1 FROM bus_gap WHERE master_id = $1::bigint"
        " AND gap_end_us IS NULL)",
        {O(Int(master_row_)), O(Int(start_us)), OInt(last_frame_us),
         O(std::string(reason))});
}

void PostgresBackend::CloseBusGap(std::int64_t end_us) {
  Defer("UPDATE bus_gap SET gap_end_us = greatest($2::bigint, gap_start_us) WHERE master_id = $1::bigint"
        " AND gap_end_us IS NULL",
        {O(Int(master_row_)), O(Int(end_us))});
}

std::vector<BusGap> PostgresBackend::GetBusGaps(std::int64_t since_us) {
  return Guard("get_bus_gaps", Op::kRead, [&] {
    PgResult r = Db().Exec(
        "SELECT m.name, g.gap_start_us, g.gap_end_us, g.last_frame_us, g.reason FROM bus_gap AS g"
        " JOIN master AS m ON m.id = g.master_id WHERE g.gap_end_us IS NULL OR g.gap_end_us >= $1::bigint"
        " ORDER BY g.gap_start_us, g.id",
        {P(Int(since_us))});
    std::vector<BusGap> out;
    for (int i = 0; i < r.rows(); ++i) {
      BusGap g{.master_id = std::string(r.text(i, 0)), .start = FromUnixMicros(r.integer(i, 1))};
      if (!r.null(i, 2)) g.end = FromUnixMicros(r.integer(i, 2));
      if (!r.null(i, 3)) g.last_frame = FromUnixMicros(r.integer(i, 3));
      g.reason = std::string(r.text(i, 4));
      out.push_back(std::move(g));
    }
    return out;
  });
}

}  // namespace brine::store::detail
