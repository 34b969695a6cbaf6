// PostgresBackend (postgres_backend.h): opening a connection (the session's
// settings, the schema check or the migrations under an advisory lock, the
// day partitions, this master's row), and transactions. BEGIN waits for the
// batch's first statement (postgres_pipeline.cpp); Commit sends what waits
// with the COMMIT; Rollback never throws and forgets every waiting write and
// cached row.
#include "postgres_backend.h"

#include "job_cache.h"
#include "migrations.h"

namespace brine::store::detail {

PostgresBackend::PostgresBackend(const std::string& uri, const OpenOptions& options)
    : clock_(options.clock != nullptr ? options.clock : &system_clock_) {
  try {
    db_ = std::make_unique<PgConnection>(uri);
  } catch (...) {
    RethrowPgAsStoreError("opening the store", Op::kRead);
  }
  Guard("opening the store", options.access == OpenOptions::Access::kReadOnly ? Op::kRead : Op::kWrite, [&] {
    // The session's settings in one round trip (a simple query runs
    // several statements), and for a reader the schema check with them:
    // each round trip is a wake-up of the server process, and brine-run
    // opens a new connection for every call (round 4 folded five into one).
    std::string session = "SET statement_timeout = 0; SET lock_timeout = " + Int(options.busy_timeout.count());
    if (options.sync == OpenOptions::Sync::kNormal) {
      // Acknowledged still means committed; only a server crash may lose
      // the last commits (as SQLite's NORMAL loses them on a power cut).
      session += "; SET synchronous_commit = on";
    }
    if (options.access == OpenOptions::Access::kReadOnly) {
      const int version = ReadOnlySchemaVersion(*db_, session + "; SET default_transaction_read_only = on");
      const int latest = static_cast<int>(EmbeddedPostgresMigrations().size());
      if (version > latest) throw TooNewError(version, latest);
      if (version == 0) throw FatalError(db_->Where() + " is not a brine store (schema version 0)");
      return 0;
    }
    // A writer's statements are prepared once and every value in them is
    // a parameter (Plan::kReuse): a generic plan fits them all. Left to
    // choose, the plan cache kept planning the job read afresh for each
    // call, since a plan for one day's partition of ret looks cheaper than
    // one for all of them: 200,000 returns through one writer took 15-19 s
    // against 12-15 s before 0003, and take 13-14 s with generic plans.
    Db().Exec(session + "; SET plan_cache_mode = force_generic_plan");
    ApplyPostgresMigrations(*db_);
    EnsurePartitions();
    // The return ids' sequence is the identity of ret_default, the table
    // that was ret before 0003 made ret partitioned.
    PgResult r = Db().Exec(
        "WITH i AS (INSERT INTO master (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id)"
        " SELECT id, quote_literal(pg_get_serial_sequence('ret_default', 'id'))"
        " FROM (SELECT id FROM i UNION ALL SELECT id FROM master WHERE name = $1) AS m",
        {P(options.master_id)});
    master_row_ = r.integer(0, 0);
    // The minions' rollups (postgres 0011) add to this writer's own rows,
    // so two masters never wait on each other's.
    Db().Exec("SET brine.writer = " + Int(master_row_));
    // The ids' statement names the sequence as a constant: looked up per
    // id (pg_get_serial_sequence in the statement), the name had cost
    // 5-12 ms per 1000 ids against 1-4 ms.
    draw_return_ids_ = "SELECT nextval(" + std::string(r.text(0, 1)) + "::regclass) FROM generate_series(1, " +
                       Int(kReturnIdsPerDraw) + ") ORDER BY 1 DESC";
    return 0;
  });
}

PostgresBackend::~PostgresBackend() { Rollback(); }

void PostgresBackend::Commit() {
  read_jobs_.clear();
  if (begin_pending_ && !Waiting()) {
    begin_pending_ = false;  // nothing was written
    return;
  }
  Send(PgStatement{"COMMIT", {}});
}

void PostgresBackend::Rollback() noexcept {
  begin_pending_ = false;
  pending_events_.clear();
  pending_returns_.clear();
  pending_expected_.clear();
  pending_loads_.clear();
  waiting_load_jobs_.clear();
  waiting_load_jids_.clear();
  waiting_load_unread_ = false;
  deferred_.clear();
  read_jobs_.clear();
  minions_.clear();
  try {
    if (db_ && db_->in_transaction()) db_->Exec("ROLLBACK");
  } catch (...) {
  }
}

int PostgresBackend::SchemaVersion() {
  return Guard("schema_version", Op::kRead, [&] { return SchemaVersionOf(*db_); });
}


int SchemaVersionOf(PgConnection& db) {
  PgResult r = db.Exec("SELECT to_regclass('brine_schema') IS NOT NULL");
  if (r.text(0, 0) != "t") return 0;
  PgResult v = db.Exec("SELECT version FROM brine_schema");
  return v.rows() == 0 ? 0 : static_cast<int>(v.integer(0, 0));
}

int ReadOnlySchemaVersion(PgConnection& db, const std::string& session) {
  try {
    PgResult v = db.Exec(session + "; SELECT version FROM brine_schema");
    return v.rows() == 0 ? 0 : static_cast<int>(v.integer(0, 0));
  } catch (const PgError& e) {
    // undefined_table: no brine schema (and the settings rolled back with it,
    // which does not matter: the caller gives up).
    if (e.sqlstate() == "42P01") return 0;
    throw;
  }
}

void ApplyPostgresMigrations(PgConnection& db) {
  const auto& migrations = EmbeddedPostgresMigrations();
  const int latest = static_cast<int>(migrations.size());
  db.Exec("BEGIN");
  try {
    db.Exec("SELECT pg_advisory_xact_lock(" + Int(kMigrationLock) + ")");
    db.Exec("CREATE TABLE IF NOT EXISTS brine_schema (version integer NOT NULL)");
    int version = SchemaVersionOf(db);
    if (version > latest) throw TooNewError(version, latest);
    if (version == 0) {
      PgResult t = db.Exec(
          "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'brine_schema'");
      if (t.integer(0, 0) > 0) {
        throw FatalError("the database has tables but no brine schema version: not a brine store");
      }
      db.Exec("INSERT INTO brine_schema VALUES (0)");
    }
    for (const Migration& m : migrations) {
      if (m.version <= version) continue;
      db.Exec(m.sql);
      version = m.version;
    }
    db.Exec("UPDATE brine_schema SET version = " + Int(version));
    db.Exec("COMMIT");
  } catch (...) {
    try {
      db.Exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

std::unique_ptr<Backend> OpenPostgresBackend(const std::string& uri, const OpenOptions& options) {
  return std::make_unique<PostgresBackend>(uri, options);
}

int LatestPostgresSchemaVersion() { return static_cast<int>(EmbeddedPostgresMigrations().size()); }

}  // namespace brine::store::detail
