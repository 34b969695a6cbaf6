// SqliteBackend: master_status.sql's tables, brine-master's status row and
// hourly rollups (master_status.h has the readers' shapes).
#include "sqlite_backend.h"

namespace brine::store::detail {

void SqliteBackend::PutMasterInfo(const MasterInfo& info) {
  auto& q = Stmt(
      "INSERT INTO master_status (master_id, version, host, pid, started_us) VALUES (?, ?, ?, ?, ?)"
      " ON CONFLICT (master_id) DO UPDATE SET version = excluded.version, host = excluded.host,"
      " pid = excluded.pid, started_us = excluded.started_us");
  q.bind(1, master_row_);
  q.bind(2, info.version);
  q.bind(3, info.host);
  q.bind(4, info.pid);
  q.bind(5, info.started_us);
  q.exec();
}

void SqliteBackend::AddHourlyCounts(std::span<const HourCounts> hours) {
  for (const HourCounts& h : hours) {
    auto& q = Stmt(
        "INSERT INTO master_hour (master_id, hour_us, jobs, returns, failures, events) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (master_id, hour_us) DO UPDATE SET jobs = jobs + excluded.jobs,"
        " returns = returns + excluded.returns, failures = failures + excluded.failures,"
        " events = events + excluded.events");
    q.bind(1, master_row_);
    q.bind(2, ToUnixMicros(h.hour));
    q.bind(3, h.jobs);
    q.bind(4, h.returns);
    q.bind(5, h.failures);
    q.bind(6, h.events);
    q.exec();
    q.reset();
  }
}

void SqliteBackend::ForgetHoursBefore(std::int64_t before_us) {
  // An hour goes once all of it lies before the cut.
  auto& q = Stmt("DELETE FROM master_hour WHERE hour_us + 3600000000 <= ?");
  q.bind(1, before_us);
  q.exec();
  // The minions' rollups (0016) of an hour before the cut with no job left:
  // the triggers brought them to zero as the jobs went.
  static const std::string forget = std::string("DELETE FROM minion_hour WHERE hour < ?1") + kHourHasNoJob;
  auto& m = Stmt(forget.c_str());
  m.bind(1, RollupHour(FromUnixMicros(before_us)));
  m.exec();
}

std::vector<std::pair<std::string, MasterInfo>> SqliteBackend::GetMasterInfos() {
  return Read("get_master_status", [&] {
    auto& q = Stmt(
        "SELECT m.name, s.version, s.host, s.pid, s.started_us FROM master_status AS s"
        " JOIN master AS m ON m.id = s.master_id ORDER BY m.name");
    std::vector<std::pair<std::string, MasterInfo>> out;
    while (q.executeStep()) {
      out.emplace_back(q.getColumn(0).getString(), MasterInfo{.version = q.getColumn(1).getString(),
                                                              .host = q.getColumn(2).getString(),
                                                              .pid = q.getColumn(3).getInt64(),
                                                              .started_us = q.getColumn(4).getInt64()});
    }
    return out;
  });
}

std::vector<HourCounts> SqliteBackend::GetHourlyCounts(std::int64_t from_us, std::int64_t until_us,
                                                       const std::optional<std::string>& master) {
  return Read("hourly_counts", [&] {
    auto& q = Stmt(
        "SELECT h.hour_us, sum(h.jobs), sum(h.returns), sum(h.failures), sum(h.events) FROM master_hour AS h"
        " WHERE h.hour_us >= ?1 AND h.hour_us < ?2"
        " AND (?3 IS NULL OR h.master_id = (SELECT id FROM master WHERE name = ?3))"
        " GROUP BY h.hour_us ORDER BY h.hour_us");
    q.bind(1, from_us);
    q.bind(2, until_us);
    if (master) {
      q.bind(3, *master);
    } else {
      q.bind(3);
    }
    std::vector<HourCounts> out;
    while (q.executeStep()) {
      out.push_back({.hour = FromUnixMicros(q.getColumn(0).getInt64()),
                     .jobs = q.getColumn(1).getInt64(),
                     .returns = q.getColumn(2).getInt64(),
                     .failures = q.getColumn(3).getInt64(),
                     .events = q.getColumn(4).getInt64()});
    }
    return out;
  });
}

void SqliteBackend::OpenBusGap(std::string_view reason, std::int64_t start_us,
                               std::optional<std::int64_t> last_frame_us) {
  auto& q = Stmt(
      "INSERT INTO bus_gap (master_id, gap_start_us, last_frame_us, reason) SELECT ?1, ?2, ?3, ?4"
      " WHERE NOT EXISTS (SELECT 1 FROM bus_gap WHERE master_id = ?1 AND gap_end_us IS NULL)");
  q.bind(1, master_row_);
  q.bind(2, start_us);
  if (last_frame_us) {
    q.bind(3, *last_frame_us);
  } else {
    q.bind(3);
  }
  q.bind(4, std::string(reason));
  q.exec();
}

void SqliteBackend::CloseBusGap(std::int64_t end_us) {
  auto& q = Stmt("UPDATE bus_gap SET gap_end_us = max(?2, gap_start_us) WHERE master_id = ?1 AND gap_end_us IS NULL");
  q.bind(1, master_row_);
  q.bind(2, end_us);
  q.exec();
}

std::vector<BusGap> SqliteBackend::GetBusGaps(std::int64_t since_us) {
  return Read("get_bus_gaps", [&] {
    auto& q = Stmt(
        "SELECT m.name, g.gap_start_us, g.gap_end_us, g.last_frame_us, g.reason FROM bus_gap AS g"
        " JOIN master AS m ON m.id = g.master_id WHERE g.gap_end_us IS NULL OR g.gap_end_us >= ?"
        " ORDER BY g.gap_start_us, g.id");
    q.bind(1, since_us);
    std::vector<BusGap> out;
    while (q.executeStep()) {
      BusGap g{.master_id = q.getColumn(0).getString(), .start = FromUnixMicros(q.getColumn(1).getInt64())};
      if (!q.getColumn(2).isNull()) g.end = FromUnixMicros(q.getColumn(2).getInt64());
      if (!q.getColumn(3).isNull()) g.last_frame = FromUnixMicros(q.getColumn(3).getInt64());
      g.reason = q.getColumn(4).getString();
      out.push_back(std::move(g));
    }
    return out;
  });
}

}  // namespace brine::store::detail
