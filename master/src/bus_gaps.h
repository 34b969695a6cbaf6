// The attached bus's gaps on their way from the reader thread, which sees
// them begin and end, to the writer thread, which owns the store and files
// them (Store::OpenBusGap, CloseBusGap). A mailbox under one mutex: a gap
// must reach the store even while the frame queue is full (that is one of
// its reasons), so it does not travel in the queue.
#pragma once

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/store.h"

namespace brine::master {

struct GapOp {
  enum class Kind { kOpen, kClose };
  Kind kind = Kind::kOpen;
  store::GapReason reason = store::GapReason::kMasterWentAway;  // kOpen only
  Micros at{};
  std::optional<Micros> last_frame;  // kOpen only
};

class GapMailbox {
 public:
  void Post(GapOp op) {
    std::lock_guard lock(mu_);
    ops_.push_back(op);
  }
  // Everything posted, oldest first, leaving the mailbox empty.
  [[nodiscard]] std::vector<GapOp> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(ops_, {});
  }
  // Puts back what Take gave and could not be filed, ahead of newer posts.
  void PutBack(std::vector<GapOp> ops) {
    std::lock_guard lock(mu_);
    ops.insert(ops.end(), ops_.begin(), ops_.end());
    ops_ = std::move(ops);
  }

 private:
  std::mutex mu_;            // guards ops_
  std::vector<GapOp> ops_;
};

}  // namespace brine::master
