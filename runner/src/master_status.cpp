#include "master_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "brine/config/bus_endpoints.h"
#include "brine/store/store.h"

namespace brine::runner {
namespace {

bool Connects(int family, const sockaddr* addr, socklen_t len) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, addr, len) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

BusProbe ProbeStoreLock(const config::MasterConfig& config) {
  BusProbe probe;
  const std::optional<std::filesystem::path> lock = store::Describe(config.brine.database).lock_file;
  if (!lock) return probe;
  probe.where = lock->string();
  probe.absent = "no live process holds " + probe.where;
  std::ifstream in(*lock);
  std::string word;
  long long pid = 0;
  if (!(in >> word >> pid) || word != "pid" || pid <= 1) return probe;
  probe.listening = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
  return probe;
}

BusProbe ProbeBus(const config::MasterConfig& config) {
  if (config.brine.bus != config::MasterConfig::BusMode::kBind) return ProbeStoreLock(config);
  BusProbe probe;
  const config::BusEndpoints endpoints = config::EndpointsFor(config);
  if (config.ipc_mode == config::MasterConfig::IpcMode::kIpc) {
    // ipc_paths holds the pull socket first (bus_endpoints.cpp).
    const std::string path = endpoints.ipc_paths.empty() ? std::string() : endpoints.ipc_paths.front().string();
    probe.where = path;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof addr.sun_path) return probe;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    probe.listening = Connects(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    probe.absent = "nothing listens on " + path;
    return probe;
  }
  probe.where = "127.0.0.1:" + std::to_string(config.brine.tcp_pull_port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(config.brine.tcp_pull_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  probe.listening = Connects(AF_INET, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  probe.absent = "nothing listens on " + probe.where;
  return probe;
}

std::optional<std::map<std::string, double>> ReadMetricsFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::map<std::string, double> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos || name_end == 0) return std::nullopt;
    const std::string name = line.substr(0, name_end);
    std::size_t value_at = name_end;
    if (line[name_end] == '{') {
      // Label values may hold '}' only escaped inside quotes; find the closing brace outside them.
      bool quoted = false;
      std::size_t i = name_end + 1;
      for (; i < line.size(); ++i) {
        if (quoted && line[i] == '\\') {
          ++i;
        } else if (line[i] == '"') {
          quoted = !quoted;
        } else if (!quoted && line[i] == '}') {
          break;
        }
      }
      if (i >= line.size()) return std::nullopt;
      value_at = i + 1;
    }
    const std::string rest = line.substr(value_at);
    char* end = nullptr;
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) return std::nullopt;
    out[name] = v;
  }
  return out;
}

}  // namespace brine::runner
