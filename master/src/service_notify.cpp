#include "service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace brine::master {

bool NotifyServiceManager(std::string_view state) {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || env[0] == '\0') return false;
  const std::string path = env;
  if ((path[0] != '/' && path[0] != '@') || path.size() >= sizeof(sockaddr_un::sun_path)) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const ssize_t sent =
      ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

std::optional<std::chrono::microseconds> WatchdogInterval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr) return std::nullopt;
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid != nullptr && std::atol(pid) != ::getpid()) {
    return std::nullopt;
  }
  const long long n = std::atoll(usec);
  if (n <= 0) return std::nullopt;
  return std::chrono::microseconds(n);
}

}  // namespace brine::master
