#include "connection.h"

#include <cctype>

#include <sqlite3.h>

#include <string>

#include "migrations.h"

namespace brine::store::detail {

void RethrowAsStoreError(std::string_view context, Op op) {
  const std::string prefix = std::string(context) + ": ";
  try {
    throw;
  } catch (const StoreError&) {
    throw;
  } catch (const SQLite::Exception& e) {
    const int code = e.getErrorCode() & 0xFF;
    const std::string msg = prefix + e.what();
    switch (code) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED: throw BusyError(msg);
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB: throw FatalError(msg);
      case SQLITE_FULL:
      case SQLITE_IOERR:
      case SQLITE_CANTOPEN:
      case SQLITE_READONLY:
      case SQLITE_NOMEM:
        if (op == Op::kWrite) throw WriteFailedError(msg);
        throw StoreError(msg);
      default: throw StoreError(msg);
    }
  } catch (const std::exception& e) {
    throw StoreError(prefix + e.what());
  }
}

std::string FileUri(const std::filesystem::path& path) {
  std::string uri = "file:";
  for (const unsigned char c : std::filesystem::absolute(path).string()) {
    if (std::isalnum(c) != 0 || c == '/' || c == '.' || c == '-' || c == '_') {
      uri += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xF];
    }
  }
  return uri;
}

namespace {

// `path` as a read-only immutable URI connection, or nullptr when that fails too.
std::unique_ptr<SQLite::Database> OpenImmutable(const std::filesystem::path& path, const OpenOptions& options) {
  const std::string uri = FileUri(path) + "?immutable=1";
  try {
    auto db = std::make_unique<SQLite::Database>(
        uri, SQLite::OPEN_READONLY | SQLite::OPEN_URI | SQLite::OPEN_NOMUTEX, static_cast<int>(options.busy_timeout.count()));
    db->exec("SELECT count(*) FROM sqlite_schema");
    return db;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<SQLite::Database> OpenConnection(const std::filesystem::path& path,
                                                 const OpenOptions& options) {
  const bool read_only = options.access == OpenOptions::Access::kReadOnly;
  if (read_only && !std::filesystem::exists(path)) {
    throw StoreError("no brine store at " + path.string());
  }
  // SQLite's allocation statistics take a process-wide mutex on every malloc
  // and free; nothing of brine reads them. This must precede SQLite's
  // initialisation, so it is set before the first connection of the process
  // (and is a harmless no-op if something else initialised SQLite first).
  static const bool kNoMemStatus = [] { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK; }();
  (void)kNoMemStatus;
  std::unique_ptr<SQLite::Database> db;
  const std::string where = "opening " + path.string();
  try {
    // NOMUTEX: a Store is one connection used by one thread (store.h), so
    // SQLite's per-call connection mutex is pure overhead on the write path.
    const int flags = (read_only ? SQLite::OPEN_READONLY : (SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE)) |
                      SQLite::OPEN_NOMUTEX;
    db = std::make_unique<SQLite::Database>(path.string(), flags,
                                            static_cast<int>(options.busy_timeout.count()));
    // A file that is not a database only shows it on the first read.
    db->exec("SELECT count(*) FROM sqlite_schema");
  } catch (...) {
    // A WAL store in a folder this user cannot write (an operator's backup,
    // a read-only snapshot) cannot get its -shm file: read it as immutable,
    // which needs no lock and no -shm (what a -wal beside it holds that was
    // never checkpointed is not seen).
    db.reset();
    if (read_only) db = OpenImmutable(path, options);
    if (!db) RethrowAsStoreError(where, Op::kRead);
  }
  try {
    if (!read_only) {
      ApplyMigrations(*db);
      db->exec("PRAGMA journal_mode = WAL");
      db->exec(std::string("PRAGMA synchronous = ") +
               (options.sync == OpenOptions::Sync::kFull ? "FULL" : "NORMAL"));
      db->exec("PRAGMA journal_size_limit = " + std::to_string(options.sqlite.journal_size_limit_bytes));
      // Zero freed cells in place but skip the extra I/O of overwriting freelist pages.
      db->exec("PRAGMA secure_delete = FAST");
      if (options.sqlite.max_page_count > 0) {
        db->exec("PRAGMA max_page_count = " + std::to_string(options.sqlite.max_page_count));
      }
    } else {
      const int version = ReadSchemaVersion(*db);
      if (version > static_cast<int>(EmbeddedMigrations().size())) {
        throw TooNewError(version, static_cast<int>(EmbeddedMigrations().size()));
      }
      if (version == 0) throw FatalError(path.string() + " is not a brine store (schema version 0)");
      db->exec("PRAGMA query_only = ON");
    }
    db->exec("PRAGMA cache_size = -" + std::to_string(options.sqlite.cache_kib));
    db->exec("PRAGMA temp_store = MEMORY");
    db->exec("PRAGMA foreign_keys = OFF");
  } catch (...) {
    RethrowAsStoreError(where, read_only ? Op::kRead : Op::kWrite);
  }
  return db;
}

}  // namespace brine::store::detail
