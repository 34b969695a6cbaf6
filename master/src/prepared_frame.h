// What brine-master's reader thread makes of a bus frame before the writer
// thread files it (issue 15): the msgpack decoding, the tag's parsing and the
// JSON text the store keeps, so that the writer, the one thread that runs
// SQL, runs little else. Archiver::Prepare makes it (archiver.h); a frame
// that reaches the writer without one (the acknowledged lane, a spool file,
// the disk overflow read by the writer, a batch replayed) is prepared there,
// with the same result.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/wire/tags.h"

namespace brine::master {

struct PreparedFrame {
  // Non-empty: the frame cannot be read (undecodable, multi-part, damaged)
  // and is quarantined raw with this reason; nothing below is set.
  std::string quarantine;
  std::string tag;
  Value data;             // a map
  bool trimmed = false;   // Salt's VALUE_TRIMMED somewhere in data
  bool cache_write = false;   // a brine/cache/* frame (tag_info, data_json unset)
  bool archived = false;      // the event passes event_return_whitelist/blacklist
  wire::TagInfo tag_info;
  // ToJson(data) where the archive or the job cache stores the data as is;
  // empty otherwise (the store then encodes what it needs).
  std::string data_json;
  // A publish (salt/job/<jid>/new, new_job) with a jid: the load as stored
  // (data without _stamp and minions), ToJson(load), and the minions.
  std::optional<std::string> load_jid;
  Value load;
  std::string load_json;
  std::optional<std::vector<std::string>> minions;
  // The heap memory all of this holds (an estimate that counts each
  // allocation's bytes and the allocator's 16-byte header), for the queue's
  // byte budget (frame_queue.h).
  std::size_t bytes = 0;
};

}  // namespace brine::master
