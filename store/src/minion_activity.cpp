// MinionActivity (minion_activity.h): each minion's newest sign of life.
#include "minion_activity.h"

#include "sql_batch.h"

#include <algorithm>

#include "brine/core/database.h"

namespace brine::store::detail {
namespace {

constexpr ActivityQueries kSqlite = {
    .returns = "SELECT m.name, (SELECT r.recv_us FROM ret AS r WHERE r.minion_id = m.id"
               " ORDER BY r.job_id DESC LIMIT 1) FROM minion AS m",
    .auth = "SELECT json_extract(data, '$.id'), max(id) FROM event WHERE tag = 'salt/auth' AND id >= :cut"
            " AND json_type(data, '$.id') = 'text'"
            " AND coalesce(json_extract(data, '$.act'), 'accept') = 'accept' GROUP BY 1",
    .starts = "SELECT substr(tag, 13, length(tag) - 18), max(id) FROM event"
              " WHERE tag GLOB 'salt/minion/?*/start' GROUP BY tag",
};

// event_tag is partial (job_id IS NULL) and text_pattern_ops on PostgreSQL:
// each query repeats the predicate and spells a prefix as LIKE.
constexpr ActivityQueries kPostgres = {
    .returns = "SELECT m.name, (SELECT (extract(epoch FROM r.recv) * 1000000)::bigint FROM ret AS r"
               " WHERE r.minion_id = m.id ORDER BY r.job_id DESC LIMIT 1) FROM minion AS m",
    .auth = "SELECT d ->> 'id', (extract(epoch FROM max(received)) * 1000000)::bigint"
            " FROM (SELECT brine_jsonb(data) AS d, received FROM event"
            " WHERE tag = 'salt/auth' AND job_id IS NULL AND received >= to_timestamp(:cut / 1000000.0)) AS a"
            " WHERE jsonb_typeof(d -> 'id') = 'string' AND coalesce(d ->> 'act', 'accept') = 'accept'"
            " GROUP BY 1",
    .starts = "SELECT substr(tag, 13, length(tag) - 18), (extract(epoch FROM max(received)) * 1000000)::bigint"
              " FROM event WHERE tag LIKE 'salt/minion/%' AND tag LIKE '%/start' AND length(tag) > 18"
              " AND job_id IS NULL GROUP BY tag",
};

constexpr ActivityOfQueries kSqliteOf = {
    .returns = "SELECT (SELECT r.recv_us FROM ret AS r WHERE r.minion_id = m.id ORDER BY r.job_id DESC LIMIT 1)"
               " FROM minion AS m WHERE m.name = :minion",
    .auth = "SELECT max(id) FROM event WHERE tag = 'salt/auth' AND job_id IS NULL"
            " AND json_extract(data, '$.id') = :minion AND id >= :cut"
            " AND coalesce(json_extract(data, '$.act'), 'accept') = 'accept'",
    .start = "SELECT max(id) FROM event WHERE tag = 'salt/minion/' || :minion || '/start' AND job_id IS NULL",
};

constexpr ActivityOfQueries kPostgresOf = {
    .returns = "SELECT (SELECT (extract(epoch FROM r.recv) * 1000000)::bigint FROM ret AS r"
               " WHERE r.minion_id = m.id ORDER BY r.job_id DESC LIMIT 1) FROM minion AS m WHERE m.name = :minion",
    .auth = "SELECT (extract(epoch FROM max(received)) * 1000000)::bigint FROM event"
            " WHERE tag = 'salt/auth' AND job_id IS NULL AND brine_jsonb(data) ->> 'id' = :minion"
            " AND received >= to_timestamp(:cut / 1000000.0)"
            " AND coalesce(brine_jsonb(data) ->> 'act', 'accept') = 'accept'",
    .start = "SELECT (extract(epoch FROM max(received)) * 1000000)::bigint FROM event"
             " WHERE tag = 'salt/minion/' || :minion || '/start' AND job_id IS NULL",
};

std::int64_t IntOf(const Value& v) {
  if (v.is_int()) return v.kind() == Value::Kind::kInt ? v.as_int() : static_cast<std::int64_t>(v.as_uint());
  if (v.is_float()) return static_cast<std::int64_t>(v.as_float());
  if (v.is_string()) return std::stoll(v.as_string());
  return 0;
}

}  // namespace

const ActivityQueries& ActivityQueriesOf(const std::string& database) {
  return IsServerDatabaseUri(database) ? kPostgres : kSqlite;
}

const ActivityOfQueries& ActivityOfQueriesOf(const std::string& database) {
  return IsServerDatabaseUri(database) ? kPostgresOf : kSqliteOf;
}

std::map<std::string, std::int64_t> ReadActivityOf(const std::string& database, const SqlEngine& engine,
                                                   const std::vector<std::string>& minions, std::int64_t cut_us,
                                                   std::chrono::milliseconds timeout) {
  const ActivityOfQueries& q = ActivityOfQueriesOf(database);
  // One statement a minion: its three arrivals side by side.
  const std::string sql = std::string("SELECT (") + q.returns + "), (" + q.start + "), (" + q.auth + ")";
  std::vector<ValueMap> sets;
  for (const std::string& minion : minions)
    sets.push_back({{"minion", Value(minion)}, {"cut", Value(static_cast<long long>(cut_us))}});
  std::map<std::string, std::int64_t> newest;
  const auto results = RunEach(engine, sql, sets, timeout);
  for (std::size_t i = 0; i < results.size() && i < minions.size(); ++i) {
    for (const auto& row : results[i]) {
      for (const Value& v : row) {
        if (v.is_null()) continue;
        const auto [at, fresh] = newest.emplace(minions[i], IntOf(v));
        if (!fresh) at->second = std::max(at->second, IntOf(v));
      }
    }
  }
  return newest;
}

std::map<std::string, std::optional<std::int64_t>> ReadMinionActivity(const std::string& database,
                                                                      std::int64_t cut_us,
                                                                      const ActivityRows& rows) {
  const ActivityQueries& q = ActivityQueriesOf(database);
  std::map<std::string, std::optional<std::int64_t>> newest;
  auto add = [&](const std::vector<std::vector<Value>>& found) {
    for (const auto& row : found) {
      if (!row[0].is_string()) continue;
      std::optional<std::int64_t>& at = newest[row[0].as_string()];
      if (row[1].is_null()) continue;
      at = std::max(at.value_or(IntOf(row[1])), IntOf(row[1]));
    }
  };
  add(rows(q.returns, {}));
  add(rows(q.starts, {}));
  add(rows(q.auth, {{"cut", Value(static_cast<long long>(cut_us))}}));
  return newest;
}

}  // namespace brine::store::detail
