// brine-master's reader: the main thread's turn of its poll loop, where a
// frame enters the pipeline (ARCHITECTURE.md draws the path). It reads the
// bus's PULL socket while the queue has room, republishes each frame on PUB
// unchanged, and queues it: raw onto the overflow file when it must wait
// there (FrameQueue::Spill), else prepared (Archiver::Prepare) first. It
// brings the overflow file's frames back into memory prepared, serves the
// acknowledged socket (cache_socket.h) and sends its replies when the writer
// posts them (ack.h). It owns both ZeroMQ sockets.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>
#include <zmq.hpp>

#include "brine/core/time.h"
#include "ack.h"
#include "attached_bus.h"
#include "archiver.h"
#include "cache_socket.h"
#include "frame.h"
#include "frame_queue.h"

namespace brine::master {

// Frames one Turn reads before it returns to check the stop flag and the
// clock: senders that never pause must not keep the reader from a SIGTERM.
// Each is prepared too (some 7 us), and the acknowledged socket waits for
// the chunk: 128 keeps that wait near a millisecond.
inline constexpr std::size_t kDrainChunk = 128;

struct ReaderOptions {
  // The most of one multi-part message kept (brine.max_frame_bytes).
  std::size_t max_frame_bytes = std::size_t{64} << 20;
  // brine.bus: kBound reads the ZeroMQ PULL socket; kAttached a Salt
  // master's own bus (attached_bus.h); kNone no bus at all.
  enum class Source { kBound, kAttached, kNone };
  Source source = Source::kBound;
  // Polled beside the bus: a descriptor that ends a turn's wait when it is
  // readable (brine-master's signals, signals.h). -1: none.
  int wake_fd = -1;
};

// The reader thread's sockets and one turn of its poll loop.
class Reader {
 public:
  // All references must outlive the Reader.
  // `attached` is read when options.source is kAttached.
  Reader(ReaderOptions options, zmq::socket_t& pull, zmq::socket_t& pub, CacheSocket& cache, AckMailbox& acks,
         FrameQueue& queue, const Archiver& archiver, const Clock& clock, AttachedBus* attached = nullptr)
      : options_(options), pull_(pull), pub_(pub), cache_(cache), acks_(acks), queue_(queue), archiver_(archiver),
        clock_(clock), attached_(attached) {}

  // Waits up to `timeout` for work, then serves it: acknowledged requests,
  // their replies, and bus frames while the queue has room (unless kLeave).
  // Returns the bus frames read. Throws zmq::error_t but for EINTR, and what
  // the acknowledged socket throws.
  enum class Bus { kRead, kLeave };
  std::size_t Turn(std::chrono::milliseconds timeout, Bus bus_mode = Bus::kRead);

  // Whether the last Turn looked at the bus at all (not when the queue was
  // full): a quiet bus is one that was looked at and had nothing.
  [[nodiscard]] bool polled_bus() const { return polled_bus_; }

 private:
  // Brings the overflow file's oldest frames back into memory, prepared
  // (FrameQueue::BeginRefill). Returns the frames moved.
  std::size_t Refill();

  const ReaderOptions options_;
  zmq::socket_t& pull_;
  zmq::socket_t& pub_;
  CacheSocket& cache_;
  AckMailbox& acks_;
  FrameQueue& queue_;
  const Archiver& archiver_;
  const Clock& clock_;
  AttachedBus* attached_;  // outlives the Reader; nullptr unless attached
  std::vector<zmq::pollitem_t> items_;  // kept between turns: no allocation per turn
  std::vector<Frame> refill_;           // likewise
  bool polled_bus_ = false;
  bool last_drain_full_ = false;  // the last turn read a whole chunk: the bus may hold more
};

}  // namespace brine::master
