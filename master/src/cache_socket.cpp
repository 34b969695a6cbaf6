#include "brine/master/cache_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "brine/master/archiver.h"

namespace brine::master {
namespace {

constexpr std::string_view kRequestMagic = "BRQ1";
constexpr std::string_view kReplyMagic = "BRA1";
constexpr std::size_t kHeaderBytes = 20;
constexpr std::size_t kReadChunk = 64 * 1024;

std::uint64_t ReadU64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint32_t ReadU32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void WriteU64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void WriteU32(std::string& out, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

[[noreturn]] void ThrowErrno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// A listening socket at `endpoint`, non-blocking and close-on-exec.
int Listen(const std::string& endpoint) {
  int fd = -1;
  if (endpoint.rfind("ipc://", 0) == 0) {
    // Bound and listening under a temporary name, then renamed into place:
    // a caller that finds the file can connect (between bind and listen it
    // would be refused, and spool for nothing).
    const std::string path = endpoint.substr(6);
    const std::string building = path + ".new";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (building.size() >= sizeof(addr.sun_path)) {
      throw std::system_error(ENAMETOOLONG, std::generic_category(), building);
    }
    std::memcpy(addr.sun_path, building.c_str(), building.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) ThrowErrno("socket");
    (void)::unlink(building.c_str());  // left by a brine-master killed while starting
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0 ||
        ::rename(building.c_str(), path.c_str()) != 0) {
      const int e = errno;
      ::close(fd);
      (void)::unlink(building.c_str());
      errno = e;
      ThrowErrno("listen at " + path);
    }
    return fd;
  } else if (endpoint.rfind("tcp://", 0) == 0) {
    const std::string rest = endpoint.substr(6);
    const auto colon = rest.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (colon == std::string::npos || ::inet_pton(AF_INET, rest.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
      throw std::system_error(EINVAL, std::generic_category(), "not an IPv4 tcp endpoint: " + endpoint);
    }
    addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(rest.substr(colon + 1))));
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) ThrowErrno("socket");
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      ThrowErrno("bind " + endpoint);
    }
  } else {
    throw std::system_error(EINVAL, std::generic_category(), "unknown endpoint " + endpoint);
  }
  if (::listen(fd, 128) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    ThrowErrno("listen " + endpoint);
  }
  return fd;
}

}  // namespace

CacheSocket::CacheSocket(CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox, zmq::socket_t& pub,
                         const Clock& clock, std::function<bool()> store_failing)
    : options_(std::move(options)),
      queue_(queue),
      mailbox_(mailbox),
      pub_(pub),
      clock_(clock),
      store_failing_(std::move(store_failing)),
      listener_(Listen(options_.endpoint)) {}

CacheSocket::~CacheSocket() {
  // Replies not yet written are lost with the connection; a caller that
  // misses one spools, and job-cache writes are idempotent.
  for (auto& [serial, c] : connections_) ::close(c.fd);
  if (listener_ >= 0) ::close(listener_);
}

void CacheSocket::Unbind() {
  if (listener_ < 0) return;
  ::close(listener_);
  listener_ = -1;
}

void CacheSocket::AppendPollItems(std::vector<zmq::pollitem_t>& items) const {
  if (listener_ >= 0) items.push_back({nullptr, listener_, ZMQ_POLLIN, 0});
  for (const auto& [serial, c] : connections_) {
    items.push_back({nullptr, c.fd, static_cast<short>(ZMQ_POLLIN | (c.out.empty() ? 0 : ZMQ_POLLOUT)), 0});
  }
}

void CacheSocket::Serve(const zmq::pollitem_t* items, std::size_t count) {
  std::size_t i = 0;
  bool accept = false;
  if (listener_ >= 0 && count > 0) accept = (items[i++].revents & ZMQ_POLLIN) != 0;
  // The connections in the order AppendPollItems listed them (nothing
  // accepts or closes between the two calls: one thread).
  std::vector<std::pair<std::uint64_t, short>> ready;
  for (auto it = connections_.begin(); it != connections_.end() && i < count; ++it, ++i) {
    if (items[i].revents != 0) ready.emplace_back(it->first, items[i].revents);
  }
  for (const auto& [serial, revents] : ready) {
    auto it = connections_.find(serial);
    if (it == connections_.end()) continue;
    Connection& c = it->second;
    bool keep = true;
    if ((revents & ZMQ_POLLOUT) != 0) keep = Flush(c);
    if (keep && (revents & (ZMQ_POLLIN | ZMQ_POLLERR)) != 0) {
      // What arrived before an end of file is still served.
      const bool open = ReadFrom(c);
      keep = Parse(serial, c) && open;
    }
    if (!keep) Close(serial);
  }
  ShedPartials();
  if (accept) Accept();
}

void CacheSocket::ShedPartials() {
  std::size_t total = 0;
  for (const auto& [serial, c] : connections_) total += c.in.size();
  while (total > options_.max_partial_bytes) {
    auto biggest = connections_.begin();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->second.in.size() > biggest->second.in.size()) biggest = it;
    }
    total -= biggest->second.in.size();
    Close(biggest->first);
  }
}

void CacheSocket::Accept() {
  while (true) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection that went away meanwhile
    if (connections_.size() >= options_.max_connections) {
      ::close(fd);  // the caller spools; its next call tries again
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on a Unix socket
    connections_.emplace(next_serial_++, Connection{.fd = fd, .in = {}, .out = {}});
  }
}

bool CacheSocket::ReadFrom(Connection& c) {
  // Into one scratch buffer, then appended: growing `in` by a whole chunk
  // before each recv would zero 64 KiB per request.
  read_buffer_.resize(kReadChunk);
  while (true) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      c.in.append(read_buffer_.data(), static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < read_buffer_.size()) return true;
      continue;
    }
    if (n == 0) return false;  // the caller closed
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool CacheSocket::Parse(std::uint64_t serial, Connection& c) {
  std::size_t at = 0;
  while (c.in.size() - at >= 4) {
    const std::size_t length = ReadU32(c.in.data() + at);
    if (length > options_.max_request_bytes) return false;
    if (c.in.size() - at - 4 < length) break;
    Handle(serial, c, std::string_view(c.in).substr(at + 4, length));
    at += 4 + length;
  }
  c.in.erase(0, at);
  return Flush(c);
}

void CacheSocket::Handle(std::uint64_t serial, Connection& c, std::string_view body) {
  if (body.size() < 12 || body.substr(0, 4) != kRequestMagic) return;  // nothing to correlate a reply with
  const std::uint64_t id = ReadU64(body.data() + 4);
  if (body.size() < kHeaderBytes) {
    Reply(c, id, AckStatus::kNotTaken, "malformed request header");
    return;
  }
  const Micros sent{std::chrono::microseconds(static_cast<std::int64_t>(ReadU64(body.data() + 12)))};
  const Micros now = clock_.Now();
  AckRequest request;
  request.expires = sent + options_.send_timeout / 2;
  std::vector<std::string_view> frames;
  for (std::size_t at = kHeaderBytes; at < body.size();) {
    const std::size_t n = body.size() - at >= 4 ? ReadU32(body.data() + at) : body.size();
    if (body.size() - at < 4 || body.size() - at - 4 < n) {
      Reply(c, id, AckStatus::kNotTaken, "malformed request: a frame length past its end");
      return;
    }
    frames.push_back(body.substr(at + 4, n));
    at += 4 + n;
  }
  if (now > request.expires) {
    Reply(c, id, AckStatus::kNotTaken, "the request waited longer than half of brine.send_timeout_ms");
    return;
  }
  if (store_failing_()) {
    Reply(c, id, AckStatus::kNotTaken, "the store is refusing writes (see brine-master's log)");
    return;
  }
  if (frames.empty()) {
    Reply(c, id, AckStatus::kStored, "");  // nothing to store: a ping
    return;
  }
  const std::uint64_t token = next_token_++;
  request.token = token;
  request.frames.reserve(frames.size());
  for (const std::string_view bytes : frames) {
    Frame f;
    f.bytes.assign(bytes);
    f.received = now;
    f.source = Frame::Source::kAcked;
    f.ack_token = token;
    request.frames.push_back(std::move(f));
  }
  if (!queue_.PushAcked(std::move(request))) {
    Reply(c, id, AckStatus::kNotTaken, "brine-master's acknowledged queue is full or stopping");
    return;
  }
  pending_.emplace(token, Pending{serial, id});
  for (const std::string_view bytes : frames) {
    if (!IsCacheFrame(bytes)) (void)pub_.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  }
}

void CacheSocket::Reply(Connection& c, std::uint64_t id, AckStatus status, const std::string& reason) {
  WriteU32(c.out, static_cast<std::uint32_t>(kReplyMagic.size() + 8 + 1 + reason.size()));
  c.out += kReplyMagic;
  WriteU64(c.out, id);
  c.out.push_back(static_cast<char>(status));
  c.out += reason;
}

bool CacheSocket::Flush(Connection& c) {
  std::size_t sent = 0;
  while (sent < c.out.size()) {
    // MSG_NOSIGNAL: a caller that went away is an error here, not a SIGPIPE.
    const ssize_t n = ::send(c.fd, c.out.data() + sent, c.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // the rest when poll says so
    return false;
  }
  c.out.erase(0, sent);
  return true;
}

void CacheSocket::Close(std::uint64_t serial) {
  auto it = connections_.find(serial);
  if (it == connections_.end()) return;
  ::close(it->second.fd);
  // Its pending requests are still filed; their replies have nowhere to go.
  connections_.erase(it);
}

void CacheSocket::SendReplies() {
  std::vector<std::uint64_t> broken;
  std::vector<std::uint64_t> touched;
  for (const AckDone& done : mailbox_.Take()) {
    auto it = pending_.find(done.token);
    if (it == pending_.end()) continue;
    const Pending p = it->second;
    pending_.erase(it);
    auto conn = connections_.find(p.connection);
    if (conn == connections_.end()) continue;
    Reply(conn->second, p.id, done.status, done.reason);
    touched.push_back(p.connection);
  }
  for (const std::uint64_t serial : touched) {
    auto conn = connections_.find(serial);
    if (conn != connections_.end() && !conn->second.out.empty() && !Flush(conn->second)) broken.push_back(serial);
  }
  for (const std::uint64_t serial : broken) Close(serial);
}

}  // namespace brine::master
