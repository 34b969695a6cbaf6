// Firing an event on the master's bus from a runner function, as Salt's
// runners do with get_master_event(...).fire_event (spec salt-jobs.md 9).
#pragma once

#include <string>

#include "brine/config/master_config.h"
#include "brine/core/value.h"

namespace brine::runner {

// Sends `tag` and `data` (a map) as one frame in Salt's framing to the
// master's pull socket (config::EndpointsFor). The socket is ZMQ_IMMEDIATE, so
// the frame is only handed to a connection that is up: when no master takes it
// within brine.send_timeout_ms, nothing is sent. Returns once the frame is
// handed over (the socket's linger, the same timeout, lets it out before
// closing). Throws RuntimeFailure naming the endpoint when the master did not
// take the frame or the endpoint is unusable, std::invalid_argument when `tag`
// or `data` cannot be framed (see wire::EncodeFrame).
void FireMasterEvent(const config::MasterConfig& config, const std::string& tag, const Value& data);

}  // namespace brine::runner
