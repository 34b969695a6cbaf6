#include "brine/store/queues.h"

#include "brine/core/utf8.h"

namespace brine::store {

bool IsValidQueueName(std::string_view name) {
  if (name.empty() || name.size() > kMaxQueueNameBytes || !IsValidUtf8(name)) return false;
  while (!name.empty()) {
    const std::size_t n = Utf8SequenceLength(name);
    const char32_t cp = DecodeUtf8(name.substr(0, n));
    // '/' would split the tag salt/queue/<name>/process; controls (NUL, "\n\n"
    // included) would corrupt the tag's framing or a terminal.
    if (cp == U'/' || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return false;
    name.remove_prefix(n);
  }
  return true;
}

PopBatch::PopBatch(PopBatch&& other) noexcept : owner_(other.owner_), items_(std::move(other.items_)) {
  other.owner_ = nullptr;
}

PopBatch::~PopBatch() {
  if (owner_ != nullptr) owner_->RollbackPopImpl();
}

void PopBatch::Commit() {
  Queues* q = owner_;
  owner_ = nullptr;  // closed whatever happens: a failed commit has rolled back
  if (q != nullptr) q->CommitPopImpl();
}

std::vector<Value> Queues::Pop(const std::string& queue, std::int64_t quantity) {
  PopBatch batch = BeginPop(queue, quantity);
  batch.Commit();
  return std::move(batch.items_);
}

PopBatch Queues::BeginPop(const std::string& queue, std::int64_t quantity) {
  return PopBatch(this, BeginPopImpl(queue, quantity));
}

}  // namespace brine::store
