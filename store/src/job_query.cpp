// JobQuery (job_query.h): GetJids' filters, once for every backend.
#include "job_query.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "brine/core/database.h"
#include "brine/core/glob.h"
#include "brine/core/json.h"

namespace brine::store::detail {
namespace {

bool AnyMatch(const std::vector<std::string>& globs, std::string_view text) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return FnMatch(g, text); });
}

bool AllLiteral(const std::vector<std::string>& globs) {
  return std::all_of(globs.begin(), globs.end(), [](const std::string& g) { return IsLiteralGlob(g); });
}

// The load's tgt (a string, or a list whose string elements are tried in
// turn) matches any glob.
bool TargetMatches(const std::vector<std::string>& globs, const Value& load) {
  const Value* tgt = load.Find("tgt");
  if (tgt == nullptr) return false;
  if (tgt->is_string()) return AnyMatch(globs, tgt->as_string());
  if (!tgt->is_list()) return false;
  return std::any_of(tgt->as_list().begin(), tgt->as_list().end(),
                     [&](const Value& t) { return t.is_string() && AnyMatch(globs, t.as_string()); });
}

// Salt's search_metadata: any key of `wanted` present in `metadata` with an equal value.
bool MetadataMatches(const Value& wanted, const Value& metadata) {
  if (!wanted.is_map()) return false;
  return std::any_of(wanted.as_map().begin(), wanted.as_map().end(), [&](const auto& kv) {
    const Value* have = metadata.Find(kv.first);
    return have != nullptr && *have == kv.second;
  });
}

// True when every row that `pushdown` selects passes `filter`, so SQL may apply the limit.
bool PushdownIsExact(const JobFilter& filter) {
  return AllLiteral(filter.function_globs) && filter.target_globs.empty() && !filter.metadata && !filter.user;
}

}  // namespace

std::string LikeEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

JobRowsSql BuildJobRowsSql(const JobPushdown& pushdown, std::string_view failed_return) {
  JobRowsSql out;
  std::string& sql = out.sql;
  auto bind = [&](std::string v) {
    out.binds.push_back(std::move(v));
    return "$" + std::to_string(out.binds.size());
  };
  const std::string failed(failed_return);
  sql = "SELECT jid, fun, load, metadata, endtime";
  if (pushdown.counts) {
    sql += std::string(", (SELECT count(*) FROM job_minion AS jm WHERE jm.job_id = job.id),"
                       " (SELECT count(*) FROM ret WHERE ret.job_id = job.id),"
                       " (SELECT count(*) FROM ret WHERE ret.job_id = job.id AND ") + failed + "),"
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
  // One lookup of the master's row by its unique name, then a comparison per
  // row of the jid range: no index on job.master_id is needed.
  if (pushdown.master) sql += " AND master_id = (SELECT id FROM master WHERE name = " + bind(*pushdown.master) + ")";
  if (!pushdown.fun_in.empty()) {
    // Plain names use the (fun, jid) index.
    sql += " AND fun IN (";
    for (std::size_t i = 0; i < pushdown.fun_in.size(); ++i) sql += (i == 0 ? "" : ", ") + bind(pushdown.fun_in[i]);
    sql += ")";
  }
  if (!pushdown.fun_patterns.empty()) {
    // LIKE ignores ASCII case on SQLite: more rows, never fewer (JobQuery re-checks).
    sql += " AND (";
    for (std::size_t i = 0; i < pushdown.fun_patterns.size(); ++i) {
      const JobPushdown::FunPattern& f = pushdown.fun_patterns[i];
      sql += i == 0 ? "" : " OR ";
      sql += f.prefix ? "fun LIKE " + bind(LikeEscape(f.text) + "%") + " ESCAPE '\\'" : "fun = " + bind(f.text);
    }
    sql += ")";
  }
  for (const std::string& f : pushdown.exclude_functions) sql += " AND fun IS DISTINCT FROM " + bind(f);
  if (pushdown.has_returns) {
    sql += *pushdown.has_returns ? " AND EXISTS" : " AND NOT EXISTS";
    sql += " (SELECT 1 FROM ret WHERE ret.job_id = job.id)";
  }
  if (pushdown.has_failures) {
    sql += *pushdown.has_failures ? " AND EXISTS" : " AND NOT EXISTS";
    sql += std::string(" (SELECT 1 FROM ret WHERE ret.job_id = job.id AND ") + failed + ")";
  }
  sql += pushdown.newest_first ? " ORDER BY jid DESC" : " ORDER BY jid";
  if (pushdown.limit) sql += " LIMIT " + std::to_string(*pushdown.limit);
  return out;
}

JobPushdown PushdownOf(const JobFilter& filter) {
  JobPushdown p;
  p.jid_min = filter.jid_min;
  p.jid_max = filter.jid_max;
  p.jid_before = filter.jid_before;
  p.minion = filter.minion;
  p.master = filter.master;
  if (AllLiteral(filter.function_globs)) {
    p.fun_in = filter.function_globs;
  } else {
    const bool prefixed = std::all_of(filter.function_globs.begin(), filter.function_globs.end(),
                                      [](const std::string& g) { return !GlobLiteralPrefix(g).empty(); });
    if (prefixed) {
      for (const std::string& g : filter.function_globs) {
        const bool literal = IsLiteralGlob(g);
        p.fun_patterns.push_back({.text = std::string(literal ? std::string_view(g) : GlobLiteralPrefix(g)),
                                  .prefix = !literal});
      }
    }
  }
  p.exclude_functions = filter.exclude_functions;
  p.has_returns = filter.has_returns;
  p.has_failures = filter.has_failures;
  p.newest_first = filter.limit.has_value();
  p.counts = filter.with_counts;
  if (filter.limit && PushdownIsExact(filter)) p.limit = filter.limit;
  return p;
}

JobPage RunJobQuery(const JobFilter& filter, const JobRowSource& source, const std::function<void(JobRecord&&)>& fn) {
  JobPage page;
  if (filter.limit && *filter.limit == 0) return page;
  const JobPushdown pushdown = PushdownOf(filter);
  std::exception_ptr caller_failure;
  std::vector<JobRecord> newest;
  std::string reached;  // the last jid seen, kept in one buffer (a string per row costs an allocation)
  using Clock = std::chrono::steady_clock;
  const std::optional<Clock::time_point> deadline =
      filter.time_budget ? std::optional(Clock::now() + *filter.time_budget) : std::nullopt;
  source(pushdown, [&](const JobRow& row) {
    if (deadline && Clock::now() >= *deadline) {
      page.complete = false;
      return false;
    }
    reached.assign(row.jid);
    // Every predicate again, by core's rules: the pushdown only narrows.
    if (filter.jid_min && row.jid < *filter.jid_min) return true;
    if (filter.jid_max && row.jid > *filter.jid_max) return true;
    if (filter.jid_before && row.jid >= *filter.jid_before) return true;
    if (!filter.function_globs.empty() && (!row.fun || !AnyMatch(filter.function_globs, *row.fun))) return true;
    for (const std::string& f : filter.exclude_functions) {
      if (row.fun && *row.fun == f) return true;
    }
    std::optional<Value> load;
    if (!filter.target_globs.empty() || filter.user) {
      load = ParseJson(row.load);
      if (!filter.target_globs.empty() && !TargetMatches(filter.target_globs, *load)) return true;
      if (filter.user) {
        const std::string* user = load->FindString("user");
        if (user == nullptr || *user != *filter.user) return true;
      }
    }
    std::optional<Value> metadata;
    if (filter.metadata) {
      if (!row.metadata) return true;
      metadata = ParseJson(*row.metadata);
      if (!MetadataMatches(*filter.metadata, *metadata)) return true;
    }
    JobRecord r;
    r.jid = row.jid;
    if (filter.json_text) {
      r.load_json = row.load;
      if (row.metadata) r.metadata_json = std::string(*row.metadata);
    } else {
      r.load = load ? std::move(*load) : ParseJson(row.load);
      if (metadata) {
        r.metadata = std::move(*metadata);
      } else if (row.metadata) {
        r.metadata = ParseJson(*row.metadata);
      }
    }
    if (row.endtime) r.endtime = std::string(*row.endtime);
    if (filter.with_counts) r.counts = row.counts;
    if (filter.limit) {
      newest.push_back(std::move(r));
      return newest.size() < *filter.limit;
    }
    try {
      fn(std::move(r));
      return true;
    } catch (...) {
      caller_failure = std::current_exception();
      return false;
    }
  });
  if (caller_failure) std::rethrow_exception(caller_failure);
  // Newest first from the index, handed out oldest first.
  for (auto it = newest.rbegin(); it != newest.rend(); ++it) fn(std::move(*it));
  if (!page.complete && !reached.empty()) page.reached = std::move(reached);
  return page;
}

}  // namespace brine::store::detail

namespace brine::store {

JobListingSql JobListingQuery(const std::string& database, const JobFilter& filter) {
  return detail::BuildJobRowsSql(detail::PushdownOf(filter), IsServerDatabaseUri(database)
                                                                 ? detail::kPostgresFailedReturn
                                                                 : detail::kSqliteFailedReturn);
}

}  // namespace brine::store
