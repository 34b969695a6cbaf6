// Where brine-master's event bus lives, and making sure it is ours to take.
//
// ipc mode: PULL at ipc://<brine.sock_dir>/master_event_pull.ipc and PUB at
// ipc://<brine.sock_dir>/master_event_pub.ipc (a 2014-2015 Salt master's
// paths). tcp mode: tcp://127.0.0.1:<brine.tcp_pull_port> and <tcp_pub_port>.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "brine/config/master_config.h"

namespace brine::master {

struct BusEndpoints {
  std::string pull;                             // ZeroMQ endpoint producers push to
  std::string pub;                              // ZeroMQ endpoint listeners subscribe to
  std::vector<std::filesystem::path> ipc_paths; // socket files (ipc mode)
};

[[nodiscard]] BusEndpoints EndpointsFor(const config::MasterConfig& config);

// Thrown when something else holds the bus; brine-master exits 2.
class BusConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// libzmq unlinks an existing socket file when it binds, which would steal a
// live bus from Salt or from another brine-master. So before binding: a plain
// AF_UNIX connect() on `path`; a live listener throws BusConflict naming the
// path; a refused connect means a stale file, which is removed. A missing
// file is fine.
void ClaimIpcPath(const std::filesystem::path& path);

}  // namespace brine::master
