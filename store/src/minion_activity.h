// MinionActivity: each minion's newest sign of life, as the bus and the job
// cache recorded it. Shared by presence (brine-run manage.up and friends,
// presence.h) and the minion reports (brine-web's "last seen",
// minion_report.h), which read it through the SQL engine of sql.h.
//
// The signs of life, each found through an index (docs/schema.md,
// "Presence"):
//   - its return to its newest job (a `saltutil.find_job` reply is a
//     return): per minion of the `minion` table, one descending search of
//     ret_minion (minion_id, job_id) (on PostgreSQL one per ret partition);
//   - a `salt/auth` event naming it (`act` accept or absent) that arrived at
//     or after `cut`: event_tag's range of (tag, id) from `cut`;
//   - its `salt/minion/<id>/start` event: the `salt/minion/` range of
//     event_tag (one event per minion start kept).
// No query scans ret or event.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/sql.h"

namespace brine::store::detail {

// The SQL texts, in one dialect. Parameter: :cut (µs since the epoch).
struct ActivityQueries {
  // Every minion the job cache names, with the arrival (µs) of its return to
  // its newest job (NULL: it never returned).
  const char* returns;
  // Minions named by a salt/auth event since :cut, with the newest one's arrival (µs).
  const char* auth;
  // Every archived salt/minion/<id>/start event, newest per minion (µs).
  const char* starts;
};

// The texts for `database`'s kind (a SQLite path or a postgresql:// URI).
[[nodiscard]] const ActivityQueries& ActivityQueriesOf(const std::string& database);

// The same signs of life for one minion (:minion), each one index search:
// ret_minion's newest entry, event_tag's salt/minion/<id>/start, and
// event_auth_minion (migration 0016 / postgres 0011) from :cut. Each gives
// one row of one column, the arrival in µs (NULL: none).
struct ActivityOfQueries {
  const char* returns;
  const char* auth;
  const char* start;
};
[[nodiscard]] const ActivityOfQueries& ActivityOfQueriesOf(const std::string& database);

// Runs one text with its parameters and hands back every row (the caller's
// engine, under the caller's time budget; it throws as that engine does).
using ActivityRows = std::function<std::vector<std::vector<Value>>(const char* sql, const ValueMap& params)>;

// Every minion the store knows (named by the job cache, a start event or a
// salt/auth event since `cut_us`) with the arrival (µs since the epoch) of
// its newest sign of life; nullopt when none is archived (a minion only
// ever targeted). A salt/auth event before `cut_us` is not looked at.
[[nodiscard]] std::map<std::string, std::optional<std::int64_t>> ReadMinionActivity(
    const std::string& database, std::int64_t cut_us, const ActivityRows& rows);

// The newest sign of life of each of `minions` (as ReadMinionActivity reads
// the fleet's; a name with none is absent), through ActivityOfQueries: three
// index searches a minion, for a page of minions, in one call of `engine`
// (sql_batch.h) under `timeout`. Throws as SqlEngine::Run.
[[nodiscard]] std::map<std::string, std::int64_t> ReadActivityOf(const std::string& database, const SqlEngine& engine,
                                                                 const std::vector<std::string>& minions,
                                                                 std::int64_t cut_us, std::chrono::milliseconds timeout);

}  // namespace brine::store::detail
