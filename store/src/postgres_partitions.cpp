// The day partitions: the archive (event) by arrival, a job's returns and
// expected minions (ret, job_minion) by the day of the job (job.part_day,
// migrations/postgres/0003). Contract: EnsurePartitions creates yesterday's,
// today's and tomorrow's once a day, each in a transaction of its own before
// the batch's; a day whose rows went to the default partition keeps them
// there; a partition another master creates at the same moment is no error.
#include "postgres_backend.h"

#include <cstdio>

namespace brine::store::detail {

// "YYYYMMDD" and "YYYY-MM-DD" of a day number.
std::string DayText(std::int64_t day, bool dashes) {
  const date::year_month_day ymd{date::sys_days{date::days{day}}};
  char buf[16];
  std::snprintf(buf, sizeof buf, dashes ? "%04d-%02u-%02u" : "%04d%02u%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

// The tables partitioned by day: the archive by arrival, a job's returns and
// expected minions by the day of the job (job.part_day, migrations/postgres/0003).
constexpr const char* kDayPartitioned[] = {"event", "ret", "job_minion"};

// The day of a partition of `table` named <table>_pYYYYMMDD, or nullopt.
std::optional<std::int64_t> PartitionDay(std::string_view name, std::string_view table) {
  const std::size_t at = table.size() + 2;
  if (name.size() != at + 8 || name.substr(0, table.size()) != table || name.substr(table.size(), 2) != "_p" ||
      name.substr(at).find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  const int y = std::stoi(std::string(name.substr(at, 4)));
  const unsigned m = static_cast<unsigned>(std::stoi(std::string(name.substr(at + 4, 2))));
  const unsigned d = static_cast<unsigned>(std::stoi(std::string(name.substr(at + 6, 2))));
  const date::year_month_day ymd{date::year{y}, date::month{m}, date::day{d}};
  if (!ymd.ok()) return std::nullopt;
  return date::sys_days{ymd}.time_since_epoch().count();
}

// Creates the day partitions (kDayPartitioned) for yesterday, today and
// tomorrow (UTC) once a day, each in a transaction of its own. A day whose
// rows already went to the default partition (the database was down at
// midnight, say) keeps them there; so does a partition another master
// creates at the same moment.
void PostgresBackend::EnsurePartitions() {
  const std::int64_t today = DayOf(clock_->Now());
  if (today == partitions_day_) return;
  for (const std::string table : kDayPartitioned) {
    // The archive is partitioned by a timestamptz, the job tables by a date.
    const std::string from_suffix = table == "event" ? " 00:00:00+00" : "";
    for (std::int64_t day = today - 1; day <= today + 1; ++day) {
      try {
        db_->Exec("CREATE TABLE IF NOT EXISTS " + table + "_p" + DayText(day, false) + " PARTITION OF " + table +
                  " FOR VALUES FROM ('" + DayText(day, true) + from_suffix + "') TO ('" + DayText(day + 1, true) +
                  from_suffix + "')");
      } catch (const PgError& e) {
        // 23514: the default partition holds rows of that day; 23505/42P07: created concurrently.
        if (e.sqlstate() != "23514" && e.sqlstate() != "23505" && e.sqlstate() != "42P07") throw;
      }
    }
  }
  partitions_day_ = today;
}

}  // namespace brine::store::detail
