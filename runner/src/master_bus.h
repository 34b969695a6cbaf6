// Firing an event on the master's bus from a runner function, as Salt's
// runners do with get_master_event(...).fire_event (spec salt-jobs.md 9).
#pragma once

#include <optional>
#include <string>

#include "brine/config/bus_endpoints.h"
#include "brine/config/master_config.h"
#include "brine/core/value.h"
#include "brine/wire/salt_stream.h"

namespace brine::runner {

// Sends `tag` and `data` (a map) as one frame in Salt's framing to the
// master's pull socket (config::EndpointsFor). The socket is ZMQ_IMMEDIATE, so
// the frame is only handed to a connection that is up: when no master takes it
// within brine.send_timeout_ms, nothing is sent. Returns once the frame is
// handed over (the socket's linger, the same timeout, lets it out before
// closing). Throws RuntimeFailure naming the endpoint when the master did not
// take the frame or the endpoint is unusable, std::invalid_argument when `tag`
// or `data` cannot be framed (see wire::EncodeFrame).
//
// brine.bus: attach (or none): the master is a modern Salt master (2016.3 and
// later), and the frame goes to its own puller (config::SaltBusFor) as one
// {head, body} message (wire/salt_stream.h) in the puller's framing:
// brine.bus_framing when set, else the framing brine-master recorded in
// config::BusFramingFile, else bare. Throws RuntimeFailure naming the path
// when the puller cannot be reached or written within brine.send_timeout_ms.
void FireMasterEvent(const config::MasterConfig& config, const std::string& tag, const Value& data);

// The framing event.send writes to an attached master's puller (above), and
// where the choice came from, for messages.
struct PullerFraming {
  wire::StreamFraming framing = wire::StreamFraming::kPlain;
  std::string source;
};
[[nodiscard]] PullerFraming PullerFramingFor(const config::MasterConfig& config);

// A reader of a modern Salt master's publisher (config::SaltBusFor; state.event
// when attached): connects, and reconnects after an EOF or a stream it cannot
// follow, each time Receive is called and it is not connected (salt-run
// state.event's own clients retry so). One owner, one thread.
class SaltBusSubscriber {
 public:
  // `bus` as SaltBusFor gives it (its pub_path or pub_port is read).
  SaltBusSubscriber(config::SaltBus bus, std::size_t max_frame_bytes);
  ~SaltBusSubscriber();
  SaltBusSubscriber(const SaltBusSubscriber&) = delete;
  SaltBusSubscriber& operator=(const SaltBusSubscriber&) = delete;
  // The next event frame's body (tag "\n\n" msgpack), or nullopt when none
  // came within `timeout_ms` (or the bus is not there). Never throws but
  // std::bad_alloc.
  [[nodiscard]] std::optional<std::string> Receive(int timeout_ms);

 private:
  const config::SaltBus bus_;
  wire::StreamDecoder decoder_;
  int fd_ = -1;
};

}  // namespace brine::runner
