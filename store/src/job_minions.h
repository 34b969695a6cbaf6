// Store::ListJobMinions (store.h) above the backends: the two SELECTs it
// runs, built once for both dialects (JobListingSql's form: `$N` binds, all
// text), and the page made of their rows. A backend only runs the texts.
//
// 1. The page's names: the job's minion ids from job_minion's key and ret's
//    (job_id, minion_id) index (a failed return as the dialect writes its
//    partial index of failed returns, so that index answers), their names by
//    the minion key, after the cursor, sorted in byte order, LIMIT the page
//    plus one (to know whether another page follows). Its cost is the job's
//    index entries whatever the page's depth. No return body is read:
//    SQLite would carry each full_ret through its sorter.
// 2. The bodies of those names only: minion by its name, then ret by
//    (job_id, minion_id), in no order (placed by name here).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "brine/store/job_listing_sql.h"
#include "brine/store/store.h"

namespace brine::store::detail {

// What differs between the dialects.
struct JobMinionsDialect {
  // A failed return of `ret`, as the partial index of failed returns is
  // written (job_query.h's kSqliteFailedReturn, kPostgresFailedReturn).
  std::string_view failed_return;
  // `ret` where a failed return is looked up by (job_id, minion_id): SQLite
  // is told to take the partial index (its own choice is ret_job_minion,
  // which then reads each return's row); PostgreSQL has no such index.
  std::string_view failed_ret;
  // How the job's minion ids join minion: SQLite's CROSS JOIN keeps them
  // the outer loop (its planner would otherwise walk the whole fleet's name
  // index in order on a store whose jobs look small); a plain JOIN on
  // PostgreSQL.
  std::string_view join_minion;
  // Appended to the name in comparisons and ORDER BY, so names compare as
  // bytes: "" on SQLite (BINARY is memcmp), ` COLLATE "C"` on PostgreSQL.
  std::string_view byte_order;
};
extern const JobMinionsDialect kSqliteJobMinions;
extern const JobMinionsDialect kPostgresJobMinions;

// The names SELECT (one column, the name) for `query`, at most `limit` rows.
[[nodiscard]] JobListingSql JobMinionNamesSql(const std::string& jid, const JobMinionQuery& query, std::size_t limit,
                                              const JobMinionsDialect& dialect);
// The bodies SELECT (columns: name, full_ret) of `names` (at least one).
[[nodiscard]] JobListingSql JobMinionReturnsSql(const std::string& jid, std::span<const std::string> names);

// Runs a SELECT: `row` sees each row's columns as text (nullopt: NULL); the
// views live until it returns. The backend's read guard translates errors.
using TextRowFn = std::function<void(std::span<const std::optional<std::string_view>> columns)>;
using TextRowSource = std::function<void(const JobListingSql& select, const TextRowFn& row)>;

// Store::ListJobMinions over `source` in `dialect`. A query limit of 0 is
// taken as 1. The stored returns are parsed inside `row`, so a return that
// is not JSON fails like the read (the backend's guard translates it).
[[nodiscard]] JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query,
                                           const JobMinionsDialect& dialect, const TextRowSource& source);

}  // namespace brine::store::detail
