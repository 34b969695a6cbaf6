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

SaltBus SaltBusFor(const MasterConfig& config) {
  SaltBus b;
  if (config.ipc_mode == MasterConfig::IpcMode::kTcp) {
    b.pub_port = config.tcp_master_pub_port;
    b.pull_port = config.tcp_master_pull_port;
    return b;
  }
  b.pub_path = config.sock_dir / "master_event_pub.ipc";
  b.pull_path = config.sock_dir / "master_event_pull.ipc";
  return b;
}

std::string SaltBus::PubName() const {
  return pub_port != 0 ? "127.0.0.1:" + std::to_string(pub_port) : pub_path.string();
}

std::string SaltBus::PullName() const {
  return pull_port != 0 ? "127.0.0.1:" + std::to_string(pull_port) : pull_path.string();
}

std::filesystem::path BusFramingFile(const MasterConfig& config) {
  return config.brine.sock_dir / "brine_bus_framing";
}

}  // namespace brine::config
