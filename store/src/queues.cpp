#include "brine/store/queues.h"

#include "brine/core/json.h"
#include "brine/core/utf8.h"
#include "queue_rules.h"

#include <algorithm>
#include <stdexcept>

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

namespace detail {
namespace {

// Containers enclosing the deepest value of `v`, counting `v` itself; stops
// counting past `limit`.
int Depth(const Value& v, int limit) {
  if (limit < 0) return 1;
  int deepest = 0;
  if (v.is_list()) {
    for (const Value& e : v.as_list()) deepest = std::max(deepest, Depth(e, limit - 1));
    return deepest + 1;
  }
  if (v.is_map()) {
    for (const auto& [k, e] : v.as_map()) deepest = std::max(deepest, Depth(e, limit - 1));
    return deepest + 1;
  }
  return 0;
}

}  // namespace

void CheckName(const std::string& queue) {
  if (!IsValidQueueName(queue)) {
    throw std::invalid_argument("invalid queue name: it must be 1-255 bytes of UTF-8 without '/', NUL or control "
                                "characters");
  }
}

void CheckLimit(std::int64_t limit) {
  if (limit < kAllItems) throw std::invalid_argument("a queue item limit must be -1 (all) or more");
}

// The storage JSON of each item; an item ParseJson could not read back is refused.
std::vector<std::string> ItemTexts(std::span<const Value> items) {
  std::vector<std::string> texts;
  texts.reserve(items.size());
  for (const Value& item : items) {
    if (Depth(item, kMaxJsonDepth) > kMaxJsonDepth) {
      throw std::invalid_argument("queue item nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    texts.push_back(ToJson(item));
  }
  return texts;
}

}  // namespace detail

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
