#include "brine/store/store.h"

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

}  // namespace brine::store
