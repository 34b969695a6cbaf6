// brine::store job listing SQL: the one SELECT that Store::GetJids,
// ForEachJob and ListJobs run for a JobFilter, and the two of
// Store::ListJobMinions, on either backend, exposed so tests and benches can
// check their plans (EXPLAIN) without a backend type.
#pragma once

#include <string>
#include <vector>

#include "brine/store/store.h"

namespace brine::store {

// A statement's text, with `$1`, `$2`, ... numbered in order of first use
// (PostgreSQL's form; SQLite numbers `$NAME` parameters the same way), and
// the texts they bind, in order.
struct JobListingSql {
  std::string sql;
  std::vector<std::string> binds;
};

// The SELECT a store at `database` (what OpenStore takes: a SQLite path or a
// postgresql:// URI) runs for `filter`. It selects a superset of the jobs the
// filter keeps (the rest is checked row by row above SQL). Throws nothing.
[[nodiscard]] JobListingSql JobListingQuery(const std::string& database, const JobFilter& filter);

// The two SELECTs Store::ListJobMinions runs on a store at `database` for
// `jid` and `query`: the page's names (LIMIT the query's limit plus one),
// then the returns of a page holding `query.after` alone (or "x" when it is
// empty). Throws nothing.
[[nodiscard]] std::vector<JobListingSql> JobMinionsQueries(const std::string& database, const std::string& jid,
                                                           const JobMinionQuery& query);

}  // namespace brine::store
