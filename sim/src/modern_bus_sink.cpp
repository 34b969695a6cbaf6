#include "modern_bus_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace brine::sim {
namespace {

constexpr std::size_t kBatchBytes = 64 * 1024;

}  // namespace

ModernBusSink::ModernBusSink(std::filesystem::path path, ModernBusOptions options)
    : path_(std::move(path)), options_(options) {
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  std::filesystem::remove(path_, ec);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path_.string();
  if (p.size() >= sizeof addr.sun_path) throw SinkError("socket path too long: " + p);
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_ < 0 || ::bind(listen_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_, 16) != 0) {
    const std::string why = std::strerror(errno);
    if (listen_ >= 0) ::close(listen_);
    listen_ = -1;
    throw SinkError("cannot serve the modern bus at " + p + ": " + why);
  }
  ::chmod(p.c_str(), 0600);
}

ModernBusSink::~ModernBusSink() {
  for (int fd : readers_) ::close(fd);
  if (listen_ >= 0) {
    ::close(listen_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
}

void ModernBusSink::Accept() {
  while (true) {
    const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    readers_.push_back(fd);
  }
}

void ModernBusSink::WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw SinkError("the reader of " + path_.string() + " went away: " + std::strerror(errno));
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
}

void ModernBusSink::Send(std::string_view frame, const SimEvent&) {
  if (readers_.empty()) {
    const auto deadline = std::chrono::steady_clock::now() + options_.wait;
    while (readers_.empty()) {
      Accept();
      if (!readers_.empty()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        throw SinkError("no reader connected to " + path_.string() + " (is brine-master attached?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  buffer_ += wire::EncodeStreamFrame(frame, {.framing = options_.framing});
  if (buffer_.size() < kBatchBytes) return;
  Accept();
  for (int fd : readers_) WriteAll(fd, buffer_);
  buffer_.clear();
}

void ModernBusSink::Close() {
  for (int fd : readers_) WriteAll(fd, buffer_);
  buffer_.clear();
  for (int fd : readers_) ::close(fd);
  readers_.clear();
  ::close(listen_);
  listen_ = -1;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace brine::sim
