// Where a master's event bus lives, from its config: brine-master binds
// there, brine-run and the Salt plug-in connect there.
//
// ipc mode: PULL at ipc://<brine.sock_dir>/master_event_pull.ipc and PUB at
// ipc://<brine.sock_dir>/master_event_pub.ipc (a 2014-2015 Salt master's
// paths), and brine's own ROUTER for the Salt plug-in's acknowledged
// job-cache writes at ipc://<brine.sock_dir>/brine_cache.ipc (cache_socket.h).
// tcp mode: tcp://127.0.0.1:<brine.tcp_pull_port>, <tcp_pub_port> and
// <tcp_cache_port>.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "brine/config/master_config.h"

namespace brine::config {

struct BusEndpoints {
  std::string pull;                              // ZeroMQ endpoint producers push to
  std::string pub;                               // ZeroMQ endpoint listeners subscribe to
  std::string cache;                             // the plug-in's acknowledged job-cache writes
  std::vector<std::filesystem::path> ipc_paths;  // the socket files (ipc mode)
};

// The endpoints of `config`; `sock_dir`, when given, replaces brine.sock_dir.
[[nodiscard]] BusEndpoints EndpointsFor(const MasterConfig& config,
                                        const std::filesystem::path& sock_dir = {});

}  // namespace brine::config
