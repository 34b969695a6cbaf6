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

bool IsServerDatabase(const std::filesystem::path& database) { return detail::IsPostgresUri(database.native()); }

std::unique_ptr<Store> OpenStore(const std::filesystem::path& path, const OpenOptions& options) {
  if (detail::IsPostgresUri(path.native())) {
    return detail::MakeJobCache(detail::OpenPostgresBackend(path.native(), options), options);
  }
  return detail::MakeJobCache(detail::OpenSqliteBackend(path, options), options);
}

}  // namespace brine::store
