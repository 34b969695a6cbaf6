// Two facts about a store that config/ and store/ both need, said once here
// because neither module may depend on the other (ARCHITECTURE.md's edges):
// how a `brine.database` value names a server, and the durability a writer
// asks for. What a store is beyond that (its files, its lock, its size) is
// store::Describe's (brine/store/store.h).
#pragma once

#include <string_view>

namespace brine {

// True when `database` names a database on a server (a postgresql:// or
// postgres:// URI, libpq's syntax) rather than a SQLite file. The one copy of
// that rule: config/ reads it to leave a URI unjoined to root_dir, store/ to
// pick its backend.
[[nodiscard]] inline bool IsServerDatabaseUri(std::string_view database) {
  return database.starts_with("postgresql://") || database.starts_with("postgres://");
}

// brine.sync as config/ reads it and store::OpenOptions::sync takes it, the
// same type on both sides, so nothing maps one onto the other.
//   kNormal  SQLite: a commit is durable once the WAL is checkpointed or the
//            OS flushes (synchronous=NORMAL): a power cut may lose the last
//            commits but never corrupts. PostgreSQL: synchronous_commit=on
//            for the session;
//   kFull    SQLite fsyncs each commit (synchronous=FULL); PostgreSQL keeps
//            the server's synchronous_commit.
enum class SyncMode { kNormal, kFull };

}  // namespace brine
