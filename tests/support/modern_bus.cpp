#include "support/modern_bus.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "brine/wire/codec.h"

namespace brine::test {
namespace {

int Listen(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);  // Salt deletes the old file and binds a new one
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof(addr.sun_path)) throw std::runtime_error("socket path too long: " + p);
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("bind " + p + ": " + why);
  }
  ::chmod(p.c_str(), 0600);
  return fd;
}

// A listener on 127.0.0.1:`port`, as Salt's ipc_mode: tcp binds it. The
// old listener of a restart may linger while the serving thread's poll()
// still holds it: EADDRINUSE is retried for up to 10 s.
int ListenTcp(int port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // the old connections' TIME_WAIT
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 64) == 0) return fd;
    const int err = errno;
    ::close(fd);
    if (err != EADDRINUSE || std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("bind 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(err));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}


}  // namespace

ModernBus::ModernBus(std::filesystem::path sock_dir, Options options) : dir_(std::move(sock_dir)), options_(options) {
  std::filesystem::create_directories(dir_);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  {
    std::lock_guard lock(mu_);
    BindPub();
    pull_listen_ = options_.tcp_pull_port > 0 ? ListenTcp(options_.tcp_pull_port) : Listen(pull_path());
  }
  thread_ = std::thread([this] { Serve(); });
}

ModernBus::~ModernBus() {
  Shutdown();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void ModernBus::BindPub() {
  pub_listen_ = options_.tcp_pub_port > 0 ? ListenTcp(options_.tcp_pub_port) : Listen(pub_path());
}

void ModernBus::Wake() {
  const char c = 1;
  (void)!::write(wake_[1], &c, 1);
}

std::string ModernBus::Pack(const std::string& tag, const Value& data) const {
  return wire::EncodeStreamFrame(wire::EncodeFrame(tag, data, wire::Framing::kNew), options_.form);
}

void ModernBus::Fire(const std::string& tag, const Value& data) {
  std::lock_guard lock(mu_);
  Broadcast(wire::EncodeStreamFrame(wire::EncodeFrame(tag, data, wire::Framing::kNew), options_.form));
}

void ModernBus::FireRaw(const std::string& bytes) {
  std::lock_guard lock(mu_);
  Broadcast(bytes);
}

void ModernBus::Broadcast(const std::string& frame) {
  for (Conn& c : readers_) c.out += frame;
  FlushLocked();
  Wake();
}

void ModernBus::FlushLocked() {
  for (auto it = readers_.begin(); it != readers_.end();) {
    Conn& c = *it;
    while (!c.out.empty()) {
      const std::size_t n = options_.write_chunk > 0 ? std::min(options_.write_chunk, c.out.size()) : c.out.size();
      const ssize_t w = ::send(c.fd, c.out.data(), n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w <= 0) break;
      c.out.erase(0, static_cast<std::size_t>(w));
      if (options_.write_chunk > 0) break;  // one piece per turn: the reader sees frames split
    }
    if (options_.drop_after_bytes > 0 && c.out.size() > options_.drop_after_bytes) {
      // Salt 3006: the reader's write buffer overflowed; it is closed, no notice.
      ::close(c.fd);
      ++dropped_;
      it = readers_.erase(it);
      continue;
    }
    ++it;
  }
}

void ModernBus::Restart(const wire::StreamForm& form) {
  std::lock_guard lock(mu_);
  ::shutdown(pub_listen_, SHUT_RDWR);  // a tcp listener stops listening now, not when poll() lets go
  ::close(pub_listen_);
  std::error_code ec;
  std::filesystem::remove(pub_path(), ec);
  for (Conn& c : readers_) ::close(c.fd);
  readers_.clear();
  options_.form = form;
  BindPub();
  Wake();
}

void ModernBus::ReplaceSocket() {
  std::lock_guard lock(mu_);
  for (Conn& c : readers_) old_readers_.push_back(std::move(c));
  readers_.clear();
  ::close(pub_listen_);
  BindPub();
  Wake();
}

void ModernBus::Shutdown() {
  if (stop_.exchange(true)) return;
  Wake();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  // The listeners first, as a stopping master: a reader reconnecting at its
  // EOF finds nothing.
  std::error_code ec;
  std::filesystem::remove(pub_path(), ec);
  std::filesystem::remove(pull_path(), ec);
  ::close(pub_listen_);
  ::close(pull_listen_);
  for (auto* list : {&readers_, &old_readers_, &pullers_}) {
    for (Conn& c : *list) ::close(c.fd);
    list->clear();
  }
}

std::size_t ModernBus::readers() {
  std::lock_guard lock(mu_);
  return readers_.size();
}

std::vector<std::string> ModernBus::pulled() {
  std::lock_guard lock(mu_);
  return pulled_;
}

std::vector<wire::StreamFraming> ModernBus::pulled_framings() {
  std::lock_guard lock(mu_);
  return pulled_framings_;
}

bool ModernBus::WaitForReaders(std::size_t n, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (readers() < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool ModernBus::WaitFlushed(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      std::lock_guard lock(mu_);
      bool empty = true;
      for (const Conn& c : readers_) empty = empty && c.out.empty();
      if (empty) return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void ModernBus::Serve() {
  std::vector<pollfd> fds;
  char buf[65536];
  while (!stop_) {
    fds.clear();
    {
      std::lock_guard lock(mu_);
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({pub_listen_, POLLIN, 0});
      fds.push_back({pull_listen_, POLLIN, 0});
      for (const Conn& c : readers_) fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      for (const Conn& c : pullers_) fds.push_back({c.fd, POLLIN, 0});
    }
    (void)::poll(fds.data(), fds.size(), 50);
    if (fds[0].revents & POLLIN) {
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    std::lock_guard lock(mu_);
    if (fds[1].revents & POLLIN) {
      while (true) {
        const int fd = ::accept4(pub_listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        readers_.push_back(Conn{.fd = fd});
        ++accepted_;
      }
    }
    if (fds[2].revents & POLLIN) {
      while (true) {
        const int fd = ::accept4(pull_listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        pullers_.push_back(Conn{.fd = fd});
      }
    }
    // A reader that closed its end goes; anything it wrote is ignored.
    for (auto it = readers_.begin(); it != readers_.end();) {
      bool gone = false;
      for (std::size_t i = 3; i < fds.size(); ++i) {
        if (fds[i].fd == it->fd && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          const ssize_t r = ::recv(it->fd, buf, sizeof buf, MSG_DONTWAIT);
          gone = r == 0 || (r < 0 && errno != EAGAIN);
        }
      }
      if (gone) {
        ::close(it->fd);
        it = readers_.erase(it);
      } else {
        ++it;
      }
    }
    FlushLocked();
    for (auto it = pullers_.begin(); it != pullers_.end();) {
      bool gone = false;
      while (true) {
        const ssize_t r = ::recv(it->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) gone = true;
        if (r <= 0) break;
        it->in.Append(std::string_view(buf, static_cast<std::size_t>(r)));
      }
      while (auto item = it->in.Next()) {
        if (item->kind != wire::StreamDecoder::Item::Kind::kBody) break;
        pulled_.push_back(item->bytes);
        pulled_framings_.push_back(item->framing);
        // Republished to every reader in the publisher's form.
        for (Conn& c : readers_) c.out += wire::EncodeStreamFrame(item->bytes, options_.form);
      }
      if (gone) {
        ::close(it->fd);
        it = pullers_.erase(it);
      } else {
        ++it;
      }
    }
    FlushLocked();
  }
}

}  // namespace brine::test
