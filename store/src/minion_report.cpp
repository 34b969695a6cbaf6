// Minion reports from the store (minion_report.h), through sql.h's engine,
// one text per dialect.
#include "brine/store/minion_report.h"

#include <algorithm>
#include <map>

#include "brine/core/database.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/sql.h"
#include "backend.h"
#include "minion_activity.h"
#include "sql_batch.h"

namespace brine::store {
namespace {

struct Dialect {
  // The rollups of migration 0016 / postgres 0011 (minion_hour), summed over
  // the window's hours: names in order from minion's name index, each one a
  // range of minion_hour's primary key; minions whose sums are all zero (no
  // job of the window expected them) are left out.
  // :hour_min (inclusive), :hour_end (exclusive), :after, :limit.
  // Columns: name, targeted, returned, failed.
  const char* records;
  // The same for one minion. :hour_min, :hour_end, :minion.
  const char* one_record;
  // :minion, :look_back. Columns: jid, fun, load, arrival (µs).
  const char* state_jobs;
  // :minion, :jid. Column: full_ret.
  const char* one_return;
};

// The same text on both: a return by its jid and minion, through the jid and
// name indexes and ret's (job_id, minion_id) index.
constexpr const char* kOneReturn =
    "SELECT r.full_ret FROM ret AS r WHERE r.job_id = (SELECT id FROM job WHERE jid = :jid)"
    " AND r.minion_id = (SELECT id FROM minion WHERE name = :minion)";

constexpr Dialect kSqlite = {
    .records =
        "SELECT m.name, sum(h.targeted), sum(h.returned), sum(h.failed)"
        " FROM minion AS m JOIN minion_hour AS h"
        " ON h.minion_id = m.id AND h.hour >= :hour_min AND h.hour < :hour_end"
        " WHERE m.name > :after"
        " GROUP BY m.name HAVING sum(h.targeted) > 0 ORDER BY m.name LIMIT :limit",
    .one_record =
        "SELECT m.name, sum(h.targeted), sum(h.returned), sum(h.failed)"
        " FROM minion AS m JOIN minion_hour AS h"
        " ON h.minion_id = m.id AND h.hour >= :hour_min AND h.hour < :hour_end"
        " WHERE m.name = :minion GROUP BY m.name HAVING sum(h.targeted) > 0",
    .state_jobs =
        "SELECT j.jid, j.fun, j.load, r.recv_us FROM ret AS r JOIN job AS j ON j.id = r.job_id"
        " WHERE r.minion_id = (SELECT id FROM minion WHERE name = :minion)"
        " AND j.fun IN ('state.highstate', 'state.apply')"
        " ORDER BY r.job_id DESC LIMIT :look_back",
    .one_return = kOneReturn,
};

// Names compare as bytes (COLLATE "C"), as on SQLite, so paging agrees; the
// sums add the writers' rows (postgres 0011).
constexpr Dialect kPostgres = {
    .records =
        "SELECT m.name, sum(h.targeted)::bigint, sum(h.returned)::bigint, sum(h.failed)::bigint"
        " FROM minion AS m JOIN minion_hour AS h"
        " ON h.minion_id = m.id AND h.hour >= :hour_min AND h.hour < :hour_end"
        " WHERE m.name COLLATE \"C\" > :after"
        " GROUP BY m.name HAVING sum(h.targeted) > 0 ORDER BY m.name COLLATE \"C\" LIMIT :limit",
    .one_record =
        "SELECT m.name, sum(h.targeted)::bigint, sum(h.returned)::bigint, sum(h.failed)::bigint"
        " FROM minion AS m JOIN minion_hour AS h"
        " ON h.minion_id = m.id AND h.hour >= :hour_min AND h.hour < :hour_end"
        " WHERE m.name = :minion GROUP BY m.name HAVING sum(h.targeted) > 0",
    .state_jobs =
        "SELECT j.jid, j.fun, j.load, (extract(epoch FROM r.recv) * 1000000)::bigint"
        " FROM ret AS r JOIN job AS j ON j.id = r.job_id"
        " WHERE r.minion_id = (SELECT id FROM minion WHERE name = :minion)"
        " AND j.fun IN ('state.highstate', 'state.apply')"
        " ORDER BY r.job_id DESC LIMIT :look_back",
    .one_return = kOneReturn,
};

const Dialect& DialectOf(const std::string& database) {
  return IsServerDatabaseUri(database) ? kPostgres : kSqlite;
}

std::vector<std::vector<Value>> Rows(const SqlEngine& engine, const char* sql,
                                     const ValueMap& params, std::chrono::milliseconds timeout) {
  std::vector<std::vector<Value>> rows;
  engine.Run(sql, params, {.timeout = timeout, .row_limit = 100000},
             [&](SqlResult&& r) { rows = std::move(r.rows); });
  return rows;
}

std::int64_t IntOf(const Value& v) {
  if (v.is_int())
    return v.kind() == Value::Kind::kInt ? v.as_int() : static_cast<std::int64_t>(v.as_uint());
  if (v.is_float()) return static_cast<std::int64_t>(v.as_float());
  if (v.is_string()) return std::stoll(v.as_string());
  return 0;
}

std::optional<Micros> TimeOf(const Value& v) {
  if (v.is_null()) return std::nullopt;
  return FromUnixMicros(IntOf(v));
}

// state.apply without state names: every argument is a keyword argument
// (a map marked __kwarg__) or a key=value word.
bool NamesNoStates(const Value& load) {
  const Value* args = load.Find("arg");
  if (args == nullptr || args->is_null()) return true;
  if (!args->is_list()) return false;
  return std::all_of(args->as_list().begin(), args->as_list().end(), [](const Value& a) {
    if (a.is_map()) return a.Find("__kwarg__") != nullptr;
    return a.is_string() && a.as_string().find('=') != std::string::npos;
  });
}

double RunNum(const Value& state) {
  const Value* n = state.Find("__run_num__");
  if (n == nullptr) return 0;
  return n->is_float() ? n->as_float() : static_cast<double>(IntOf(*n));
}

void CountStates(const Value& full_ret, StateRun& run) {
  const Value* ret = full_ret.Find("return");
  if (ret == nullptr || !ret->is_map()) {
    run.not_states = true;
    return;
  }
  std::vector<std::pair<double, std::string>> failed;
  for (const auto& [key, state] : ret->as_map()) {
    if (!state.is_map()) continue;
    const Value* result = state.Find("result");
    const Value* changes = state.Find("changes");
    if (result != nullptr && result->is_bool() && !result->as_bool()) {
      ++run.failed;
      const std::string* id = state.FindString("__id__");
      failed.emplace_back(RunNum(state), id != nullptr ? *id : key);
      continue;
    }
    ++run.succeeded;
    if (changes != nullptr && changes->Truthy()) ++run.changed;
  }
  std::stable_sort(failed.begin(), failed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [n, id] : failed) run.failed_ids.push_back(std::move(id));
}

Micros HourOf(Micros t) { return date::floor<std::chrono::hours>(t); }

std::chrono::milliseconds Left(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()));
}

}  // namespace

MinionRecords ReadMinionRecords(const std::string& database, const MinionReportOptions& options) {
  const auto engine = OpenSqlEngine(database);
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  const Dialect& d = DialectOf(database);
  MinionRecords out;
  // Whole hours: the hour that holds `since` and the one that holds `until`
  // are counted whole (a jid's first ten characters are its hour).
  const std::string hour_min = detail::RollupHour(options.since);
  const std::string hour_end = options.until ? detail::RollupHour(*options.until) + "~" : "~";
  out.counted_since = HourOf(options.since);
  if (options.until) out.counted_until = HourOf(*options.until) + std::chrono::hours(1) - std::chrono::microseconds(1);
  const auto rows =
      options.only.empty()
          ? Rows(*engine, d.records,
                 {{"hour_min", Value(hour_min)},
                  {"hour_end", Value(hour_end)},
                  {"after", Value(options.after)},
                  {"limit", Value(options.limit)}},
                 Left(deadline))
          : Rows(*engine, d.one_record,
                 {{"hour_min", Value(hour_min)}, {"hour_end", Value(hour_end)}, {"minion", Value(options.only)}},
                 Left(deadline));
  for (const auto& row : rows) {
    MinionRecord r{.minion = row[0].as_string(),
                   .targeted = IntOf(row[1]),
                   .returned = IntOf(row[2]),
                   .failed = IntOf(row[3])};
    r.missing = r.targeted - r.returned;
    out.minions.push_back(std::move(r));
  }
  std::vector<std::string> names;
  for (const MinionRecord& r : out.minions) names.push_back(r.minion);
  if (names.empty() && !options.only.empty()) names.push_back(options.only);
  const std::map<std::string, std::int64_t> seen =
      detail::ReadActivityOf(database, *engine, names, ToUnixMicros(options.since), Left(deadline));
  for (MinionRecord& r : out.minions) {
    if (const auto at = seen.find(r.minion); at != seen.end()) r.last_seen = FromUnixMicros(at->second);
  }
  if (out.minions.empty() && !options.only.empty()) {
    if (const auto at = seen.find(options.only); at != seen.end())
      out.minions.push_back({.minion = options.only, .last_seen = FromUnixMicros(at->second)});
  }
  return out;
}

std::vector<std::optional<StateRun>> ReadLastHighstates(const std::string& database,
                                                        const std::vector<std::string>& minions,
                                                        std::chrono::milliseconds timeout,
                                                        int look_back) {
  if (timeout.count() <= 0 && !minions.empty())
    throw SqlTimeoutError("minion report: no time left for the last highstates");
  const auto engine = OpenSqlEngine(database);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const Dialect& d = DialectOf(database);
  std::vector<ValueMap> sets;
  for (const std::string& minion : minions) sets.push_back({{"minion", Value(minion)}, {"look_back", Value(look_back)}});
  // Each minion's newest state jobs, then the return of the one chosen:
  // two calls of the engine for the whole page (sql_batch.h).
  const auto jobs = detail::RunEach(*engine, d.state_jobs, sets, Left(deadline));
  std::vector<std::optional<StateRun>> out(minions.size());
  std::vector<ValueMap> chosen;
  std::vector<std::size_t> of;
  for (std::size_t i = 0; i < minions.size() && i < jobs.size(); ++i) {
    for (const auto& row : jobs[i]) {
      const std::string& fun = row[1].as_string();
      if (fun == "state.apply" && !(row[2].is_string() && NamesNoStates(ParseJson(row[2].as_string())))) continue;
      out[i] = StateRun{.jid = row[0].as_string(), .function = fun, .received = TimeOf(row[3])};
      chosen.push_back({{"minion", Value(minions[i])}, {"jid", Value(out[i]->jid)}});
      of.push_back(i);
      break;
    }
  }
  const auto returns = detail::RunEach(*engine, d.one_return, chosen, Left(deadline));
  for (std::size_t k = 0; k < returns.size() && k < of.size(); ++k) {
    if (!returns[k].empty() && returns[k][0][0].is_string())
      CountStates(ParseJson(returns[k][0][0].as_string()), *out[of[k]]);
  }
  return out;
}

std::vector<std::string> MinionReportQueries(const std::string& database) {
  const Dialect& d = DialectOf(database);
  const detail::ActivityOfQueries& a = detail::ActivityOfQueriesOf(database);
  return {d.records, d.one_record, d.state_jobs, d.one_return, a.returns, a.auth, a.start};
}

}  // namespace brine::store
