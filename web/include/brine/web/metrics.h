// brine-web's own metrics (docs/web.md, "Metrics"): open streams, slow
// clients dropped, events skipped for them, failed logins and the server
// time of each route, as a Prometheus text file rewritten atomically the way
// brine-master writes brine.metrics_file (core's AtomicFile, mode 0644,
// renamed into place), for node_exporter's textfile collector.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <condition_variable>

namespace brine::web {

class WebMetrics {
 public:
  void StreamOpened() { open_streams_.fetch_add(1); streams_opened_.fetch_add(1); }
  // `dropped`: the stream ended with its buffer full (the client had stopped reading).
  void StreamClosed(bool dropped) {
    open_streams_.fetch_sub(1);
    if (dropped) dropped_slow_clients_.fetch_add(1);
  }
  void EventsSkipped(std::int64_t n) { events_skipped_.fetch_add(n); }
  void EventsSent(std::int64_t n) { events_sent_.fetch_add(n); }
  // Bytes waiting in the streams' buffers went up (or down) by `delta`.
  void Buffered(std::int64_t delta) { buffered_bytes_.fetch_add(delta); }
  // One answer of `route` (RouteLabel) took `t` of server time.
  void PageTime(std::string_view route, std::chrono::microseconds t);

  [[nodiscard]] std::int64_t open_streams() const { return open_streams_.load(); }
  [[nodiscard]] std::int64_t dropped_slow_clients() const { return dropped_slow_clients_.load(); }
  [[nodiscard]] std::int64_t events_skipped() const { return events_skipped_.load(); }
  [[nodiscard]] std::int64_t buffered_bytes() const { return buffered_bytes_.load(); }

  // The Prometheus text: these counters, `failed_logins`, and a histogram of
  // page time per route.
  [[nodiscard]] std::string Text(std::int64_t failed_logins) const;

  // Upper bounds of the page-time histogram, in seconds.
  static constexpr std::array<double, 10> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

 private:
  struct Route {
    std::array<std::int64_t, kBuckets.size()> buckets{};  // not cumulative
    std::int64_t count = 0;
    double sum_s = 0;
  };
  std::atomic<std::int64_t> open_streams_{0};
  std::atomic<std::int64_t> streams_opened_{0};
  std::atomic<std::int64_t> dropped_slow_clients_{0};
  std::atomic<std::int64_t> events_skipped_{0};
  std::atomic<std::int64_t> events_sent_{0};
  std::atomic<std::int64_t> buffered_bytes_{0};
  mutable std::mutex mutex_;  // guards routes_
  std::map<std::string, Route, std::less<>> routes_;
};

// The route a path (below the base path) counts under: its first segment,
// "jobs/jid" and "minions/id" for a detail page, "events/stream",
// "static"; anything unknown is "other", so the label set stays bounded.
[[nodiscard]] std::string RouteLabel(std::string_view path);

// Rewrites `path` with `text()` every `every` on its own thread, and once
// more when destroyed. A failed write is retried on the next tick.
class MetricsWriter {
 public:
  MetricsWriter(std::filesystem::path path, std::chrono::milliseconds every, std::function<std::string()> text);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

 private:
  void Write();
  const std::filesystem::path path_;
  const std::chrono::milliseconds every_;
  const std::function<std::string()> text_;
  std::mutex mutex_;  // guards stop_
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace brine::web
