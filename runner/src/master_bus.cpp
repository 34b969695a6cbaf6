#include "master_bus.h"

#include <zmq.h>

#include "brine/args/arguments.h"
#include "brine/config/bus_endpoints.h"
#include "brine/wire/codec.h"
#include "zmq_socket.h"

namespace brine::runner {

void FireMasterEvent(const config::MasterConfig& config, const std::string& tag, const Value& data) {
  const std::string frame = wire::EncodeFrame(tag, data, wire::Framing::kNew);
  const std::string endpoint = config::EndpointsFor(config).pull;
  const int timeout_ms = static_cast<int>(config.brine.send_timeout_ms);
  try {
    ZmqSocket push(ZmqSocket::Type::kPush);
    // Without IMMEDIATE a PUSH socket queues for a connection that may never
    // come up, and the send "succeeds" while no master exists.
    push.Set(ZMQ_IMMEDIATE, 1);
    push.Set(ZMQ_SNDTIMEO, timeout_ms);
    push.Set(ZMQ_LINGER, timeout_ms);
    push.Connect(endpoint);
    if (!push.Send(frame)) {
      throw args::RuntimeFailure("brine-master is not reachable at " + endpoint + " (no connection within " +
                           std::to_string(timeout_ms) + " ms, brine.send_timeout_ms); the event " + tag +
                           " was not sent");
    }
  } catch (const ZmqError& e) {
    throw args::RuntimeFailure("cannot send the event " + tag + " to brine-master at " + endpoint + ": " + e.what());
  }
}

}  // namespace brine::runner
