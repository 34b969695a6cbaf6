#include "frame_queue.h"

#include <system_error>

namespace brine::master {

std::size_t AckRequest::bytes() const {
  std::size_t n = 0;
  for (const Frame& f : frames) n += f.bytes.size() + kFrameOverheadBytes;
  return n;
}

bool FrameQueue::SpillLocked(Frame& frame) {
  const bool behind_disk = !tail_.empty() || !OverflowEmptyLocked();
  if (!behind_disk && bytes_ < capacity_bytes_) return false;
  if (!tail_.empty() || !overflow_ || !overflow_->Append(frame)) return false;
  not_empty_.notify_one();
  return true;
}

bool FrameQueue::Spill(Frame& frame) {
  std::lock_guard lock(mu_);
  return !closed_ && SpillLocked(frame);
}

bool FrameQueue::Push(Frame frame) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  // A prepared frame was left by Spill: only this thread adds frames, and the
  // writer's pops only free room, so it still belongs in memory.
  if (frame.prepared || !SpillLocked(frame)) {
    const bool behind_disk = !tail_.empty() || !OverflowEmptyLocked();
    bytes_ += frame.memory_bytes();
    (behind_disk ? tail_ : frames_).push_back(std::move(frame));
    not_empty_.notify_one();
  }
  return HasRoomLocked();
}

void FrameQueue::Recycle(std::vector<std::unique_ptr<PreparedFrame>>& spent) {
  if (spent.empty()) return;
  std::size_t size = 0;
  for (const auto& p : spent) size += p ? p->bytes : 0;
  std::lock_guard lock(mu_);
  for (auto& p : spent) recycled_.push_back(std::move(p));
  spent.clear();
  recycled_bytes_ += size;
  bytes_ += size;
}

std::size_t FrameQueue::BeginRefill(std::vector<Frame>& out) {
  out.clear();
  std::vector<std::unique_ptr<PreparedFrame>> to_free;
  {
    std::lock_guard lock(mu_);
    to_free.swap(recycled_);
    bytes_ -= recycled_bytes_;
    recycled_bytes_ = 0;
  }
  to_free.clear();  // here, outside the lock
  std::lock_guard lock(mu_);
  // Closed (a stop), the writer reads the disk itself: it must not wait on
  // the reader's preparing while the stop's time runs.
  if (closed_ || OverflowEmptyLocked() || bytes_ * 2 >= capacity_bytes_) return 0;
  refilling_ = ReadOverflowLocked(kRefillFrames, (capacity_bytes_ - bytes_) / kRefillExpansion, out);
  return refilling_;
}

void FrameQueue::EndRefill(std::vector<Frame>& frames) {
  std::lock_guard lock(mu_);
  // Everything in frames_ is older than the disk's frames and everything in
  // tail_ newer, so these go at the end of frames_.
  for (Frame& f : frames) {
    bytes_ += f.memory_bytes();
    frames_.push_back(std::move(f));
  }
  frames.clear();
  refilling_ = 0;
  not_empty_.notify_all();
}

bool FrameQueue::HasRoomLocked() const {
  if (closed_ || !tail_.empty()) return false;
  if (OverflowEmptyLocked() && bytes_ < capacity_bytes_) return true;
  return overflow_ && overflow_->accepting();
}

bool FrameQueue::HasRoom() {
  std::lock_guard lock(mu_);
  return HasRoomLocked();
}

bool FrameQueue::PushAcked(AckRequest request) {
  const std::size_t size = request.bytes();
  std::lock_guard lock(mu_);
  if (closed_ || (!acked_.empty() && acked_bytes_ + size > capacity_bytes_)) return false;
  acked_bytes_ += size;
  acked_.push_back(std::move(request));
  not_empty_.notify_one();
  return true;
}

std::size_t FrameQueue::PopAcked(std::vector<AckRequest>& acked) {
  std::lock_guard lock(mu_);
  return TakeAckedLocked(acked);
}

std::size_t FrameQueue::TakeAckedLocked(std::vector<AckRequest>& acked) {
  const std::size_t n = acked_.size();
  for (AckRequest& r : acked_) acked.push_back(std::move(r));
  acked_.clear();
  acked_bytes_ = 0;
  return n;
}

std::size_t FrameQueue::PopUpTo(std::size_t max_frames, std::chrono::steady_clock::time_point deadline,
                                std::vector<Frame>& out, std::vector<AckRequest>& acked) {
  std::unique_lock lock(mu_);
  not_empty_.wait_until(lock, deadline, [&] {
    return closed_ || !frames_.empty() || !acked_.empty() ||
           (refilling_ == 0 && (!OverflowEmptyLocked() || !tail_.empty()));
  });
  if (!acked_.empty()) return TakeAckedLocked(acked);
  std::size_t n = 0;
  while (n < max_frames) {
    if (frames_.empty()) {
      if (refilling_ > 0) break;  // the disk's oldest frames are on their way back
      if (!OverflowEmptyLocked()) {
        // Read from disk, frames take memory anew: at most the memory lane's
        // capacity per pop.
        n += ReadOverflowLocked(max_frames - n, capacity_bytes_, out);
        break;
      }
      if (tail_.empty()) break;
      frames_.swap(tail_);  // the disk is read empty: what waited behind it is next
    }
    bytes_ -= frames_.front().memory_bytes();
    out.push_back(std::move(frames_.front()));
    frames_.pop_front();
    ++n;
  }
  return n;
}

std::size_t FrameQueue::ReadOverflowLocked(std::size_t max_frames, std::size_t max_bytes, std::vector<Frame>& out) {
  const std::size_t before = out.size();
  try {
    return overflow_->ReadUpTo(max_frames, max_bytes, out);
  } catch (const std::system_error& e) {
    // The file is gone bad under us (an I/O error): what it held cannot be
    // read back. Say so where every loss is kept, as one quarantined record,
    // and go on with what follows it.
    Frame lost;
    lost.damage = std::string(e.what()) + ": " + std::to_string(overflow_->frames()) + " frames (" +
                  std::to_string(overflow_->bytes()) + " bytes) of the overflow lost";
    overflow_->Drop();
    out.push_back(std::move(lost));
    return out.size() - before;
  }
}

std::size_t FrameQueue::SaveOverflow() {
  std::lock_guard lock(mu_);
  if (OverflowEmptyLocked()) return 0;
  // What waited behind the disk goes with it, in order, whatever the budget.
  while (!tail_.empty() && overflow_->Append(tail_.front(), /*over_budget=*/true)) {
    bytes_ -= tail_.front().memory_bytes();
    tail_.pop_front();
  }
  const std::size_t n = overflow_->frames();
  overflow_->SaveTo();
  return n;
}

void FrameQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  not_empty_.notify_all();
}

bool FrameQueue::ClosedAndEmpty() {
  std::lock_guard lock(mu_);
  return closed_ && frames_.empty() && refilling_ == 0 && acked_.empty() && OverflowEmptyLocked() && tail_.empty();
}

std::size_t FrameQueue::acked_depth() {
  std::lock_guard lock(mu_);
  return acked_.size();
}

std::size_t FrameQueue::depth_frames() {
  std::lock_guard lock(mu_);
  return frames_.size() + refilling_ + tail_.size() + (overflow_ ? overflow_->frames() : 0);
}

std::size_t FrameQueue::depth_bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::size_t FrameQueue::overflow_bytes() {
  std::lock_guard lock(mu_);
  return overflow_ ? overflow_->bytes() : 0;
}

std::string FrameQueue::overflow_error() {
  std::lock_guard lock(mu_);
  return overflow_ ? overflow_->error() : std::string();
}

}  // namespace brine::master
