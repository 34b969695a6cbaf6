// Where brine-sim's frames go: a brine-master's bus (PushSink) or a file for
// --dry-run (FileSink).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "brine/sim/fleet.h"

namespace brine::sim {

// The frames could not be delivered or written; brine-sim exits 1.
class SinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Sends one event's frame (encoded from `event`). Throws SinkError.
  virtual void Send(std::string_view frame, const SimEvent& event) = 0;
  // Delivers or writes out everything sent. Throws SinkError. Call once.
  virtual void Close() = 0;
  // Where the frames go, for the summary.
  [[nodiscard]] virtual std::string Describe() const = 0;
};

}  // namespace brine::sim
