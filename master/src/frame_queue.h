// The bounded queue between brine-master's socket reader and its writer.
//
// Two lanes. The bus lane holds frames read from the pull socket, bounded in
// bytes: brine.max_queue_mb in memory, then brine.overflow_mb on disk
// (overflow.h), first in, first out across both. The reader reads only while
// HasRoom, so when both are full frames wait in ZeroMQ's receive pipe instead
// of being dropped, while the reader goes on serving the acknowledged socket.
// The lane can hold one frame more than its room (the one read last, kept in
// memory behind the disk's frames when the disk cannot take it), so a frame
// larger than the whole capacity cannot wedge the pipeline.
//
// Bus frames may be prepared (decoded and encoded as JSON, prepared_frame.h)
// before the writer takes them. The queue prepares nothing itself: its
// pushing thread (brine-master's reader) asks Spill to take a frame to the
// disk raw, prepares the frame Spill left, and Pushes it; BeginRefill and
// EndRefill bring the disk's oldest frames back into memory, prepared by that
// thread in between. A prepared frame counts its decoded memory too
// (Frame::memory_bytes), so max_queue_mb bounds what the frames hold, not
// only their bytes on the wire.
//
// The acknowledged lane holds the Salt plug-in's requests (cache_socket.h),
// each a group of frames a caller is waiting on. It has a byte budget of its
// own and never blocks: a request that does not fit is refused, and the
// plug-in spools it. Pops hand out acknowledged requests before bus frames, so
// they never wait behind a bus backlog.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "frame.h"
#include "overflow.h"
#include "prepared_frame.h"

namespace brine::master {

// Frames a Salt process waits on: they are filed and committed together, then
// the writer reports `token` done (ack.h).
struct AckRequest {
  std::uint64_t token = 0;
  std::vector<Frame> frames;
  // Past this instant the caller has given up and spooled the frames, so they
  // must not be filed from here too.
  Micros expires{};
  // What each frame costs the acknowledged lane's budget beyond its octets:
  // a request of empty frames is not free (its Frames are some 200 bytes each).
  static constexpr std::size_t kFrameOverheadBytes = 256;
  // The frames' octets plus kFrameOverheadBytes each.
  [[nodiscard]] std::size_t bytes() const;
};

class FrameQueue {
 public:
  // Each lane holds up to `capacity_bytes` in memory; the bus lane goes on
  // into `overflow` when one is given.
  explicit FrameQueue(std::size_t capacity_bytes, std::unique_ptr<DiskOverflow> overflow = nullptr)
      : capacity_bytes_(capacity_bytes), overflow_(std::move(overflow)) {}

  // Takes `frame` onto the disk, raw, when it must wait there: the memory
  // lane is full or frames already wait on disk, and the disk accepts it.
  // Returns true when it took the frame (its bytes are on disk: the caller
  // drops it); false leaves it to the caller, for Push. On the pushing thread, which alone
  // adds frames, so a frame Spill left still belongs in memory at its Push.
  [[nodiscard]] bool Spill(Frame& frame);

  // Adds `frame` to the bus lane, full or not (see HasRoom), unless the
  // queue is closed: an unprepared frame onto the disk when Spill would take
  // it, else (and a prepared frame always) into memory, behind the disk's
  // frames when there are any. Returns HasRoom() as it is afterwards: whether
  // the reader may read another frame.
  bool Push(Frame frame);

  // On the pushing thread only, as a pair: BeginRefill frees what the writer
  // recycled, and unless the queue is closed, when the memory lane is under
  // half full and the disk holds frames, moves up to kRefillFrames of the
  // oldest into `out` (cleared first) and returns how many; the caller
  // prepares them outside the lock and hands them to EndRefill, which puts
  // them at the memory lane's end. Meanwhile the writer takes nothing behind
  // them, so the order holds; a caller that got frames must call EndRefill.
  // Reads at most 1/kRefillExpansion of the free memory in raw bytes (at
  // least one frame), since a prepared frame takes a few times its bytes;
  // the memory lane can pass its capacity by what one refill's frames hold
  // beyond that. A disk that cannot be read gives what was read and one
  // damaged frame, as the writer's read does.
  std::size_t BeginRefill(std::vector<Frame>& out);
  void EndRefill(std::vector<Frame>& frames);
  // At most a millisecond or so of preparing per refill: the reader serves
  // the acknowledged socket between them.
  static constexpr std::size_t kRefillFrames = 128;

  // The writer hands back the preparations it has filed, so that the thread
  // that allocated them frees them (glibc's free of another thread's chunks
  // locks that thread's arena and starves its malloc: measured, it cost more
  // than the preparing saved). They count against the memory lane until
  // BeginRefill, on the pushing thread, frees them.
  void Recycle(std::vector<std::unique_ptr<PreparedFrame>>& spent);
  static constexpr std::size_t kRefillExpansion = 8;

  // True when the bus lane has room in memory or on disk: the reader may read
  // one more frame.
  [[nodiscard]] bool HasRoom();

  // Adds `request` to the acknowledged lane unless that would pass its budget
  // (an empty lane takes any request) or the queue is closed. Never waits.
  [[nodiscard]] bool PushAcked(AckRequest request);

  // Waits until `deadline` for work. When acknowledged requests are waiting,
  // moves all of them into `acked` and no bus frames; otherwise moves up to
  // `max_frames` bus frames into `out`. Returns the number of frames and
  // requests moved; 0 on timeout, or when the queue is closed and empty.
  std::size_t PopUpTo(std::size_t max_frames, std::chrono::steady_clock::time_point deadline,
                      std::vector<Frame>& out, std::vector<AckRequest>& acked);
  // Moves the acknowledged requests waiting now into `acked`, without waiting.
  std::size_t PopAcked(std::vector<AckRequest>& acked);

  // No more pushes; pops go on until the queue is empty.
  void Close();
  // At a stop that ran out of time: saves the bus frames waiting on disk, and
  // those behind them, with the overflow's SaveTo, so the writer finishes
  // with what it has in memory. Returns the frames saved (0: nothing to save).
  // Throws std::system_error from SaveTo; then the queue is as it was.
  std::size_t SaveOverflow();
  [[nodiscard]] bool ClosedAndEmpty();
  // Bus frames waiting, in memory and on disk.
  [[nodiscard]] std::size_t depth_frames();
  // The memory they hold (Frame::memory_bytes).
  [[nodiscard]] std::size_t depth_bytes();
  // Their bytes on disk (records, as overflow.h counts them).
  [[nodiscard]] std::size_t overflow_bytes();
  // Why the disk takes no more frames now; empty when it does (or there is none).
  [[nodiscard]] std::string overflow_error();
  [[nodiscard]] std::size_t acked_depth();

 private:
  // mu_ held, all of them.
  std::size_t TakeAckedLocked(std::vector<AckRequest>& acked);
  bool HasRoomLocked() const;
  // Spill, mu_ held.
  bool SpillLocked(Frame& frame);
  bool OverflowEmptyLocked() const { return !overflow_ || overflow_->empty(); }
  std::size_t ReadOverflowLocked(std::size_t max_frames, std::size_t max_bytes, std::vector<Frame>& out);

  const std::size_t capacity_bytes_;
  std::mutex mu_;
  std::condition_variable not_empty_;
  // The bus lane, in order: frames_, then overflow_'s, then tail_ (frames the
  // disk refused while it held older ones). bytes_ counts frames_ and tail_.
  std::deque<Frame> frames_;
  std::unique_ptr<DiskOverflow> overflow_;
  std::deque<Frame> tail_;
  std::size_t bytes_ = 0;   // memory_bytes()
  // Frames BeginRefill took from the disk and EndRefill has not put back: the writer waits for
  // them rather than take what is behind them.
  std::size_t refilling_ = 0;
  std::vector<std::unique_ptr<PreparedFrame>> recycled_;
  std::size_t recycled_bytes_ = 0;  // of recycled_, also counted in bytes_
  std::deque<AckRequest> acked_;
  std::size_t acked_bytes_ = 0;
  bool closed_ = false;
};

}  // namespace brine::master
