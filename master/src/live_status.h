// What brine-master's writer thread shows its reporter thread (reporter.h)
// while it runs: counters since start, the last commit and a heartbeat. Only
// atomics, each written by the writer alone and read by the reporter; a
// reader may see one field a commit newer than another, which a once-a-second
// report tolerates.
#pragma once

#include <atomic>
#include <cstdint>

namespace brine::master {

struct LiveStatus {
  // Counters since this start (Counters in archiver.h, and batches committed).
  std::atomic<std::int64_t> received{0};
  std::atomic<std::int64_t> stored{0};
  std::atomic<std::int64_t> filtered{0};
  std::atomic<std::int64_t> quarantined{0};
  std::atomic<std::int64_t> duplicates{0};
  std::atomic<std::int64_t> returns{0};
  std::atomic<std::int64_t> cache_writes{0};
  std::atomic<std::int64_t> future_arrivals{0};
  std::atomic<std::int64_t> batches{0};
  // UTC microseconds of the last commit; 0 before the first.
  std::atomic<std::int64_t> last_commit_us{0};
  // Frames the writer holds in its open (or replaying) batch.
  std::atomic<std::int64_t> batch_frames{0};
  // steady_clock nanoseconds when the writer last went round its loop (or
  // retried a failed commit): the watchdog's proof that it is alive.
  std::atomic<std::int64_t> heartbeat_ns{0};
};

// What brine.health / brine.stats show of the attached bus (written by the
// reader thread, read by the writer, which files them as counters).
struct AttachStatus {
  std::atomic<std::int64_t> attached{0};        // 1 while connected
  std::atomic<std::int64_t> since_us{0};        // when it last attached or detached
  std::atomic<std::int64_t> reconnects{0};      // attaches after the first
  std::atomic<std::int64_t> framing{0};         // 0 none seen, 1 plain, 2 prefixed
  std::atomic<std::int64_t> gaps{0};            // gaps opened since start
};

}  // namespace brine::master
