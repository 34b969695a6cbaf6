#include "master_bus.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "brine/args/arguments.h"
#include "brine/config/bus_endpoints.h"
#include "brine/wire/codec.h"
#include "zmq_socket.h"

namespace brine::runner {

namespace {

// A connected stream socket to `port` on 127.0.0.1 or to the unix `path`,
// or -1 with errno set.
int ConnectStream(int port, const std::filesystem::path& path) {
  int fd = -1;
  int rc = -1;
  if (port != 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0) rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = path.string();
    if (p.size() >= sizeof addr.sun_path) {
      errno = ENAMETOOLONG;
      return -1;
    }
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  if (fd >= 0 && rc != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// Writes `bytes` to the modern master's puller. Throws RuntimeFailure.
void WriteToPuller(const config::MasterConfig& config, const std::string& bytes, const std::string& tag) {
  const config::SaltBus bus = config::SaltBusFor(config);
  const std::string where = bus.PullName();
  const int timeout_ms = static_cast<int>(config.brine.send_timeout_ms);
  const auto fail = [&](const std::string& why) {
    return args::RuntimeFailure("the Salt master's event bus is not reachable at " + where + " (" + why +
                                "); the event " + tag + " was not sent");
  };
  const int fd = ConnectStream(bus.pull_port, bus.pull_path);
  if (fd < 0) throw fail(std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t w = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      sent += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw fail(why);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLOUT, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::close(fd);
      throw fail("not written within " + std::to_string(timeout_ms) + " ms, brine.send_timeout_ms");
    }
  }
  ::close(fd);
}

}  // namespace

PullerFraming PullerFramingFor(const config::MasterConfig& config) {
  using F = config::MasterConfig::BusFraming;
  if (config.brine.bus_framing == F::kPlain) return {wire::StreamFraming::kPlain, "brine.bus_framing"};
  if (config.brine.bus_framing == F::kPrefixed) return {wire::StreamFraming::kPrefixed, "brine.bus_framing"};
  const auto file = config::BusFramingFile(config);
  std::ifstream in(file);
  std::string word;
  if (in >> word) {
    if (const auto seen = wire::ParseFramingName(word)) return {*seen, file.string()};
  }
  return {wire::StreamFraming::kPlain, "the default (no framing recorded in " + file.string() + ")"};
}

void FireMasterEvent(const config::MasterConfig& config, const std::string& tag, const Value& data) {
  const std::string frame = wire::EncodeFrame(tag, data, wire::Framing::kNew);
  if (config.brine.bus != config::MasterConfig::BusMode::kBind) {
    WriteToPuller(config, wire::EncodeStreamFrame(frame, {.framing = PullerFramingFor(config).framing}), tag);
    return;
  }
  const std::string endpoint = config::EndpointsFor(config).pull;
  const int timeout_ms = static_cast<int>(config.brine.send_timeout_ms);
  try {
    ZmqSocket push(ZmqSocket::Type::kPush);
    // Without IMMEDIATE a PUSH socket queues for a connection that may never
    // come up, and the send "succeeds" while no master exists.
    push.Set(ZMQ_IMMEDIATE, 1);
    push.Set(ZMQ_SNDTIMEO, timeout_ms);
    push.Set(ZMQ_LINGER, timeout_ms);
    push.Connect(endpoint);
    if (!push.Send(frame)) {
      throw args::RuntimeFailure("brine-master is not reachable at " + endpoint + " (no connection within " +
                           std::to_string(timeout_ms) + " ms, brine.send_timeout_ms); the event " + tag +
                           " was not sent");
    }
  } catch (const ZmqError& e) {
    throw args::RuntimeFailure("cannot send the event " + tag + " to brine-master at " + endpoint + ": " + e.what());
  }
}

SaltBusSubscriber::SaltBusSubscriber(config::SaltBus bus, std::size_t max_frame_bytes)
    : bus_(std::move(bus)), decoder_(max_frame_bytes) {}

SaltBusSubscriber::~SaltBusSubscriber() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> SaltBusSubscriber::Receive(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[65536];
  while (true) {
    while (auto item = decoder_.Next()) {
      if (item->kind == wire::StreamDecoder::Item::Kind::kBody) return std::move(item->bytes);
      if (item->kind == wire::StreamDecoder::Item::Kind::kBroken) {
        ::close(fd_);
        fd_ = -1;
        break;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (fd_ < 0) {
      decoder_.Reset();
      fd_ = ConnectStream(bus_.pub_port, bus_.pub_path);
      if (fd_ < 0) {
        // Not there (yet): as Salt's clients, look again soon.
        std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(100)));
        continue;
      }
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      ::close(fd_);
      fd_ = -1;
      continue;
    }
    decoder_.Append(std::string_view(buf, static_cast<std::size_t>(got)));
  }
}

}  // namespace brine::runner
