// The bounded queue between brine-master's socket reader and its writer.
//
// Bounded in bytes (brine.max_queue_mb): when full, Push blocks, so the reader
// stops reading and frames wait in ZeroMQ's receive pipe instead of being
// dropped. One frame larger than the whole capacity is still let in when the
// queue is empty, so it cannot wedge the pipeline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "brine/core/time.h"

namespace brine::master {

struct Frame {
  std::string bytes;  // the frame as read (parts joined when `parts` > 1)
  Micros received;    // arrival time
  int parts = 1;      // ZeroMQ message parts; more than 1 is quarantined
  std::string damage; // non-empty: not a frame but bytes a spool file could not
                      // account for (spool.h); quarantined with this reason
};

class FrameQueue {
 public:
  explicit FrameQueue(std::size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // Adds `frame`, waiting while the queue is full. Returns false (frame not
  // added) only after Close().
  bool Push(Frame frame);

  // Moves up to `max_frames` frames into `out`, waiting until `deadline` for
  // the first one. Returns the number moved; 0 on timeout, or when the queue
  // is closed and empty.
  std::size_t PopUpTo(std::size_t max_frames, std::chrono::steady_clock::time_point deadline,
                      std::vector<Frame>& out);

  // No more pushes; pops go on until the queue is empty.
  void Close();
  [[nodiscard]] bool ClosedAndEmpty();
  [[nodiscard]] std::size_t depth_frames();
  [[nodiscard]] std::size_t depth_bytes();

 private:
  const std::size_t capacity_bytes_;
  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<Frame> frames_;
  std::size_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace brine::master
