#include "reporter.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "brine/core/atomic_file.h"
#include "brine/store/store.h"
#include "service_notify.h"

namespace brine::master {
namespace {

using Steady = std::chrono::steady_clock;

std::string Number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6f", v);
  }
  return buf;
}

// A label value: backslash, double quote and newline escaped (exposition format).
std::string LabelValue(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Metric(std::string& out, const char* name, const char* type, const char* help, double value,
            const std::string& labels = "") {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  out += name;
  out += labels;
  out += ' ';
  out += Number(value);
  out += '\n';
}

double Seconds(std::int64_t us) { return static_cast<double>(us) / 1e6; }

std::int64_t FileSize(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : static_cast<std::int64_t>(n);
}

}  // namespace

std::string FormatMetrics(const MetricsSnapshot& m) {
  std::string out;
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  Metric(out, "brine_master_info", "gauge", "brine-master's version and master id (always 1).", 1,
         "{version=\"" + LabelValue(m.version) + "\",master_id=\"" + LabelValue(m.master_id) + "\"}");
  Metric(out, "brine_master_start_time_seconds", "gauge", "When brine-master started, in Unix seconds.",
         m.start_time_s);
  Metric(out, "brine_metrics_timestamp_seconds", "gauge", "When this file was written, in Unix seconds.", m.now_s);
  Metric(out, "brine_events_received_total", "counter", "Frames taken off the event bus since start.",
         d(m.received));
  Metric(out, "brine_events_stored_total", "counter", "Events archived in salt_events since start.", d(m.stored));
  Metric(out, "brine_events_filtered_total", "counter",
         "Events the event_return filters kept out of the archive since start.", d(m.filtered));
  Metric(out, "brine_frames_quarantined_total", "counter", "Frames that could not be decoded, kept raw, since start.",
         d(m.quarantined));
  Metric(out, "brine_returns_stored_total", "counter", "Minion returns newly stored in the job cache since start.",
         d(m.returns));
  Metric(out, "brine_returns_duplicate_total", "counter",
         "Returns whose payload differed from the first one stored, since start.", d(m.duplicates));
  Metric(out, "brine_cache_writes_total", "counter", "Job-cache frames from the Salt plug-in applied since start.",
         d(m.cache_writes));
  Metric(out, "brine_future_arrivals_total", "counter",
         "Arrival times more than brine.max_clock_skew_s ahead of the clock, stored as the clock's time, since start.",
         d(m.future_arrivals));
  Metric(out, "brine_batches_committed_total", "counter", "Write transactions committed since start.", d(m.batches));
  Metric(out, "brine_last_commit_timestamp_seconds", "gauge", "When the last batch committed, in Unix seconds (0: none).",
         m.last_commit_s);
  Metric(out, "brine_commit_lag_seconds", "gauge",
         "How long frames have waited for a commit (0 when none wait).", m.commit_lag_s);
  Metric(out, "brine_pending_frames", "gauge", "Frames read off the bus and not yet committed.", d(m.pending_frames));
  Metric(out, "brine_queue_frames", "gauge", "Frames in the queue between the bus reader and the writer.",
         d(m.queue_frames));
  Metric(out, "brine_queue_bytes", "gauge", "Memory the frames in that queue hold (bytes and decoded form).", d(m.queue_bytes));
  Metric(out, "brine_queue_overflow_bytes", "gauge",
         "Bytes of that queue in the overflow file (brine.overflow_mb), waiting on disk.", d(m.overflow_bytes));
  Metric(out, "brine_queue_capacity_bytes", "gauge", "That queue's capacity (brine.max_queue_mb).",
         d(m.queue_capacity_bytes));
  Metric(out, "brine_store_bytes", "gauge", "The store's size on disk, with its write-ahead log.", d(m.store_bytes));
  Metric(out, "brine_spool_files", "gauge", "Spool files the Salt plug-in left for brine-master.", d(m.spool_files));
  Metric(out, "brine_spool_bytes", "gauge", "Bytes in those spool files.", d(m.spool_bytes));
  Metric(out, "brine_spool_oldest_age_seconds", "gauge", "Age of the oldest spool file (0: none).",
         m.spool_oldest_age_s);
  Metric(out, "brine_events_received_per_second", "gauge", "Frames received per second over the last minute.",
         m.received_per_s);
  Metric(out, "brine_events_stored_per_second", "gauge", "Events archived per second over the last minute.",
         m.stored_per_s);
  Metric(out, "brine_returns_stored_per_second", "gauge", "Returns stored per second over the last minute.",
         m.returns_per_s);
  if (m.bus) {
    Metric(out, "brine_bus_attached", "gauge", "1 while attached to the Salt master's event bus, else 0.",
           m.bus->attached ? 1 : 0);
    Metric(out, "brine_bus_state_since_seconds", "gauge",
           "When brine-master last attached to or detached from the Salt master's bus, in Unix seconds.",
           m.bus->since_s);
    Metric(out, "brine_bus_reconnects_total", "counter", "Attaches to the Salt master's bus after the first, since start.",
           d(m.bus->reconnects));
    Metric(out, "brine_bus_gaps_total", "counter",
           "Gaps in the archive of the Salt master's bus (brine_bus_gaps) opened since start.", d(m.bus->gaps));
  }
  return out;
}

void WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  // A random temp name made O_EXCL|O_NOFOLLOW (core/atomic_file.h): the
  // textfile folder is often writable by other accounts, and a link planted at
  // a predictable name would have us overwrite its target (issue 25, item 5).
  // The temp name (.<name>.<random>.tmp) does not end in .prom, so the
  // textfile collector skips it. 0644: node_exporter runs as its own user. No
  // fsync: the file is rewritten every second, and the thread that writes it
  // also pings the watchdog, which a busy disk must not stall.
  try {
    AtomicFile f(path, {.mode = 0644, .sync = AtomicFile::Sync::kNone});
    f.Write(text);
    f.Commit();
  } catch (const FileError& e) {
    throw std::runtime_error(e.what());
  }
}

Reporter::Reporter(ReporterOptions options, const LiveStatus& status, FrameQueue& queue, Logger& log,
                   const Clock& clock)
    : options_(std::move(options)),
      status_(status),
      queue_(queue),
      log_(log),
      clock_(clock),
      start_time_s_(Seconds(ToUnixMicros(clock.Now()))),
      next_throughput_(Steady::now() + options_.throughput_every) {
  // The first file is there before the constructor returns, so whatever runs
  // after READY=1 (ExecStartPost=brine-run brine.health) finds it.
  Tick();
  thread_ = std::thread([this] { Run(); });
}

Reporter::~Reporter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Reporter::Run() {
  auto tick = options_.tick;
  // systemd wants a ping at least every WATCHDOG_USEC; ping twice as often.
  if (const auto wd = WatchdogInterval()) {
    tick = std::min(tick, std::chrono::duration_cast<std::chrono::milliseconds>(*wd / 2));
  }
  std::unique_lock lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, tick, [this] { return stop_; });
    lock.unlock();
    Tick();
    lock.lock();
  }
}

MetricsSnapshot Reporter::Take() {
  MetricsSnapshot m;
  m.version = BRINE_VERSION;
  m.master_id = options_.master_id;
  const std::int64_t now_us = ToUnixMicros(clock_.Now());
  m.now_s = Seconds(now_us);
  m.start_time_s = start_time_s_;
  if (const AttachStatus* a = options_.attach) {
    m.bus = MetricsSnapshot::Bus{.attached = a->attached.load() != 0,
                                 .since_s = Seconds(a->since_us.load()),
                                 .reconnects = a->reconnects.load(),
                                 .gaps = a->gaps.load()};
  }
  m.received = status_.received.load();
  m.stored = status_.stored.load();
  m.filtered = status_.filtered.load();
  m.quarantined = status_.quarantined.load();
  m.duplicates = status_.duplicates.load();
  m.returns = status_.returns.load();
  m.cache_writes = status_.cache_writes.load();
  m.future_arrivals = status_.future_arrivals.load();
  m.batches = status_.batches.load();
  const std::int64_t last_commit_us = status_.last_commit_us.load();
  m.last_commit_s = Seconds(last_commit_us);
  m.queue_frames = static_cast<std::int64_t>(queue_.depth_frames());
  m.queue_bytes = static_cast<std::int64_t>(queue_.depth_bytes());
  m.queue_capacity_bytes = options_.queue_capacity_bytes;
  m.overflow_bytes = static_cast<std::int64_t>(queue_.overflow_bytes());
  m.overflow_error = queue_.overflow_error();
  m.pending_frames = m.queue_frames + status_.batch_frames.load();
  if (m.pending_frames > 0) {
    // Frames wait at most since the last commit (or the start, before one).
    m.commit_lag_s = std::max(0.0, m.now_s - std::max(m.last_commit_s, m.start_time_s));
  }
  std::error_code ec;
  // The file and its WAL (store::Describe); 0 for a server's, not measured here.
  m.store_bytes = store::Describe(options_.database).bytes.value_or(0);
  if (!options_.spool_dir.empty() && std::filesystem::is_directory(options_.spool_dir, ec)) {
    const auto now_file = std::filesystem::file_time_type::clock::now();
    for (const auto& entry : std::filesystem::directory_iterator(options_.spool_dir, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      ++m.spool_files;
      m.spool_bytes += FileSize(entry.path());
      const auto mtime = entry.last_write_time(ec);
      if (!ec) m.spool_oldest_age_s = std::max(m.spool_oldest_age_s, std::chrono::duration<double>(now_file - mtime).count());
    }
  }
  // Rates over the samples of the last minute.
  const auto now = Steady::now();
  window_.push_back({now, m.received, m.stored, m.returns});
  while (window_.size() > 1 && now - window_.front().at > std::chrono::seconds(60)) window_.pop_front();
  const double span = std::chrono::duration<double>(now - window_.front().at).count();
  if (span > 0) {
    m.received_per_s = static_cast<double>(m.received - window_.front().received) / span;
    m.stored_per_s = static_cast<double>(m.stored - window_.front().stored) / span;
    m.returns_per_s = static_cast<double>(m.returns - window_.front().returns) / span;
  }
  return m;
}

void Reporter::Tick() {
  const MetricsSnapshot m = Take();
  if (!options_.metrics_file.empty()) {
    try {
      WriteFileAtomically(options_.metrics_file, FormatMetrics(m));
      if (metrics_failed_) log_.Log(LogLevel::kInfo, "brine.metrics_file is written again");
      metrics_failed_ = false;
    } catch (const std::exception& e) {
      if (!metrics_failed_) log_.Log(LogLevel::kError, std::string("brine.metrics_file: ") + e.what());
      metrics_failed_ = true;
    }
  }
  const auto now = Steady::now();
  if (const auto wd = WatchdogInterval()) {
    const auto beat = Steady::time_point(std::chrono::nanoseconds(status_.heartbeat_ns.load()));
    if (now - beat < *wd) (void)NotifyServiceManager("WATCHDOG=1");
  }
  auto fixed = [](double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return std::string(buf);
  };
  if (m.commit_lag_s > static_cast<double>(options_.lag_warning.count())) {
    if (!lagging_ || now - last_lag_warning_ >= std::chrono::seconds(60)) {
      log_.Log(LogLevel::kWarning, "commit lag " + fixed(m.commit_lag_s, 1) + " s (over brine.lag_warning_s, " +
                                       std::to_string(options_.lag_warning.count()) + " s): " +
                                       std::to_string(m.pending_frames) + " frames wait for the store");
      last_lag_warning_ = now;
    }
    lagging_ = true;
  } else if (lagging_ && m.pending_frames == 0) {
    log_.Log(LogLevel::kInfo, "commit lag back to normal: no frames wait");
    lagging_ = false;
  }
  if (m.overflow_error != overflow_error_) {
    if (!m.overflow_error.empty()) {
      log_.Log(LogLevel::kError, m.overflow_error + ": the overflow file takes no more frames until it is read empty; "
                                                    "the senders are held back meanwhile");
    } else {
      log_.Log(LogLevel::kInfo, "the overflow file takes frames again");
    }
    overflow_error_ = m.overflow_error;
  }
  if (now >= next_throughput_) {
    next_throughput_ = now + options_.throughput_every;
    log_.Log(LogLevel::kInfo, "last minute: " + fixed(m.received_per_s, 1) + " frames/s received, " +
                                  fixed(m.stored_per_s, 1) + " events/s stored, " + fixed(m.returns_per_s, 1) +
                                  " returns/s; since start " + std::to_string(m.received) + " received, " +
                                  std::to_string(m.quarantined) + " quarantined; " + std::to_string(m.pending_frames) +
                                  " frames pending, commit lag " + fixed(m.commit_lag_s, 3) + " s; store " +
                                  fixed(static_cast<double>(m.store_bytes) / 1048576.0, 1) + " MiB, spool " +
                                  std::to_string(m.spool_files) + " files");
  }
}

}  // namespace brine::master
