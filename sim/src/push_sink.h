// Frames onto a ZeroMQ PULL socket (a brine-master's bus) from one PUSH
// socket. ZeroMQ types stay in push_sink.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "sink.h"

namespace brine::sim {

struct PushOptions {
  // A send that cannot go out for this long (no master, or one that stopped
  // reading) fails with SinkError. Long enough to ride out a master that is
  // replaying a failed commit (its backoff starts at 1 s), short enough to
  // notice a stale socket file.
  std::chrono::milliseconds send_timeout{30000};
  // How long Close() waits for queued frames to reach the master.
  std::chrono::milliseconds linger{60000};
};

class PushSink final : public Sink {
 public:
  // Connects to `endpoint` (ipc://PATH or tcp://HOST:PORT). Throws SinkError
  // when an ipc endpoint's socket file does not exist (no master is bound
  // there) or ZeroMQ refuses the endpoint.
  PushSink(const std::string& endpoint, PushOptions options);
  ~PushSink() override;

  void Send(std::string_view frame, const SimEvent& event) override;
  // Closes the socket, waiting up to `linger` for queued frames; throws
  // SinkError when the wait ran out (frames may have been dropped).
  void Close() override;
  [[nodiscard]] std::string Describe() const override { return endpoint_; }

 private:
  struct Zmq;
  std::string endpoint_;
  PushOptions options_;
  std::unique_ptr<Zmq> zmq_;
};

}  // namespace brine::sim
