#include "brine/config/bus_endpoints.h"

namespace brine::config {

BusEndpoints EndpointsFor(const MasterConfig& config, const std::filesystem::path& sock_dir) {
  BusEndpoints e;
  if (config.ipc_mode == MasterConfig::IpcMode::kTcp) {
    e.pull = "tcp://127.0.0.1:" + std::to_string(config.brine.tcp_pull_port);
    e.pub = "tcp://127.0.0.1:" + std::to_string(config.brine.tcp_pub_port);
    e.cache = "tcp://127.0.0.1:" + std::to_string(config.brine.tcp_cache_port);
    return e;
  }
  const auto& dir = sock_dir.empty() ? config.brine.sock_dir : sock_dir;
  const auto pull = dir / "master_event_pull.ipc";
  const auto pub = dir / "master_event_pub.ipc";
  const auto cache = dir / "brine_cache.ipc";
  e.pull = "ipc://" + pull.string();
  e.pub = "ipc://" + pub.string();
  e.cache = "ipc://" + cache.string();
  e.ipc_paths = {pull, pub, cache};
  return e;
}

}  // namespace brine::config
