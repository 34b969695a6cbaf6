#include "master_bus.h"

#include <zmq.hpp>

#include "arguments.h"
#include "brine/config/bus_endpoints.h"
#include "brine/wire/codec.h"

namespace brine::runner {

void FireMasterEvent(const config::MasterConfig& config, const std::string& tag, const Value& data) {
  const std::string frame = wire::EncodeFrame(tag, data, wire::Framing::kNew);
  const std::string endpoint = config::EndpointsFor(config).pull;
  const int timeout_ms = static_cast<int>(config.brine.send_timeout_ms);
  try {
    zmq::context_t ctx(1);
    zmq::socket_t push(ctx, zmq::socket_type::push);
    // Without IMMEDIATE a PUSH socket queues for a connection that may never
    // come up, and the send "succeeds" while no master exists.
    push.set(zmq::sockopt::immediate, 1);
    push.set(zmq::sockopt::sndtimeo, timeout_ms);
    push.set(zmq::sockopt::linger, timeout_ms);
    push.connect(endpoint);
    if (!push.send(zmq::buffer(frame), zmq::send_flags::none)) {
      throw RuntimeFailure("brine-master is not reachable at " + endpoint + " (no connection within " +
                           std::to_string(timeout_ms) + " ms, brine.send_timeout_ms); the event " + tag +
                           " was not sent");
    }
    push.close();
  } catch (const zmq::error_t& e) {
    throw RuntimeFailure("cannot send the event " + tag + " to brine-master at " + endpoint + ": " + e.what());
  }
}

}  // namespace brine::runner

namespace brine::runner {

std::string ZmqVersion() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace brine::runner
