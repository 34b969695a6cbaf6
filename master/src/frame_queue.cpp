#include "brine/master/frame_queue.h"

namespace brine::master {

bool FrameQueue::Push(Frame frame) {
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] {
    return closed_ || frames_.empty() || bytes_ + frame.bytes.size() <= capacity_bytes_;
  });
  if (closed_) return false;
  bytes_ += frame.bytes.size();
  frames_.push_back(std::move(frame));
  not_empty_.notify_one();
  return true;
}

std::size_t FrameQueue::PopUpTo(std::size_t max_frames, std::chrono::steady_clock::time_point deadline,
                                std::vector<Frame>& out) {
  std::unique_lock lock(mu_);
  not_empty_.wait_until(lock, deadline, [&] { return closed_ || !frames_.empty(); });
  std::size_t n = 0;
  while (n < max_frames && !frames_.empty()) {
    bytes_ -= frames_.front().bytes.size();
    out.push_back(std::move(frames_.front()));
    frames_.pop_front();
    ++n;
  }
  if (n > 0) not_full_.notify_all();
  return n;
}

void FrameQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  not_empty_.notify_all();
  not_full_.notify_all();
}

bool FrameQueue::ClosedAndEmpty() {
  std::lock_guard lock(mu_);
  return closed_ && frames_.empty();
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
