#include "migrations.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <string>
#include <string_view>

#include "brine/store/errors.h"

namespace brine::store {
namespace {

constexpr std::string_view kTransactionMarker = "\n-- @transaction\n";

// Rows ANALYZE reads per index. Enough for sqlite_stat1's averages (rows per
// key prefix) to tell a unique jid from a job's returns; a full ANALYZE of a
// 10M-return store reads gigabytes.
constexpr int kAnalysisLimitRows = 2000;

}  // namespace

int ReadSchemaVersion(SQLite::Database& db) {
  SQLite::Statement q(db, "PRAGMA user_version");
  q.executeStep();
  return q.getColumn(0).getInt();
}

void RefreshStatistics(SQLite::Database& db) {
  db.exec("PRAGMA analysis_limit = " + std::to_string(kAnalysisLimitRows));
  // Not `event`: its indexes are all partial, so ANALYZE would count its rows
  // by reading the whole table (seconds on a big store, the writer waiting).
  // Its plans (event_tag, the rowid) need no statistics.
  db.exec("ANALYZE job; ANALYZE ret; ANALYZE minion; ANALYZE job_minion");
}

void ApplyMigrations(SQLite::Database& db) {
  const auto& migrations = EmbeddedMigrations();
  const int latest = static_cast<int>(migrations.size());
  int version = ReadSchemaVersion(db);
  const int found = version;
  if (version > latest) throw TooNewError(version, latest);
  if (version == 0) {
    SQLite::Statement tables(db, "SELECT count(*) FROM sqlite_schema");
    tables.executeStep();
    if (tables.getColumn(0).getInt() > 0) {
      throw FatalError("the file has tables but no brine schema version: not a brine store");
    }
  }
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    const std::string_view sql(m.sql);
    const auto marker = sql.find(kTransactionMarker);
    if (marker != std::string_view::npos) db.exec(std::string(sql.substr(0, marker)));
    const std::string body(marker == std::string_view::npos ? sql : sql.substr(marker));
    db.exec("BEGIN IMMEDIATE");
    try {
      // Another process may have migrated while we waited for the lock.
      const int current = ReadSchemaVersion(db);
      if (current > latest) throw TooNewError(current, latest);
      if (current < m.version) {
        db.exec(body);
        db.exec("PRAGMA user_version = " + std::to_string(m.version));
      }
      db.exec("COMMIT");
      version = m.version;
    } catch (...) {
      // SQLite may already have rolled back (e.g. on SQLITE_FULL); the first error is the one to report.
      try {
        db.exec("ROLLBACK");
      } catch (const SQLite::Exception&) {
      }
      throw;
    }
  }
  // New indexes (0004) have no statistics: without them the planner may
  // prefer a scan of ret to a jid range. Outside the migration's transaction,
  // as ANALYZE takes its own.
  if (found > 0 && version > found) RefreshStatistics(db);
}

}  // namespace brine::store
