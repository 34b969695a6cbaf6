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

// Where a running Salt master (2016.3 and later) serves its own event bus,
// which an attached brine-master (brine.bus: attach) reads and brine-run's
// event.send writes to: plain stream sockets, not ZeroMQ
// (../shared/spec/salt-modern-bus.md). In ipc mode the paths
// <sock_dir>/master_event_pub.ipc and master_event_pull.ipc (Salt's
// sock_dir, not brine.sock_dir); in tcp mode 127.0.0.1 with
// tcp_master_pub_port and tcp_master_pull_port (paths empty).
struct SaltBus {
  std::filesystem::path pub_path;   // read events here
  std::filesystem::path pull_path;  // fire events here
  int pub_port = 0;                 // tcp mode; 0 in ipc mode
  int pull_port = 0;
  // "<path>" or "127.0.0.1:<port>", for messages.
  [[nodiscard]] std::string PubName() const;
  [[nodiscard]] std::string PullName() const;
};
[[nodiscard]] SaltBus SaltBusFor(const MasterConfig& config);

// The file in brine.sock_dir where an attached brine-master records the
// framing it last saw on the master's publisher ("plain" or "prefixed"), for
// brine-run's event.send.
[[nodiscard]] std::filesystem::path BusFramingFile(const MasterConfig& config);

}  // namespace brine::config
