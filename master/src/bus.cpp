#include "bus.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace brine::master {

void ClaimIpcPath(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof(addr.sun_path)) {
    throw BusConflict("socket path " + p + " is too long for a unix socket (at most " +
                      std::to_string(sizeof(addr.sun_path) - 1) + " bytes); choose a shorter brine.sock_dir");
  }
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw BusConflict("cannot create a unix socket to check " + p + ": " + std::strerror(errno));
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  if (rc == 0) {
    throw BusConflict("another process is listening on " + p +
                      " (a Salt master or another brine-master); set brine.sock_dir to a folder of brine's own, "
                      "e.g. /var/run/salt/brine");
  }
  if (err == ECONNREFUSED || err == ENOTSOCK || err == EPROTOTYPE) {
    if (!std::filesystem::is_socket(path, ec)) {
      throw BusConflict(p + " exists and is not a socket; remove it or set brine.sock_dir");
    }
    std::filesystem::remove(path, ec);
    if (ec) throw BusConflict("cannot remove the stale socket " + p + ": " + ec.message());
    return;
  }
  throw BusConflict("cannot check " + p + ": " + std::strerror(err));
}

}  // namespace brine::master
