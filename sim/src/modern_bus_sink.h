// Frames onto a modern Salt master's event bus as its publisher
// (2016.3 and later: <sock_dir>/master_event_pub.ipc, a plain Unix stream
// socket, brine/wire/salt_stream.h): brine-sim plays the master, and an
// attached brine-master (brine.bus: attach) reads it. Unlike a real master
// it never drops a slow reader: a write waits for it (the rate test needs
// nothing lost).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "brine/wire/salt_stream.h"
#include "sink.h"

namespace brine::sim {

struct ModernBusOptions {
  wire::StreamFraming framing = wire::StreamFraming::kPlain;
  // How long the first Send waits for a reader, and any write for room.
  std::chrono::milliseconds wait{30000};
};

class ModernBusSink final : public Sink {
 public:
  // Binds `path` (replacing a stale socket file, as Salt does). Throws
  // SinkError when it cannot.
  ModernBusSink(std::filesystem::path path, ModernBusOptions options);
  ~ModernBusSink() override;

  // Sends to every reader connected so far; the first call waits for one.
  void Send(std::string_view frame, const SimEvent& event) override;
  // Ends every reader's stream (EOF) after its bytes went out, and removes
  // the socket file.
  void Close() override;
  [[nodiscard]] std::string Describe() const override { return path_.string(); }

 private:
  void Accept();
  void WriteAll(int fd, std::string_view bytes);

  std::filesystem::path path_;
  ModernBusOptions options_;
  int listen_ = -1;
  std::vector<int> readers_;
  std::string buffer_;  // frames not yet written (written in batches)
};

}  // namespace brine::sim
