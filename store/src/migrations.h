// Schema migrations: migrations/NNNN_name.sql, embedded at build time.
#pragma once

#include <vector>

namespace SQLite {
class Database;
}

namespace brine::store {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

// Every embedded migration, in version order (1, 2, ...). Generated.
const std::vector<Migration>& EmbeddedMigrations();

// Every embedded migrations/postgres/*.sql migration, in version order. Generated.
const std::vector<Migration>& EmbeddedPostgresMigrations();

// Brings `db` to the latest version: each pending migration runs in one
// BEGIN IMMEDIATE transaction that also sets PRAGMA user_version. Statements
// above a line `-- @transaction` in a migration run just before that
// transaction (pragmas such as auto_vacuum only work outside one); they must be
// harmless to repeat. Must run before the connection switches to WAL mode. A database
// already current is left alone. After migrating a store that had data, the
// planner's statistics are refreshed (a fresh store gets them from its
// writer's maintenance once it holds rows). Throws TooNewError when the database is newer
// than this binary, FatalError when the file is not a database.
void ApplyMigrations(SQLite::Database& db);

// Refreshes the planner's statistics: ANALYZE with PRAGMA analysis_limit, so
// each index is sampled, not read whole, and the cost stays a few milliseconds
// however big the store is. Needs the write lock (it writes sqlite_stat1).
void RefreshStatistics(SQLite::Database& db);

// PRAGMA user_version of `db`.
int ReadSchemaVersion(SQLite::Database& db);

}  // namespace brine::store
