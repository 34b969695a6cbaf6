// The live tail behind /events/stream (docs/web.md, "The live tail"): one
// pump thread polls the store for every open stream and hands each its
// Server-Sent Events text. A stream costs a socket and a bounded buffer,
// never a thread; streams at the same cursor with the same glob share one
// read.
//
// A browser that reads slower than events come fills its buffer
// (Options::buffer_bytes); further events are then counted instead of kept,
// and once it has room again it gets one `event: skipped` line ("N events
// skipped: reload to see them") instead of the backlog. Its cursor moves on
// past them, so the store is never asked twice. A client that stops reading
// altogether is closed after Options::stall_limit; it never holds up the
// pump, the other streams or the store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "brine/store/store.h"
#include "brine/web/http_server.h"

namespace brine::web {

class WebMetrics;

class EventHub {
 public:
  struct Options {
    std::string database;                     // OpenStore's string; read-only
    std::chrono::milliseconds poll{100};      // how often the store is asked
    std::size_t buffer_bytes = 256 * 1024;    // per stream, beyond the server's own
    std::size_t batch = 500;                  // events per TailEvents call
    // A read stops once it holds half a buffer's worth (a stream could not
    // take much more before it drains); the next poll then comes at once.
    std::chrono::seconds keepalive{15};       // a comment line when nothing came
    // A stream whose browser took nothing this long while events were being
    // skipped for it is closed (counted as a dropped slow client).
    std::chrono::milliseconds stall_limit{30000};
  };
  // `metrics` outlives the hub. Starts the pump thread.
  EventHub(Options options, WebMetrics& metrics);
  ~EventHub();  // stops the pump; open streams end
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // A stream of the events after `cursor` (a store tail cursor, already
  // checked by the caller) whose tag `tag_glob` matches (empty: all).
  [[nodiscard]] std::shared_ptr<StreamBody> Open(const std::string& cursor, const std::string& tag_glob);

  class Stream;

 private:
  void Run();
  // Returns true when a read stopped at a buffer's worth (poll again soon).
  bool Poll(store::Store& store);

  const Options options_;
  WebMetrics& metrics_;  // outlives the hub
  std::mutex mutex_;     // guards streams_ and stop_
  std::condition_variable wake_;
  std::vector<std::weak_ptr<Stream>> streams_;
  bool stop_ = false;
  std::thread thread_;
};

// One event as the stream sends it: `id: <cursor>` and one `data:` line of
// {"id", "time", "master", "tag", "data"} (data is the event's JSON; an
// event whose text would pass `max_bytes` is sent with "data": null and
// "truncated": true).
[[nodiscard]] std::string SseEvent(const store::TailedEvent& e, std::size_t max_bytes);

}  // namespace brine::web
