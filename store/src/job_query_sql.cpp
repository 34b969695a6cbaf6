// The one text of a job pushdown's SELECT (job_query.h), spelled for either
// dialect. Each condition is one a backend can serve from an index: the jid
// range from job's jid index, `fun IN` and the prefix from (fun, jid), the
// EXISTS from ret's (job_id, ...) indexes; JobQuery re-checks every row.
#include "job_query.h"

namespace brine::store::detail {

JobRowsSql BuildJobRowsSql(const JobPushdown& pushdown, const SqlDialect& dialect) {
  JobRowsSql out;
  std::string& sql = out.sql;
  auto bind = [&](std::string v) {
    out.binds.push_back(std::move(v));
    return dialect.placeholder(out.binds.size());
  };
  const std::string failed =
      "(ret.retcode <> 0 OR ret.success = " + std::string(dialect.false_literal) + ")";
  sql = "SELECT jid, fun, load, metadata, endtime";
  if (pushdown.counts) {
    sql += ", (SELECT count(*) FROM job_minion AS jm WHERE jm.job_id = job.id),"
           " (SELECT count(*) FROM ret WHERE ret.job_id = job.id),"
           " (SELECT count(*) FROM ret WHERE ret.job_id = job.id AND " + failed + "),"
           " (SELECT count(*) FROM job_minion AS jm WHERE jm.job_id = job.id AND NOT EXISTS"
           " (SELECT 1 FROM ret WHERE ret.job_id = job.id AND ret.minion_id = jm.minion_id))";
  }
  sql += " FROM job WHERE load IS NOT NULL";
  if (pushdown.jid_min) sql += " AND jid >= " + bind(*pushdown.jid_min);
  if (pushdown.jid_max) sql += " AND jid <= " + bind(*pushdown.jid_max);
  if (pushdown.jid_before) sql += " AND jid < " + bind(*pushdown.jid_before);
  if (pushdown.minion) {
    sql += " AND EXISTS (SELECT 1 FROM minion AS m WHERE m.name = " + bind(*pushdown.minion) +
           " AND (EXISTS (SELECT 1 FROM job_minion AS jm WHERE jm.job_id = job.id AND jm.minion_id = m.id)"
           " OR EXISTS (SELECT 1 FROM ret WHERE ret.job_id = job.id AND ret.minion_id = m.id)))";
  }
  if (!pushdown.fun_in.empty()) {
    // Plain names use the (fun, jid) index.
    sql += " AND fun IN (";
    for (std::size_t i = 0; i < pushdown.fun_in.size(); ++i) {
      sql += (i == 0 ? "" : ", ") + bind(pushdown.fun_in[i]);
    }
    sql += ")";
  }
  if (!pushdown.fun_patterns.empty()) {
    // SQLite's LIKE ignores ASCII case: more rows, never fewer (JobQuery re-checks).
    sql += " AND (";
    for (std::size_t i = 0; i < pushdown.fun_patterns.size(); ++i) {
      const JobPushdown::FunPattern& f = pushdown.fun_patterns[i];
      sql += i == 0 ? "" : " OR ";
      sql += f.prefix ? "fun LIKE " + bind(LikeEscape(f.text) + "%") + " ESCAPE '\\'" : "fun = " + bind(f.text);
    }
    sql += ")";
  }
  for (const std::string& f : pushdown.exclude_functions) {
    sql += " AND fun " + std::string(dialect.null_safe_not_equal) + " " + bind(f);
  }
  if (pushdown.has_returns) {
    sql += *pushdown.has_returns ? " AND EXISTS" : " AND NOT EXISTS";
    sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id)";
  }
  if (pushdown.has_failures) {
    sql += *pushdown.has_failures ? " AND EXISTS" : " AND NOT EXISTS";
    sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id AND " + failed + ")";
  }
  sql += pushdown.newest_first ? " ORDER BY jid DESC" : " ORDER BY jid";
  if (pushdown.limit) sql += " LIMIT " + std::to_string(*pushdown.limit);
  return out;
}

}  // namespace brine::store::detail
