#include "reader.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

namespace brine::master {
namespace {

// Where a frame enters the pipeline on the reader thread (issue 15: the
// writer, the bottleneck, then only runs SQL): prepared with the archiver's
// one preparer. A preparation that fails (out of memory) is left to the
// writer, which prepares the frame where it takes it and handles the failure
// where it always did.
void PrepareOnReader(const Archiver& archiver, Frame& frame) {
  try {
    archiver.Prepare(frame);
  } catch (const std::exception&) {
    frame.prepared.reset();
  }
}

// Reads up to `max_frames` of the frames ZeroMQ already holds, while the queue
// has room, republishes each unchanged, and queues it: raw onto the overflow
// file when it must wait there, else prepared. Returns how many frames were
// read.
// `max_frame_bytes` is the most of one multi-part message kept
// (brine.max_frame_bytes): ZMQ_MAXMSGSIZE bounds each part, not their sum.
std::size_t Drain(zmq::socket_t& pull, zmq::socket_t& pub, FrameQueue& queue, const Archiver& archiver,
                  const Clock& clock, std::size_t max_frame_bytes, std::size_t max_frames = kDrainChunk) {
  std::size_t n = 0;
  bool has_room = queue.HasRoom();
  while (has_room && n < max_frames) {
    zmq::message_t msg;
    if (!pull.recv(msg, zmq::recv_flags::dontwait)) return n;
    Frame frame;
    frame.received = clock.Now();
    frame.bytes.assign(static_cast<const char*>(msg.data()), msg.size());
    bool more = msg.more();
    // The Salt returner plug-in's job-cache writes are brine's own business,
    // never bus events (archiver.h).
    const bool republish = more || !IsCacheFrame(frame.bytes);
    if (republish) {
      pub.send(msg, more ? zmq::send_flags::sndmore | zmq::send_flags::dontwait : zmq::send_flags::dontwait);
    }
    std::size_t total = frame.bytes.size();
    while (more) {
      zmq::message_t part;
      (void)pull.recv(part, zmq::recv_flags::none);
      more = part.more();
      total += part.size();
      // Past the limit only the count goes on; the archiver quarantines the
      // prefix kept with this reason.
      const std::size_t room = frame.bytes.size() <= max_frame_bytes ? max_frame_bytes + 1 - frame.bytes.size() : 0;
      frame.bytes.append(static_cast<const char*>(part.data()), std::min(part.size(), room));
      ++frame.parts;
      if (total > max_frame_bytes) {
        frame.damage = "multi-part message of " + std::to_string(frame.parts) + " parts and " + std::to_string(total) +
                       " bytes, over max_frame_bytes " + std::to_string(max_frame_bytes);
      }
      pub.send(part, more ? zmq::send_flags::sndmore | zmq::send_flags::dontwait : zmq::send_flags::dontwait);
    }
    if (!frame.damage.empty()) {
      const std::size_t keep = std::min({frame.bytes.size(), kQuarantineOversizeKeep, max_frame_bytes});
      frame.bytes.resize(keep);
      frame.damage += " (the first " + std::to_string(keep) + " kept)";
    }
    ++n;
    if (queue.Spill(frame)) {
      has_room = queue.HasRoom();
    } else {
      PrepareOnReader(archiver, frame);
      has_room = queue.Push(std::move(frame));
    }
  }
  return n;
}

}  // namespace

std::size_t Reader::Turn(std::chrono::milliseconds timeout, Bus bus_mode) {
  items_.clear();
  items_.push_back({nullptr, acks_.fd(), ZMQ_POLLIN, 0});
  // With the bus lane full the pull socket is left alone (its frames wait in
  // ZeroMQ) and the loop looks again soon.
  using Source = ReaderOptions::Source;
  const bool room = queue_.HasRoom();
  if (options_.source == Source::kAttached) {
    attached_->Maintain();
    if (bus_mode == Bus::kRead && !room) attached_->NoteFull();
  }
  const bool bus = bus_mode == Bus::kRead && room && options_.source != Source::kNone &&
                   (options_.source == Source::kBound || attached_->fd() >= 0);
  // Not held back by a full queue (a bus that is down or absent is quiet).
  polled_bus_ = bus_mode == Bus::kRead && room;
  // Frames waiting on disk come back into memory prepared while the writer
  // works, but the bus comes first: a refill only when the reader is not
  // reading it (the queue is full) or has read it empty. Senders give up on
  // frames a slow reader leaves in their pipes (their linger), and the
  // writer reads the disk itself when nothing comes back. With frames on
  // disk, the loop looks again soon.
  if (!bus || !last_drain_full_) (void)Refill();
  if (queue_.overflow_bytes() > 0) timeout = std::min(timeout, std::chrono::milliseconds(5));
  if (bus && options_.source == Source::kBound) items_.push_back({pull_.handle(), 0, ZMQ_POLLIN, 0});
  if (bus && options_.source == Source::kAttached) items_.push_back({nullptr, attached_->fd(), ZMQ_POLLIN, 0});
  // Detached: a file appearing in the master's socket folder wakes the reader.
  const bool wake = !bus && options_.source == Source::kAttached && attached_->wake_fd() >= 0;
  if (wake) items_.push_back({nullptr, attached_->wake_fd(), ZMQ_POLLIN, 0});
  if (options_.wake_fd >= 0) items_.push_back({nullptr, options_.wake_fd, ZMQ_POLLIN, 0});
  // Reconnecting: look again at the next retry.
  if (options_.source == Source::kAttached && !bus) timeout = std::min(timeout, AttachedBus::kRetryInterval);
  const std::size_t first_cache = items_.size();
  cache_.AppendPollItems(items_);
  try {
    zmq::poll(items_.data(), items_.size(), bus ? timeout : std::min(timeout, std::chrono::milliseconds(5)));
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    return 0;
  }
  if (items_[0].revents & ZMQ_POLLIN) cache_.SendReplies();
  if (wake && (items_[1].revents & ZMQ_POLLIN)) attached_->OnWake();
  cache_.Serve(items_.data() + first_cache, items_.size() - first_cache);
  last_drain_full_ = false;
  if (bus && (items_[1].revents & (ZMQ_POLLIN | ZMQ_POLLERR))) {
    const std::size_t n = options_.source == Source::kAttached
                              ? attached_->Read(queue_, archiver_, kDrainChunk)
                              : Drain(pull_, pub_, queue_, archiver_, clock_, options_.max_frame_bytes);
    last_drain_full_ = n >= kDrainChunk;
    return n;
  }
  return 0;
}

std::size_t Reader::Refill() {
  const std::size_t n = queue_.BeginRefill(refill_);
  if (n == 0) return 0;
  for (Frame& f : refill_) PrepareOnReader(archiver_, f);
  queue_.EndRefill(refill_);
  return n;
}

}  // namespace brine::master
