// Presence from the store (presence.h). The queries run through the SQL
// engine of sql.h: read-only as each database enforces it, a connection per
// query, and no snapshot kept past its statement, so brine-master's commits
// and checkpoints are never held up. Each dialect's text is chosen here, the
// only place that knows which database it is.
#include "brine/store/presence.h"

#include "brine/core/database.h"

#include <limits>
#include <memory>
#include <set>

#include "brine/core/json.h"
#include "brine/store/sql.h"
#include "minion_activity.h"
#include "postgres_connection.h"

namespace brine::store {
namespace {

// The SQL of one dialect beyond the signs of life (minion_activity.h).
// Parameter: :after (the id of the present event the changes follow).
struct Dialect {
  // The newest salt/presence/present: its id, arrival (µs) and data.
  const char* present;
  // The salt/presence/change events after it, oldest first.
  const char* changes;
};

constexpr Dialect kSqlite = {
    .present = "SELECT id, id, data FROM event WHERE tag = 'salt/presence/present' ORDER BY id DESC LIMIT 1",
    .changes = "SELECT data FROM event WHERE tag = 'salt/presence/change' AND id > :after ORDER BY id",
};

// event_tag is partial (every stored tag since 0007; events without a job
// before it) and text_pattern_ops on PostgreSQL: each query keeps
// `job_id IS NULL` and spells a prefix as LIKE.
constexpr Dialect kPostgres = {
    .present = "SELECT id, (extract(epoch FROM received) * 1000000)::bigint, data FROM event"
               " WHERE tag = 'salt/presence/present' AND job_id IS NULL ORDER BY id DESC LIMIT 1",
    .changes = "SELECT data FROM event WHERE tag = 'salt/presence/change' AND job_id IS NULL AND id > :after"
               " ORDER BY id",
};

class Reader {
 public:
  Reader(const std::string& database, const PresenceOptions& options)
      : engine_(OpenSqlEngine(database)),
        dialect_(IsServerDatabaseUri(database) ? kPostgres : kSqlite),
        deadline_(std::chrono::steady_clock::now() + options.timeout) {}

  // The rows of `sql` (every one: each query is bounded by the fleet or the
  // window, not by a row limit that would cut the answer short).
  std::vector<std::vector<Value>> Rows(const char* sql, const ValueMap& params = {}) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw SqlTimeoutError("presence: the read ran out of its time budget");
    std::vector<std::vector<Value>> rows;
    engine_->Run(sql, params,
                 {.timeout = left, .row_limit = std::numeric_limits<std::int64_t>::max()},
                 [&](SqlResult&& r) { rows = std::move(r.rows); });
    return rows;
  }

  const Dialect& dialect() const { return dialect_; }

 private:
  std::unique_ptr<SqlEngine> engine_;
  const Dialect& dialect_;
  std::chrono::steady_clock::time_point deadline_;
};

std::int64_t IntOf(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_float()) return static_cast<std::int64_t>(v.as_float());
  if (v.is_string()) return std::stoll(v.as_string());
  return 0;
}

// Adds the strings of `data[key]` (a list) to `into` (or takes them out).
void Names(const Value& data, std::string_view key, std::set<std::string>& into, bool remove = false) {
  const Value* list = data.Find(key);
  if (list == nullptr || !list->is_list()) return;
  for (const Value& v : list->as_list()) {
    if (!v.is_string()) continue;
    if (remove) {
      into.erase(v.as_string());
    } else {
      into.insert(v.as_string());
    }
  }
}

Value DataOf(const Value& text) {
  if (!text.is_string()) return Value();
  try {
    return ParseJson(text.as_string());
  } catch (const std::exception&) {
    return Value();  // a presence event whose data is not JSON names nobody
  }
}

}  // namespace

std::vector<std::string> PresenceQueries(const std::string& database) {
  const Dialect& d = IsServerDatabaseUri(database) ? kPostgres : kSqlite;
  const detail::ActivityQueries& a = detail::ActivityQueriesOf(database);
  return {a.returns, a.auth, a.starts, d.present, d.changes};
}

Presence ReadPresence(const std::string& database, Micros now, const PresenceOptions& options) {
  Reader db(database, options);
  const std::int64_t cut = ToUnixMicros(now) - std::chrono::duration_cast<std::chrono::microseconds>(options.window).count();

  // Every minion the store knows, and the newest sign of life of each.
  std::set<std::string> known;
  std::set<std::string> alive;
  for (const auto& [minion, newest] : detail::ReadMinionActivity(
           database, cut, [&](const char* sql, const ValueMap& params) { return db.Rows(sql, params); })) {
    known.insert(minion);
    if (newest && *newest >= cut) alive.insert(minion);
  }

  Presence p;
  std::set<std::string> up;
  if (options.prefer == PresenceOptions::Source::kPresenceEvents) {
    const auto present = db.Rows(db.dialect().present);
    if (present.empty()) {
      p.explanation = "no salt/presence/present event is archived; ";
    } else if (IntOf(present[0][1]) < cut) {
      p.explanation = "the newest salt/presence/present arrived at " + FormatStamp(FromUnixMicros(IntOf(present[0][1]))) +
                      ", before the window; ";
    } else {
      p.source = Presence::Source::kPresenceEvents;
      Names(DataOf(present[0][2]), "present", up);
      const auto changes = db.Rows(db.dialect().changes, {{"after", present[0][0]}});
      for (const auto& row : changes) {
        const Value data = DataOf(row[0]);
        Names(data, "new", up);
        Names(data, "lost", up, true);
        Names(data, "lost", known);
      }
      p.explanation = "the newest salt/presence/present arrived at " +
                      FormatStamp(FromUnixMicros(IntOf(present[0][1]))) + ", with " + std::to_string(changes.size()) +
                      " salt/presence/change event(s) after it";
    }
  }
  if (p.source == Presence::Source::kActivity) {
    up = std::move(alive);
    p.explanation += "minions with a return, salt/auth or start event since " + FormatStamp(FromUnixMicros(cut));
  }
  known.insert(up.begin(), up.end());
  p.up.assign(up.begin(), up.end());
  for (const std::string& m : known) {
    if (up.count(m) == 0) p.down.push_back(m);
  }
  return p;
}

}  // namespace brine::store
