#include "brine/store/store.h"

#include "backend.h"
#include "job_cache.h"
#include "postgres_connection.h"

namespace brine::store {

Batch::Batch(Batch&& other) noexcept : store_(other.store_) { other.store_ = nullptr; }

Batch::~Batch() {
  if (store_ != nullptr) store_->RollbackBatchImpl();
}

void Batch::Commit() {
  Store* s = store_;
  store_ = nullptr;  // closed whatever happens: a failed commit has rolled back
  if (s != nullptr) s->CommitBatchImpl();
}

Batch Store::BeginBatch() {
  BeginBatchImpl();
  return Batch(this);
}

bool IsServerDatabase(const std::filesystem::path& database) { return IsServerDatabaseUri(database.native()); }

StoreLocation Describe(const std::filesystem::path& database) {
  StoreLocation where;
  if (IsServerDatabase(database)) {
    where.kind = StoreLocation::Kind::kServer;
    return where;
  }
  where.folder = database.parent_path();
  where.lock_file = std::filesystem::path(database.string() + ".lock");
  where.files = {database, database.string() + "-wal", database.string() + "-shm"};
  const auto size = [](const std::filesystem::path& p) -> std::int64_t {
    std::error_code ec;
    const auto n = std::filesystem::file_size(p, ec);
    return ec ? 0 : static_cast<std::int64_t>(n);
  };
  where.bytes = size(where.files[0]) + size(where.files[1]);
  return where;
}

std::unique_ptr<Store> OpenStore(const std::filesystem::path& path, const OpenOptions& options) {
  if (IsServerDatabase(path)) {
    return detail::MakeJobCache(detail::OpenPostgresBackend(path.native(), options), options);
  }
  return detail::MakeJobCache(detail::OpenSqliteBackend(path, options), options);
}

}  // namespace brine::store
