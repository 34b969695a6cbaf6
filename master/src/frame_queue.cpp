#include "brine/master/frame_queue.h"

namespace brine::master {

std::size_t AckRequest::bytes() const {
  std::size_t n = 0;
  for (const Frame& f : frames) n += f.bytes.size();
  return n;
}

bool FrameQueue::Push(Frame frame) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  bytes_ += frame.bytes.size();
  frames_.push_back(std::move(frame));
  not_empty_.notify_one();
  return bytes_ < capacity_bytes_;
}

bool FrameQueue::HasRoom() {
  std::lock_guard lock(mu_);
  return !closed_ && bytes_ < capacity_bytes_;
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
  not_empty_.wait_until(lock, deadline, [&] { return closed_ || !frames_.empty() || !acked_.empty(); });
  if (!acked_.empty()) return TakeAckedLocked(acked);
  std::size_t n = 0;
  while (n < max_frames && !frames_.empty()) {
    bytes_ -= frames_.front().bytes.size();
    out.push_back(std::move(frames_.front()));
    frames_.pop_front();
    ++n;
  }
  return n;
}

void FrameQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  not_empty_.notify_all();
}

bool FrameQueue::ClosedAndEmpty() {
  std::lock_guard lock(mu_);
  return closed_ && frames_.empty() && acked_.empty();
}

std::size_t FrameQueue::acked_depth() {
  std::lock_guard lock(mu_);
  return acked_.size();
}

std::size_t FrameQueue::depth_frames() {
  std::lock_guard lock(mu_);
  return frames_.size();
}

std::size_t FrameQueue::depth_bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace brine::master
