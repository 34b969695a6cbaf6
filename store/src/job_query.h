// JobQuery: GetJids' filters (JobFilter, store.h) decided once, above the
// backends. The predicates are core's FnMatch (Python's fnmatch.fnmatchcase)
// and Salt's search_metadata rule, applied here to every row a backend
// hands back. A backend only supplies rows, narrowed by a JobPushdown: what
// translates to SQL exactly (a jid range, a literal `fun IN (...)`, a
// `LIKE` prefix, exact exclusions, the return conditions), so a pushdown
// may let through more rows than the filter keeps, never fewer.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/store/job_listing_sql.h"
#include "brine/store/store.h"

namespace brine::store::detail {

// What a backend's SQL may select job rows by. Every condition set must
// hold (AND); the rows come in jid order, newest first when `newest_first`.
struct JobPushdown {
  std::optional<std::string> jid_min;  // jid >= (inclusive)
  std::optional<std::string> jid_max;  // jid <= (inclusive)
  std::optional<std::string> jid_before;  // jid < (exclusive)
  // When set: the job expected this minion or holds a return from it.
  std::optional<std::string> minion;
  // When set: the job was published by the master of this name.
  std::optional<std::string> master;
  // When not empty: `fun IN (...)`, these exact names.
  std::vector<std::string> fun_in;
  // When not empty: `fun = p OR fun LIKE p'%'` for any entry, with LIKE's
  // `%`, `_` and escape character escaped (LikePrefix). An entry is either
  // a whole name (`prefix` false) or a literal prefix.
  struct FunPattern {
    std::string text;
    bool prefix = false;
  };
  std::vector<FunPattern> fun_patterns;
  std::vector<std::string> exclude_functions;  // fun IS DISTINCT FROM each
  std::optional<bool> has_returns;             // EXISTS (a return)
  std::optional<bool> has_failures;            // EXISTS (a failed return)
  bool newest_first = false;
  bool counts = false;  // the rows carry JobRow::counts
  // Set only when every row the pushdown selects is kept: LIMIT in SQL.
  std::optional<std::size_t> limit;
};

// One job row as a backend reads it. The views live until the callback returns.
struct JobRow {
  std::string_view jid;
  std::optional<std::string_view> fun;  // the fun column (load.fun when a string)
  std::string_view load;                // JSON text, never null (load IS NOT NULL)
  std::optional<std::string_view> metadata;
  std::optional<std::string_view> endtime;
  JobRecord::MinionCounts counts;  // when JobPushdown::counts
};

// A backend's row source: calls `row` for each row `pushdown` selects, in
// its order, until `row` returns false (the backend may then drain what it
// has started). Runs under the backend's read guard, so an exception from
// `row` is translated like the backend's own.
using JobRowSource = std::function<void(const JobPushdown& pushdown, const std::function<bool(const JobRow&)>& row)>;

// `text` as a LIKE pattern matching itself, with '\' as the escape character
// (write `LIKE ? ESCAPE '\'`): `%`, `_` and `\` are escaped.
[[nodiscard]] std::string LikeEscape(std::string_view text);

// The one SELECT both backends run for `pushdown` (JobListingSql's form,
// job_listing_sql.h). The columns: jid, fun, load, metadata, endtime, then with `counts` expected,
// returned, failed, missing. `failed_return` is the one part each dialect
// spells its own way, a failed return of `ret` as its partial index on
// failed returns is written, so the planner can use it (SQLite:
// kSqliteFailedReturn; PostgreSQL: kPostgresFailedReturn).
using JobRowsSql = JobListingSql;
inline constexpr std::string_view kSqliteFailedReturn = "(ret.retcode <> 0 OR ret.success = 0)";
inline constexpr std::string_view kPostgresFailedReturn = "(ret.retcode <> 0 OR ret.success = false)";
[[nodiscard]] JobRowsSql BuildJobRowsSql(const JobPushdown& pushdown, std::string_view failed_return);

// Store::ForEachJob over `source`: `fn` sees each record in jid order.
// Exceptions from `fn` propagate untranslated once the read is over.
// With filter.time_budget, stops once it has gone: the answer says how far
// it got (JobPage's complete and reached; its jobs are left empty).
JobPage RunJobQuery(const JobFilter& filter, const JobRowSource& source, const std::function<void(JobRecord&&)>& fn);

// The pushdown RunJobQuery asks for `filter` (exposed for the tests).
[[nodiscard]] JobPushdown PushdownOf(const JobFilter& filter);

}  // namespace brine::store::detail
