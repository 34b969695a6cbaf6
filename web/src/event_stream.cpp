#include "event_stream.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "brine/core/json.h"
#include "brine/web/metrics.h"
#include "pages.h"

namespace brine::web {

// One open stream: what is ready to send, bounded by Options::buffer_bytes.
class EventHub::Stream final : public StreamBody {
 public:
  Stream(std::string cursor, std::string glob, std::size_t capacity, WebMetrics& metrics)
      : cursor_(std::move(cursor)), glob_(std::move(glob)), capacity_(capacity), metrics_(metrics) {
    // The first bytes go out at once (the browser's `open`): the starting
    // cursor, so a reconnect or a resume before any event goes on from here.
    buffer_ = "retry: 2000\nid: " + cursor_ + "\nevent: cursor\ndata: " + cursor_ + "\n\n";
    metrics_.Buffered(static_cast<std::int64_t>(buffer_.size()));
    last_write_ = std::chrono::steady_clock::now();
  }

  std::ptrdiff_t Read(char* out, std::size_t max) override {
    std::lock_guard lock(mutex_);
    if (dropped_) return -1;
    last_read_ = std::chrono::steady_clock::now();
    const std::size_t n = std::min(max, buffer_.size() - sent_);
    std::memcpy(out, buffer_.data() + sent_, n);
    sent_ += n;
    metrics_.Buffered(-static_cast<std::int64_t>(n));
    if (sent_ == buffer_.size()) {
      buffer_.clear();
      sent_ = 0;
    } else if (sent_ > capacity_) {
      buffer_.erase(0, sent_);
      sent_ = 0;
    }
    return static_cast<std::ptrdiff_t>(n);
  }

  void Closed() override {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    metrics_.StreamClosed(dropped_ || buffer_.size() - sent_ >= capacity_ / 2 || skipped_ > 0);
    metrics_.Buffered(-static_cast<std::int64_t>(buffer_.size() - sent_));
    buffer_.clear();
    buffer_.shrink_to_fit();
  }

  // The pump's side. Key: the read this stream shares with others.
  [[nodiscard]] std::pair<std::string, std::string> Key() {
    std::lock_guard lock(mutex_);
    return {cursor_, glob_};
  }
  [[nodiscard]] bool closed() {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  // Appends what the read gave (or counts it skipped when it does not fit),
  // and moves the cursor. Says what the connection needs.
  enum class Outcome { kNothing, kWake, kDrop };
  Outcome Deliver(const std::vector<std::pair<std::string, std::string>>& events, const std::string& cursor,
               std::chrono::seconds keepalive, std::chrono::milliseconds stall_limit) {
    std::lock_guard lock(mutex_);
    if (closed_) return Outcome::kNothing;
    const auto now = std::chrono::steady_clock::now();
    // A browser that has taken nothing for stall_limit while events were
    // skipped for it is dropped: its next Read ends the answer.
    if (skipped_ > 0 && now - last_read_ >= stall_limit) {
      dropped_ = true;
      return Outcome::kDrop;
    }
    const std::size_t size_before = buffer_.size();
    bool wrote = false;
    std::size_t pending = buffer_.size() - sent_;
    // A slow browser first gets the summary, once it has room again.
    if (skipped_ > 0 && pending < capacity_ / 2) {
      buffer_ += "id: " + cursor_ + "\nevent: skipped\ndata: {\"skipped\":" + std::to_string(skipped_) + "}\n\n";
      skipped_ = 0;
      wrote = true;
    }
    std::int64_t sent = 0;
    std::int64_t skipped = 0;
    for (const auto& [id, text] : events) {
      pending = buffer_.size() - sent_;
      if (skipped_ == 0 && pending + text.size() <= capacity_) {
        buffer_ += text;
        ++sent;
      } else {
        ++skipped_;  // once skipping, skip until the summary went out
        ++skipped;
      }
      (void)id;
    }
    cursor_ = cursor;
    wrote |= sent > 0;
    if (!wrote && now - last_write_ >= keepalive && buffer_.size() - sent_ < capacity_) {
      buffer_ += ": keepalive\n\n";  // also finds a browser that left
      wrote = true;
    }
    if (wrote) last_write_ = now;
    metrics_.Buffered(static_cast<std::int64_t>(buffer_.size() - size_before));
    metrics_.EventsSent(sent);
    if (skipped > 0) metrics_.EventsSkipped(skipped);
    return wrote ? Outcome::kWake : Outcome::kNothing;
  }

 private:
  std::mutex mutex_;  // guards everything below
  std::string buffer_;
  std::size_t sent_ = 0;  // bytes of buffer_ already handed to the server
  std::string cursor_;
  const std::string glob_;
  const std::size_t capacity_;
  std::int64_t skipped_ = 0;
  bool closed_ = false;
  bool dropped_ = false;
  std::chrono::steady_clock::time_point last_write_;
  std::chrono::steady_clock::time_point last_read_ = std::chrono::steady_clock::now();
  WebMetrics& metrics_;  // outlives the stream (the hub's owner keeps it)
};

std::string SseEvent(const store::TailedEvent& e, std::size_t max_bytes) {
  const store::ArchivedEvent& a = e.event.event;
  std::string data = "{\"id\":" + std::to_string(e.event.id) + ",\"time\":" + ToJson(Value(IsoTime(a.received))) +
                     ",\"master\":" + ToJson(Value(a.master_id)) + ",\"tag\":" + ToJson(Value(a.tag)) + ",\"data\":";
  if (data.size() + a.data_json.size() + e.cursor.size() + 32 > max_bytes) {
    data += "null,\"truncated\":true}";
  } else {
    data += a.data_json + "}";
  }
  // JSON has CR and LF only as whitespace between tokens: a space keeps the
  // event on its one data: line.
  std::replace(data.begin(), data.end(), '\n', ' ');
  std::replace(data.begin(), data.end(), '\r', ' ');
  return "id: " + e.cursor + "\ndata: " + data + "\n\n";
}

EventHub::EventHub(Options options, WebMetrics& metrics) : options_(std::move(options)), metrics_(metrics) {
  thread_ = std::thread([this] { Run(); });
}

EventHub::~EventHub() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<StreamBody> EventHub::Open(const std::string& cursor, const std::string& tag_glob) {
  auto stream = std::make_shared<Stream>(cursor, tag_glob, options_.buffer_bytes, metrics_);
  metrics_.StreamOpened();
  {
    std::lock_guard lock(mutex_);
    streams_.push_back(stream);
  }
  wake_.notify_all();
  return stream;
}

void EventHub::Run() {
  std::unique_ptr<store::Store> store;
  std::unique_lock lock(mutex_);
  bool again = false;
  while (!stop_) {
    wake_.wait_for(lock, again ? std::chrono::milliseconds(5) : options_.poll, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    again = false;
    try {
      if (!store) {
        store = store::OpenStore(options_.database,
                                 {.access = store::OpenOptions::Access::kReadOnly, .sqlite = {.cache_kib = 2048}});
      }
      again = Poll(*store);
    } catch (const std::exception&) {
      store.reset();  // reopened on the next poll (a restarted server, a moved file)
    }
    lock.lock();
  }
}

bool EventHub::Poll(store::Store& store) {
  bool again = false;
  std::vector<std::shared_ptr<Stream>> live;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(streams_, [&](const std::weak_ptr<Stream>& w) {
      auto s = w.lock();
      if (!s || s->closed()) return true;
      live.push_back(std::move(s));
      return false;
    });
  }
  // Streams at the same cursor with the same glob share one read.
  std::map<std::pair<std::string, std::string>, std::vector<Stream*>> groups;
  for (const auto& s : live) groups[s->Key()].push_back(s.get());
  for (const auto& [key, members] : groups) {
    std::string cursor = key.first;
    std::vector<std::pair<std::string, std::string>> events;
    std::size_t bytes = 0;
    for (;;) {
      store::TailBatch batch;
      try {
        batch = store.TailEvents(cursor, key.second, options_.batch);
      } catch (const std::invalid_argument&) {
        break;  // checked when opened; cannot happen
      }
      for (const store::TailedEvent& e : batch.events) {
        events.emplace_back(e.cursor, SseEvent(e, options_.buffer_bytes / 2));
        bytes += events.back().second.size();
      }
      cursor = batch.cursor;
      if (!batch.more) break;
      // Half a buffer per read: a stream that keeps up has drained the
      // last one by the time the next comes (a few ms later).
      if (bytes >= options_.buffer_bytes / 2) {
        again = true;
        break;
      }
    }
    for (Stream* s : members) {
      switch (s->Deliver(events, cursor, options_.keepalive, options_.stall_limit)) {
        case Stream::Outcome::kWake:
          s->Wake();
          break;
        case Stream::Outcome::kDrop:
          s->Drop();
          break;
        case Stream::Outcome::kNothing:
          break;
      }
    }
  }
  return again;
}

}  // namespace brine::web
