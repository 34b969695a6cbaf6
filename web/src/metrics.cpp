#include "brine/web/metrics.h"

#include <cstdio>

#include "brine/core/atomic_file.h"

namespace brine::web {
namespace {

void Metric(std::string& out, const char* name, const char* type, const char* help, std::int64_t value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(value) + "\n";
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void WebMetrics::PageTime(std::string_view route, std::chrono::microseconds t) {
  const double s = static_cast<double>(t.count()) / 1e6;
  std::lock_guard lock(mutex_);
  auto it = routes_.find(route);
  if (it == routes_.end()) it = routes_.emplace(std::string(route), Route{}).first;
  Route& r = it->second;
  ++r.count;
  r.sum_s += s;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (s <= kBuckets[i]) {
      ++r.buckets[i];
      break;
    }
  }
}

std::string WebMetrics::Text(std::int64_t failed_logins) const {
  std::string out;
  Metric(out, "brine_web_open_streams", "gauge", "Live-tail streams open now.", open_streams_.load());
  Metric(out, "brine_web_streams_opened_total", "counter", "Live-tail streams opened since start.",
         streams_opened_.load());
  Metric(out, "brine_web_dropped_slow_clients_total", "counter",
         "Streams closed while their buffer was full: the browser had stopped reading.",
         dropped_slow_clients_.load());
  Metric(out, "brine_web_events_skipped_total", "counter",
         "Events not sent to a slow browser (it got a skipped line instead).", events_skipped_.load());
  Metric(out, "brine_web_events_sent_total", "counter", "Events sent on live-tail streams.", events_sent_.load());
  Metric(out, "brine_web_stream_buffered_bytes", "gauge",
         "Bytes the open streams hold, waiting for their browsers (bounded: docs/web.md).", buffered_bytes_.load());
  Metric(out, "brine_web_failed_logins_total", "counter", "Logins refused for a wrong token.", failed_logins);
  out += "# HELP brine_web_page_seconds Server time of each answer, by route.\n"
         "# TYPE brine_web_page_seconds histogram\n";
  std::lock_guard lock(mutex_);
  for (const auto& [route, r] : routes_) {
    std::int64_t cumulative = 0;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += r.buckets[i];
      out += "brine_web_page_seconds_bucket{route=\"" + route + "\",le=\"" + Number(kBuckets[i]) + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "brine_web_page_seconds_bucket{route=\"" + route + "\",le=\"+Inf\"} " + std::to_string(r.count) + "\n";
    out += "brine_web_page_seconds_sum{route=\"" + route + "\"} " + Number(r.sum_s) + "\n";
    out += "brine_web_page_seconds_count{route=\"" + route + "\"} " + std::to_string(r.count) + "\n";
  }
  return out;
}

std::string RouteLabel(std::string_view path) {
  static const char* const kSingle[] = {"", "login", "logout", "queues", "jobs", "minions", "failures",
                                        "active", "events", "sql", "static"};
  const std::string_view first = path.substr(0, path.find('/'));
  const bool deeper = first.size() < path.size();
  if (first == "events" && path == "events/stream") return "events/stream";
  if (deeper && first == "jobs") return "jobs/jid";
  if (deeper && first == "minions") return "minions/id";
  if (deeper && first != "static") return "other";
  for (const char* known : kSingle) {
    if (first == known) return first.empty() ? "overview" : std::string(first);
  }
  return "other";
}

MetricsWriter::MetricsWriter(std::filesystem::path path, std::chrono::milliseconds every,
                             std::function<std::string()> text)
    : path_(std::move(path)), every_(every), text_(std::move(text)) {
  Write();
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, every_, [this] { return stop_; });
      lock.unlock();
      Write();
      lock.lock();
    }
  });
}

MetricsWriter::~MetricsWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void MetricsWriter::Write() {
  // As brine-master's reporter: a random temp name made O_EXCL|O_NOFOLLOW
  // (not ending in .prom, so the collector skips it), 0644, no fsync.
  try {
    AtomicFile f(path_, {.mode = 0644, .sync = AtomicFile::Sync::kNone});
    f.Write(text_());
    f.Commit();
  } catch (const std::exception&) {
    // the folder may come later (or go): the next tick tries again
  }
}

}  // namespace brine::web
