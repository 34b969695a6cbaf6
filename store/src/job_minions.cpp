// Store::ListJobMinions' SELECTs and its page (job_minions.h).
#include "job_minions.h"

#include <algorithm>
#include <map>

#include "brine/core/database.h"
#include "brine/core/json.h"
#include "job_query.h"

namespace brine::store::detail {

const JobMinionsDialect kSqliteJobMinions{.failed_return = kSqliteFailedReturn,
                                          .failed_ret = "ret INDEXED BY ret_failed_job",
                                          .join_minion = "CROSS JOIN",
                                          .byte_order = ""};
const JobMinionsDialect kPostgresJobMinions{.failed_return = kPostgresFailedReturn,
                                            .failed_ret = "ret",
                                            .join_minion = "JOIN",
                                            .byte_order = " COLLATE \"C\""};

namespace {

// The job's row id by its unique jid; $1 in both SELECTs.
constexpr std::string_view kJobId = "(SELECT id FROM job WHERE jid = $1)";

// The minion ids of the job that `state` keeps, as column `id`, each once
// (a minion both expected and returned comes once through UNION).
std::string MinionIds(JobMinionQuery::State state, const JobMinionsDialect& dialect) {
  const std::string job(kJobId);
  const std::string f(dialect.failed_return);
  const std::string failed_ret(dialect.failed_ret);
  switch (state) {
    case JobMinionQuery::State::kAny:
      return "SELECT jm.minion_id AS id FROM job_minion AS jm WHERE jm.job_id = " + job +
             " UNION SELECT ret.minion_id FROM ret WHERE ret.job_id = " + job;
    case JobMinionQuery::State::kFailed:
      return "SELECT ret.minion_id AS id FROM " + failed_ret + " WHERE ret.job_id = " + job + " AND " + f;
    case JobMinionQuery::State::kReturned:
      return "SELECT r.minion_id AS id FROM ret AS r WHERE r.job_id = " + job +
             " AND NOT EXISTS (SELECT 1 FROM " + failed_ret +
             " WHERE ret.job_id = r.job_id AND ret.minion_id = r.minion_id AND " + f +
             ")";
    case JobMinionQuery::State::kMissing:
      return "SELECT jm.minion_id AS id FROM job_minion AS jm WHERE jm.job_id = " + job +
             " AND NOT EXISTS (SELECT 1 FROM ret WHERE ret.job_id = jm.job_id AND ret.minion_id = jm.minion_id)";
  }
  return {};
}

}  // namespace

JobListingSql JobMinionNamesSql(const std::string& jid, const JobMinionQuery& query, std::size_t limit,
                                const JobMinionsDialect& dialect) {
  JobListingSql out;
  auto bind = [&](std::string v) {
    out.binds.push_back(std::move(v));
    return "$" + std::to_string(out.binds.size());
  };
  bind(jid);
  const std::string name = "m.name" + std::string(dialect.byte_order);
  out.sql = "SELECT m.name FROM (" + MinionIds(query.state, dialect) + ") AS s " + std::string(dialect.join_minion) +
            " minion AS m ON m.id = s.id";
  std::string_view word = " WHERE ";
  if (!query.after.empty()) {
    out.sql += std::string(word) + name + " > " + bind(query.after);
    word = " AND ";
  }
  if (query.minion) out.sql += std::string(word) + "m.name = " + bind(*query.minion);
  out.sql += " ORDER BY " + name + " LIMIT " + std::to_string(limit);
  return out;
}

JobListingSql JobMinionReturnsSql(const std::string& jid, std::span<const std::string> names) {
  JobListingSql out{.sql = "SELECT m.name, ret.full_ret FROM minion AS m JOIN ret ON ret.minion_id = m.id"
                           " WHERE ret.job_id = " + std::string(kJobId) + " AND m.name IN (",
                    .binds = {jid}};
  for (std::size_t i = 0; i < names.size(); ++i) {
    out.binds.push_back(names[i]);
    out.sql += (i == 0 ? "$" : ", $") + std::to_string(out.binds.size());
  }
  out.sql += ")";
  return out;
}

JobMinionPage ListJobMinions(const std::string& jid, const JobMinionQuery& query, const JobMinionsDialect& dialect,
                             const TextRowSource& source) {
  const std::size_t limit = std::max<std::size_t>(query.limit, 1);
  std::vector<std::string> names;
  source(JobMinionNamesSql(jid, query, limit + 1, dialect),
         [&](std::span<const std::optional<std::string_view>> row) { names.emplace_back(row[0].value_or("")); });
  JobMinionPage page;
  if (names.size() > limit) {
    names.resize(limit);
    page.next = names.back();
  }
  if (names.empty()) return page;
  std::map<std::string_view, std::size_t> at;  // name -> its place on the page
  for (std::size_t i = 0; i < names.size(); ++i) at.emplace(names[i], i);
  page.minions.resize(names.size());
  source(JobMinionReturnsSql(jid, names), [&](std::span<const std::optional<std::string_view>> row) {
    if (!row[0] || !row[1]) return;
    if (const auto it = at.find(*row[0]); it != at.end()) page.minions[it->second].full_ret = ParseJson(*row[1]);
  });
  for (std::size_t i = 0; i < names.size(); ++i) page.minions[i].name = std::move(names[i]);
  return page;
}

}  // namespace brine::store::detail

namespace brine::store {

std::vector<JobListingSql> JobMinionsQueries(const std::string& database, const std::string& jid,
                                             const JobMinionQuery& query) {
  const detail::JobMinionsDialect& dialect =
      IsServerDatabaseUri(database) ? detail::kPostgresJobMinions : detail::kSqliteJobMinions;
  const std::string page[] = {query.after.empty() ? std::string("x") : query.after};
  return {detail::JobMinionNamesSql(jid, query, std::max<std::size_t>(query.limit, 1) + 1, dialect),
          detail::JobMinionReturnsSql(jid, page)};
}

}  // namespace brine::store
