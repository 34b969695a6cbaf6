// A bus frame as it moves through brine-master: read by the reader (or taken
// from the acknowledged socket, a spool file or the overflow file), queued
// (frame_queue.h), filed by the writer (writer.h, archiver.h). The path is
// drawn in ARCHITECTURE.md (master/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "brine/core/time.h"
#include "prepared_frame.h"

namespace brine::master {

struct Frame {
  std::string bytes;  // the frame as read (parts joined when `parts` > 1)
  Micros received;    // arrival time
  int parts = 1;      // ZeroMQ message parts; more than 1 is quarantined
  std::string damage; // non-empty: not a frame but bytes a spool file could not
                      // account for (spool.h); quarantined with this reason
  // Where the frame came from. The Salt plug-in's job-cache writes
  // (brine/cache/*) count only from its own channels when it is the master's
  // job cache (archiver.h).
  enum class Source { kBus, kAcked, kSpool };
  Source source = Source::kBus;
  std::uint64_t ack_token = 0;  // the AckRequest it belongs to; 0: none
  // What the reader made of it (prepared_frame.h); nullptr: not prepared.
  // Never written to the disk overflow or a spool: those keep `bytes` only.
  std::unique_ptr<PreparedFrame> prepared;
  // The memory the frame holds in a queue: its bytes and its preparation.
  [[nodiscard]] std::size_t memory_bytes() const { return bytes.size() + (prepared ? prepared->bytes : 0); }
};

}  // namespace brine::master
