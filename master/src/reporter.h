// brine-master's reporter thread: what an operator watches while it runs.
//
// Once a second it reads the writer's LiveStatus, the FrameQueue's depth, the
// store's size on disk and the spool folder, and:
//   - rewrites brine.metrics_file in Prometheus's text exposition format
//     (version 0.0.4), atomically: a temp file in the same folder renamed over
//     the old one, so node_exporter's textfile collector, brine.health and
//     brine.stats never read half a file;
//   - pings systemd's watchdog (service_notify.h) while the writer's heartbeat
//     is younger than the watchdog interval, so a wedged writer gets the
//     service restarted, but a writer retrying a full disk (which beats at
//     least every 30 s) does not;
//   - logs one throughput line a minute at info, and a warning (at most one a
//     minute) while frames have waited longer than brine.lag_warning_s.
// Why a file and not an HTTP endpoint: node_exporter already runs on most
// hosts that Prometheus watches and its textfile collector is made for
// daemons like this one; a file needs no port, no listener to harden and no
// HTTP library, and brine-run reads the same file for brine.health.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "brine/core/time.h"
#include "frame_queue.h"
#include "live_status.h"
#include "logger.h"

namespace brine::master {

struct ReporterOptions {
  std::filesystem::path metrics_file;  // empty: no file
  std::filesystem::path database;      // its size (and its -wal's) is brine_store_bytes
  std::filesystem::path spool_dir;     // empty: no spool
  std::string master_id;
  std::int64_t queue_capacity_bytes = 0;
  std::chrono::seconds lag_warning{10};
  std::chrono::seconds throughput_every{60};
  std::chrono::milliseconds tick{1000};
  // brine.bus: attach: the attached bus's state (live_status.h); outlives the
  // Reporter. nullptr: not attached, no brine_bus_* metrics.
  const AttachStatus* attach = nullptr;
};

// One report's figures.
struct MetricsSnapshot {
  std::string version;
  std::string master_id;
  double now_s = 0;  // UTC seconds
  double start_time_s = 0;
  std::int64_t received = 0, stored = 0, filtered = 0, quarantined = 0, duplicates = 0, returns = 0,
               cache_writes = 0, future_arrivals = 0, batches = 0;
  double last_commit_s = 0;  // 0: none yet
  double commit_lag_s = 0;   // how long the oldest pending frame may have waited; 0 when none wait
  std::int64_t pending_frames = 0;
  std::int64_t queue_frames = 0, queue_bytes = 0, queue_capacity_bytes = 0;
  std::int64_t overflow_bytes = 0;  // of queue_frames, on disk (brine.overflow_mb)
  std::string overflow_error;       // why the overflow file takes no more now
  std::int64_t store_bytes = 0;
  std::int64_t spool_files = 0, spool_bytes = 0;
  double spool_oldest_age_s = 0;
  double received_per_s = 0, stored_per_s = 0, returns_per_s = 0;  // over the last minute
  // Attached (brine.bus: attach) only.
  struct Bus {
    bool attached = false;
    double since_s = 0;  // when it last attached or detached
    std::int64_t reconnects = 0, gaps = 0;
  };
  std::optional<Bus> bus;
};

// The snapshot as Prometheus text: a HELP and a TYPE line before each
// metric, names brine_* with base units (seconds, bytes) and _total counters.
[[nodiscard]] std::string FormatMetrics(const MetricsSnapshot& m);

// Writes `text` to `path` through a temp file in the same folder and a
// rename (core/atomic_file.h: a random name made O_EXCL|O_NOFOLLOW, mode 0644).
// Throws std::runtime_error naming the path on failure, or when the path is a symlink.
void WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

class Reporter {
 public:
  // All references must outlive the Reporter. Reports once, then starts the thread.
  Reporter(ReporterOptions options, const LiveStatus& status, FrameQueue& queue, Logger& log, const Clock& clock);
  // Stops the thread after a last report.
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

 private:
  void Run();
  void Tick();
  MetricsSnapshot Take();

  ReporterOptions options_;
  const LiveStatus& status_;
  FrameQueue& queue_;
  Logger& log_;
  const Clock& clock_;
  const double start_time_s_;
  struct Sample {
    std::chrono::steady_clock::time_point at;
    std::int64_t received, stored, returns;
  };
  std::deque<Sample> window_;  // the last minute
  std::chrono::steady_clock::time_point next_throughput_;
  std::chrono::steady_clock::time_point last_lag_warning_{};
  bool lagging_ = false;
  bool metrics_failed_ = false;
  std::string overflow_error_;  // the last one logged
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // started in the constructor's body
};

}  // namespace brine::master
