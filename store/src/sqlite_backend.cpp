// SqliteBackend (sqlite_backend.h): opening a connection, BEGIN IMMEDIATE
// transactions, and the MaintenanceBackend a SQLite file has (incremental
// vacuum, checkpoints, ANALYZE, the online backup, integrity_check).
// Contract: Begin takes the write lock up front and re-reads the event and
// quarantine high-water marks under it; Commit flushes the buffered events
// first; Rollback never throws and forgets every cached row.
#include "sqlite_backend.h"

#include <SQLiteCpp/Backup.h>
#include <exception>
#include <optional>

#include "brine/core/atomic_file.h"
#include "job_cache.h"
#include "migrations.h"

namespace brine::store::detail {

SqliteBackend::SqliteBackend(const std::filesystem::path& path, const OpenOptions& options)
    : db_(detail::OpenConnection(path, options)) {
  RegisterSqlFunctions(*db_);
  if (options.access != OpenOptions::Access::kReadOnly) {
    Guard("opening the store", Op::kWrite, [&] {
      LoadHighWaterMarks();
      // Bound, never spliced into the text: a NUL in an id would end the
      // statement there (issue 25, item 15).
      auto& add = Stmt("INSERT INTO master(name) VALUES (?) ON CONFLICT(name) DO NOTHING");
      add.bind(1, options.master_id);
      add.exec();
      add.reset();
      auto& q = Stmt("SELECT id FROM master WHERE name = ?");
      q.bind(1, options.master_id);
      q.executeStep();
      master_row_ = q.getColumn(0).getInt64();
      // A statement left on its row keeps a read snapshot open, and a
      // later BEGIN IMMEDIATE on a stale snapshot fails at once.
      q.reset();
    });
  }
}

SqliteBackend::~SqliteBackend() { Rollback(); }

// No cached statement may carry a read snapshot into the write transaction:
// SQLite cannot upgrade a stale one (SQLITE_BUSY_SNAPSHOT, returned without
// waiting on the busy handler, and again on every retry).
void SqliteBackend::Begin() {
  ResetStatements();
  db_->exec("BEGIN IMMEDIATE");
  // An event's id is its arrival time kept above the last id, so the last
  // id is read again under the write lock: another connection (brine-master
  // beside an import, import_export's store for another master id) may have
  // added events since this one looked, and a stale mark gave two events
  // one id ("UNIQUE constraint failed: event.id").
  try {
    LoadHighWaterMarks();
    // Another connection's commit may have changed a job known here.
    const std::int64_t version = PragmaInt("PRAGMA data_version");
    if (version != data_version_) ForgetKnownJobs();
    data_version_ = version;
  } catch (...) {
    db_->exec("ROLLBACK");
    throw;
  }
}

void SqliteBackend::Commit() {
  CountAtCommit();
  FlushEvents();
  ResetStatements();
  db_->exec("COMMIT");
}

void SqliteBackend::Rollback() noexcept {
  pending_events_.clear();
  ForgetKnownJobs();
  ResetStatements();
  try {
    if (sqlite3_get_autocommit(db_->getHandle()) == 0) db_->exec("ROLLBACK");
  } catch (...) {
  }
  minions_.clear();
  try {
    LoadHighWaterMarks();
  } catch (...) {
  }
}

MaintenanceBackend* SqliteBackend::Maintenance() { return this; }

StoreMaintenance::SpaceInfo SqliteBackend::Space() {
  return Read("space", [&] {
    StoreMaintenance::SpaceInfo info;
    info.page_size = PragmaInt("PRAGMA page_size");
    info.page_count = PragmaInt("PRAGMA page_count");
    info.freelist_count = PragmaInt("PRAGMA freelist_count");
    return info;
  });
}

void SqliteBackend::IncrementalVacuum(std::int64_t pages) {
  Begin();
  {
    SQLite::Statement q(*db_, "PRAGMA incremental_vacuum(" + std::to_string(pages) + ")");
    while (q.executeStep()) {
    }
  }
  db_->exec("COMMIT");
}

void SqliteBackend::Checkpoint() {
  Guard("checkpoint", Op::kWrite, [&] {
    SQLite::Statement q(*db_, "PRAGMA wal_checkpoint(TRUNCATE)");
    while (q.executeStep()) {
    }
  });
}

void SqliteBackend::RefreshStatistics() {
  // ANALYZE writes sqlite_stat1: under the write lock, like a batch.
  Begin();
  store::RefreshStatistics(*db_);
  db_->exec("COMMIT");
}

void SqliteBackend::BackupTo(const std::filesystem::path& to) {
  // The copy holds every return, so it is private (0600) like the store,
  // and is made under a random name in a private 0700 folder beside `to`
  // (core/atomic_file.h), where SQLite also puts its -journal: another
  // account can plant no link there, and `to` itself must be a new name,
  // never a symlink, dangling or not (issue 25, item 9).
  std::optional<AtomicFile> file;
  try {
    file.emplace(to, AtomicFile::Options{.mode = 0600,
                                         .replace = AtomicFile::Replace::kNever,
                                         .staging = AtomicFile::Staging::kPrivateFolder});
  } catch (const FileError& e) {
    throw StoreError(std::string("backup: ") + e.what());
  }
  // SQLite's online backup API in one step: the source's read transaction
  // spans the whole copy, so it is the store as of one commit while the
  // writer goes on in WAL mode. (VACUUM INTO would compact too, but needs a
  // writable connection, and brine-run's is read-only.)
  (void)Read("backup", [&] {
    SQLite::Database dest(file->temp_path().string(), SQLite::OPEN_READWRITE);
    SQLite::Backup backup(dest, *db_);
    const int rc = backup.executeStep(-1);
    if (rc != SQLITE_DONE) throw SQLite::Exception("backup did not complete", rc);
    // One self-contained file: no -wal beside it to copy or lose.
    dest.exec("PRAGMA journal_mode = DELETE");
    return 0;
  });
  try {
    file->Commit();
  } catch (const FileError& e) {
    throw StoreError(std::string("backup: ") + e.what());
  }
}

std::string SqliteBackend::IntegrityCheck() {
  return Read("integrity_check", [&] {
    SQLite::Statement q(*db_, "PRAGMA integrity_check(10)");
    std::string out;
    while (q.executeStep()) out += (out.empty() ? "" : "; ") + q.getColumn(0).getString();
    return out;
  });
}

std::int64_t SqliteBackend::PragmaInt(const std::string& pragma) {
  SQLite::Statement q(*db_, pragma);
  q.executeStep();
  return q.getColumn(0).getInt64();
}

void SqliteBackend::LoadHighWaterMarks() {
  SQLite::Statement e(*db_, "SELECT coalesce(max(id), 0) FROM event");
  e.executeStep();
  last_event_id_ = e.getColumn(0).getInt64();
  SQLite::Statement q(*db_, "SELECT coalesce(max(id), 0) FROM quarantine");
  q.executeStep();
  last_quarantine_id_ = q.getColumn(0).getInt64();
}

}  // namespace brine::store::detail

namespace brine::store {

std::unique_ptr<detail::Backend> detail::OpenSqliteBackend(const std::filesystem::path& path,
                                                            const OpenOptions& options) {
  return std::make_unique<SqliteBackend>(path, options);
}

int LatestSchemaVersion() { return static_cast<int>(EmbeddedMigrations().size()); }

std::string SqliteVersion() { return sqlite3_libversion(); }

}  // namespace brine::store
