#include "cache_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "archiver.h"
#include "brine/core/atomic_file.h"

namespace brine::master {
namespace {

constexpr std::string_view kRequestMagic = "BRQ1";
constexpr std::string_view kReplyMagic = "BRA1";
constexpr std::string_view kHelloMagic = "BRH1";
constexpr std::string_view kWelcomeMagic = "BRW1";
constexpr std::string_view kProofMagic = "BRP1";
constexpr std::size_t kNonceBytes = 32;
constexpr std::size_t kMacBytes = 32;
// hello and proof are 36 octets; a longer length before the handshake is
// done is not brine's (or is an old plug-in's request).
constexpr std::size_t kMaxHandshakeBytes = 64;
constexpr std::size_t kHeaderBytes = 20;
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerTurn = 16;  // 1 MiB
// After EMFILE or ENFILE the listener rests this long: accept would fail
// again at once, and poll would report the listener ready for ever (a busy
// loop that starved the bus and the metrics).
constexpr std::chrono::milliseconds kAcceptRest{250};
constexpr std::chrono::seconds kListenRetry{1};
constexpr std::chrono::milliseconds kExpiryCheck{100};
constexpr std::chrono::seconds kRefusalLogEvery{10};
constexpr const char* kOldCallerReason =
    "brine-master in ipc_mode tcp needs the key handshake, which this brine Salt plug-in does not speak: "
    "install the plug-in of brine-master's version (contrib/salt/returners/brine.py)";

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

std::string RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("no random bytes from libcrypto");
  }
  return out;
}

[[noreturn]] void ThrowKeyError(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error("brine.cache_key_file " + path.string() + ": " + what);
}

// Makes the key file through core's AtomicFile (a private temp, fsynced, put
// in place only while the name is free). Another process making one first is
// fine: the caller reads that one.
void CreateKey(const std::filesystem::path& path) {
  try {
    AtomicFile file(path, {.mode = 0600, .replace = AtomicFile::Replace::kNever});
    file.Write(RandomBytes(kCacheKeyBytes));
    file.Commit();
  } catch (const FileError& e) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
    ThrowKeyError(path, std::string("cannot create: ") + e.what());
  }
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

std::string LoadOrCreateCacheKey(const std::filesystem::path& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ELOOP) ThrowKeyError(path, "is a symlink; brine reads its key only from a file of its own");
      if (errno != ENOENT) ThrowKeyError(path, std::string("cannot open: ") + std::strerror(errno));
      CreateKey(path);
      continue;
    }
    struct stat st {};
    std::string key(kCacheKeyBytes + 1, '\0');
    ssize_t n = -1;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, key.data(), key.size());
    ::close(fd);
    if (!S_ISREG(st.st_mode)) ThrowKeyError(path, "is not a regular file");
    if (st.st_uid != ::geteuid()) {
      ThrowKeyError(path, "belongs to uid " + std::to_string(st.st_uid) + ", not to brine-master's user (uid " +
                              std::to_string(::geteuid()) + "); remove it and brine-master makes a new one");
    }
    if ((st.st_mode & 077) != 0) {
      ThrowKeyError(path, "others may read it (mode 0" + std::to_string(((st.st_mode >> 6) & 7) * 100 +
                                                                  ((st.st_mode >> 3) & 7) * 10 + (st.st_mode & 7)) +
                              "); it must be 0600: anyone who reads it can file job-cache writes");
    }
    if (n != static_cast<ssize_t>(kCacheKeyBytes)) {
      ThrowKeyError(path, "holds " + std::to_string(n < 0 ? 0 : n) + " octets, not " +
                              std::to_string(kCacheKeyBytes) + "; remove it and brine-master makes a new one");
    }
    key.resize(kCacheKeyBytes);
    return key;
  }
  ThrowKeyError(path, "appears and vanishes while it is read");
}

std::string CacheHandshakeMac(std::string_view key, std::string_view label, std::string_view cnonce,
                              std::string_view snonce) {
  std::string data;
  data.reserve(label.size() + cnonce.size() + snonce.size());
  data.append(label).append(cnonce).append(snonce);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), mac, &length) == nullptr) {
    throw std::runtime_error("HMAC-SHA256 failed in libcrypto");
  }
  return {reinterpret_cast<const char*>(mac), length};
}

CacheSocket::CacheSocket(CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox, zmq::socket_t& pub,
                         const Clock& clock, Logger& log, std::function<bool()> store_failing)
    : options_(std::move(options)),
      queue_(queue),
      mailbox_(mailbox),
      pub_(pub),
      clock_(clock),
      log_(log),
      store_failing_(std::move(store_failing)) {
  if (options_.endpoint.rfind("tcp://", 0) != 0) {
    listener_ = Listen(options_.endpoint);  // brine's own folder: a failure is the operator's to fix
    return;
  }
  if (options_.key.size() != kCacheKeyBytes) {
    throw std::invalid_argument("the tcp job-cache socket needs a key of " + std::to_string(kCacheKeyBytes) + " octets");
  }
  TryListen();
}

void CacheSocket::TryListen() {
  try {
    listener_ = Listen(options_.endpoint);
    if (!listen_error_.empty()) log_.Log(LogLevel::kWarning, "listening for acknowledged job-cache writes at " +
                                                                  options_.endpoint + " now");
    listen_error_.clear();
  } catch (const std::system_error& e) {
    // Another process holds the port (a brine-master still stopping, or one
    // that took it meanwhile): callers spool, and they never hand frames to
    // a process without the key.
    if (listen_error_ != e.what()) {
      log_.Log(LogLevel::kError, std::string("cannot listen for acknowledged job-cache writes (") + e.what() +
                                     "); the Salt plug-in spools until it can; trying again every second");
    }
    listen_error_ = e.what();
    listen_at_ = Steady::now() + kListenRetry;
  }
}

CacheSocket::~CacheSocket() {
  // Replies not yet written are lost with the connection; a caller that
  // misses one spools, and job-cache writes are idempotent.
  for (auto& [serial, c] : connections_) ::close(c.fd);
  if (listener_ >= 0) ::close(listener_);
}

void CacheSocket::Unbind() {
  unbound_ = true;
  if (listener_ < 0) return;
  ::close(listener_);
  listener_ = -1;
}

void CacheSocket::AppendPollItems(std::vector<zmq::pollitem_t>& items) {
  listener_polled_ = listener_ >= 0 && Steady::now() >= resting_until_;
  if (listener_polled_) items.push_back({nullptr, listener_, ZMQ_POLLIN, 0});
  for (const auto& [serial, c] : connections_) {
    const bool read = c.out.size() < options_.max_unread_reply_bytes;
    items.push_back(
        {nullptr, c.fd, static_cast<short>((read ? ZMQ_POLLIN : 0) | (c.out.empty() ? 0 : ZMQ_POLLOUT)), 0});
  }
}

void CacheSocket::Serve(const zmq::pollitem_t* items, std::size_t count) {
  std::size_t i = 0;
  bool accept = false;
  if (listener_polled_ && count > 0) accept = (items[i++].revents & ZMQ_POLLIN) != 0;
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
    if (keep && (revents & (ZMQ_POLLIN | ZMQ_POLLERR)) != 0 && c.out.size() < options_.max_unread_reply_bytes) {
      // What arrived before an end of file is still served.
      const bool open = ReadFrom(c);
      keep = Parse(serial, c) && open;
    } else if (keep && (revents & ZMQ_POLLERR) != 0) {
      keep = false;  // hung up or failed while not read: poll would report it for ever
    } else if (keep && (revents & ZMQ_POLLOUT) != 0) {
      keep = Parse(serial, c);  // requests held back while the replies piled up
    }
    if (!keep) Close(serial);
  }
  ShedPartials();
  CloseExpired();
  if (accept) Accept();
  if (listener_ < 0 && !unbound_ && !listen_error_.empty() && Steady::now() >= listen_at_) TryListen();
}

void CacheSocket::ShedPartials() {
  // Replies count too: a caller that asks and never reads holds them.
  std::size_t total = 0;
  for (const auto& [serial, c] : connections_) total += c.in.size() + c.out.size();
  while (total > options_.max_partial_bytes) {
    auto biggest = connections_.begin();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->second.in.size() + it->second.out.size() > biggest->second.in.size() + biggest->second.out.size()) {
        biggest = it;
      }
    }
    total -= biggest->second.in.size() + biggest->second.out.size();
    Close(biggest->first);
  }
}

void CacheSocket::CloseExpired() {
  const Steady::time_point now = Steady::now();
  if (now < next_expiry_) return;
  next_expiry_ = now + kExpiryCheck;
  std::vector<std::uint64_t> expired;
  std::size_t unproven = 0;
  for (const auto& [serial, c] : connections_) {
    // The caller gives up after its send timeout anyway: a request that
    // takes longer to arrive (one octet a second) only holds a slot.
    if ((!c.in.empty() || c.stage != Stage::kOpen) && now - c.partial > options_.send_timeout) {
      expired.push_back(serial);
      if (c.stage != Stage::kOpen) ++unproven;
    } else if (!c.out.empty() && now - c.moved > options_.send_timeout) {
      expired.push_back(serial);  // replies no one reads
    } else if (c.in.empty() && c.out.empty() && c.waiting == 0 && now - c.active > options_.idle_timeout) {
      expired.push_back(serial);
    }
  }
  for (const std::uint64_t serial : expired) Close(serial);
  if (unproven > 0) {
    LogRefusal(LogLevel::kWarning, std::to_string(unproven) + " connection(s) to " + options_.endpoint +
                                       " did not finish the key handshake within brine.send_timeout_ms; closed");
  }
}

void CacheSocket::LogRefusal(LogLevel level, const std::string& message) {
  const Steady::time_point now = Steady::now();
  if (now - refusal_logged_ < kRefusalLogEvery && refusal_logged_ != Steady::time_point{}) {
    ++refusals_unlogged_;
    return;
  }
  refusal_logged_ = now;
  std::string line = message;
  if (refusals_unlogged_ > 0) {
    line += " (and " + std::to_string(refusals_unlogged_) + " refusals not logged in the last " +
            std::to_string(kRefusalLogEvery.count()) + " s)";
  }
  refusals_unlogged_ = 0;
  log_.Log(level, line);
}

void CacheSocket::Accept() {
  while (true) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        resting_until_ = Steady::now() + kAcceptRest;
        LogRefusal(LogLevel::kError, std::string("accepting at ") + options_.endpoint + ": " + std::strerror(errno) +
                                         "; not accepting for " + std::to_string(kAcceptRest.count()) + " ms");
      }
      return;  // EAGAIN, or a connection that went away meanwhile
    }
    if (connections_.size() >= options_.max_connections) {
      ::close(fd);  // the caller spools; its next call tries again
      LogRefusal(LogLevel::kWarning, "more than " + std::to_string(options_.max_connections) + " connections to " +
                                         options_.endpoint + "; closing the newest");
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on a Unix socket
    const Steady::time_point now = Steady::now();
    Connection c;
    c.fd = fd;
    c.stage = options_.key.empty() ? Stage::kOpen : Stage::kHello;
    c.partial = c.moved = c.active = now;
    connections_.emplace(next_serial_++, std::move(c));
  }
}

bool CacheSocket::ReadFrom(Connection& c) {
  // Into one scratch buffer, then appended: growing `in` by a whole chunk
  // before each recv would zero 64 KiB per request.
  // At most kReadsPerTurn chunks: a caller that sends without pause must not
  // grow `in` past what Parse and the budgets look at (the rest waits in the
  // kernel, and the next turn reads it).
  read_buffer_.resize(kReadChunk);
  for (int reads = 0; reads < kReadsPerTurn;) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      c.active = Steady::now();
      if (c.in.empty() && c.stage == Stage::kOpen) c.partial = c.active;
      c.in.append(read_buffer_.data(), static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < read_buffer_.size()) return true;
      ++reads;
      continue;
    }
    if (n == 0) return false;  // the caller closed
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

bool CacheSocket::Parse(std::uint64_t serial, Connection& c) {
  std::size_t at = 0;
  // Requests wait in `in` while the replies pile up: the caller is not
  // reading them, and each one handled would add to them.
  while (c.in.size() - at >= 4 && c.out.size() < options_.max_unread_reply_bytes) {
    const std::size_t length = ReadU32(c.in.data() + at);
    const std::string_view rest = std::string_view(c.in).substr(at + 4);
    if (c.stage != Stage::kOpen) {
      if (rest.size() >= 4 && rest.substr(0, 4) == kRequestMagic) {
        // A plug-in older than the handshake: answered, so that it logs why.
        if (rest.size() < 12 && rest.size() < length) break;  // its id is on the way
        if (rest.size() >= 12 && length >= 12) Reply(c, ReadU64(rest.data() + 4), AckStatus::kNotTaken, kOldCallerReason);
        (void)Flush(c);
        LogRefusal(LogLevel::kWarning, std::string("a request without the key handshake at ") + options_.endpoint +
                                           ", refused: " + kOldCallerReason);
        return false;
      }
      if (length > kMaxHandshakeBytes) {
        LogRefusal(LogLevel::kWarning, "a connection to " + options_.endpoint +
                                           " did not open with brine's key handshake; closed");
        return false;
      }
      if (rest.size() < length) break;
      bool proven = false;
      try {
        proven = Handshake(c, rest.substr(0, length));
      } catch (const std::exception& e) {  // libcrypto failed: this connection only
        LogRefusal(LogLevel::kError, std::string("the key handshake at ") + options_.endpoint + ": " + e.what());
      }
      if (!proven) return false;
      at += 4 + length;
      continue;
    }
    if (length > options_.max_request_bytes) return false;
    if (rest.size() < length) break;
    Handle(serial, c, rest.substr(0, length));
    at += 4 + length;
  }
  if (at > 0) {
    c.in.erase(0, at);
    if (c.stage == Stage::kOpen) c.partial = Steady::now();  // what is left began with the last read
  }
  return Flush(c);
}

bool CacheSocket::Handshake(Connection& c, std::string_view body) {
  if (c.stage == Stage::kHello) {
    if (body.size() != kHelloMagic.size() + kNonceBytes || body.substr(0, 4) != kHelloMagic) {
      LogRefusal(LogLevel::kWarning, "a connection to " + options_.endpoint +
                                         " did not open with brine's key handshake; closed");
      return false;
    }
    c.cnonce.assign(body.substr(4));
    c.snonce = RandomBytes(kNonceBytes);
    if (c.out.empty()) c.moved = Steady::now();
    WriteU32(c.out, static_cast<std::uint32_t>(kWelcomeMagic.size() + kNonceBytes + kMacBytes));
    c.out += kWelcomeMagic;
    c.out += c.snonce;
    c.out += CacheHandshakeMac(options_.key, kCacheServerLabel, c.cnonce, c.snonce);
    c.stage = Stage::kProof;
    return true;
  }
  const std::string expected = CacheHandshakeMac(options_.key, kCacheClientLabel, c.cnonce, c.snonce);
  if (body.size() != kProofMagic.size() + kMacBytes || body.substr(0, 4) != kProofMagic ||
      CRYPTO_memcmp(body.data() + 4, expected.data(), kMacBytes) != 0) {
    LogRefusal(LogLevel::kWarning, "a connection to " + options_.endpoint +
                                       " did not prove that it holds brine's key (brine.cache_key_file); closed "
                                       "before it could file anything");
    return false;
  }
  c.stage = Stage::kOpen;
  c.cnonce.clear();
  c.snonce.clear();
  return true;
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
  // A time ahead of this clock counts as now: the caller shares the host's
  // clock, and sent + timeout must not overflow (sent_us near INT64_MAX).
  request.expires = std::min(sent, now) + options_.send_timeout / 2;
  std::vector<std::string_view> frames;
  for (std::size_t at = kHeaderBytes; at < body.size();) {
    const std::size_t n = body.size() - at >= 4 ? ReadU32(body.data() + at) : body.size();
    if (body.size() - at < 4 || body.size() - at - 4 < n) {
      Reply(c, id, AckStatus::kNotTaken, "malformed request: a frame length past its end");
      return;
    }
    if (frames.size() >= options_.max_frames_per_request) {
      // Empty frames cost nothing on the wire and a Frame each here.
      Reply(c, id, AckStatus::kNotTaken,
            "more than " + std::to_string(options_.max_frames_per_request) + " frames in one request");
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
  ++c.waiting;
  for (const std::string_view bytes : frames) {
    if (!IsCacheFrame(bytes)) (void)pub_.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  }
}

void CacheSocket::Reply(Connection& c, std::uint64_t id, AckStatus status, const std::string& reason) {
  if (c.out.empty()) c.moved = Steady::now();
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
  if (sent > 0) {
    c.out.erase(0, sent);
    c.moved = c.active = Steady::now();
  }
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
    if (conn->second.waiting > 0) --conn->second.waiting;
    Reply(conn->second, p.id, done.status, done.reason);
    touched.push_back(p.connection);
  }
  for (const std::uint64_t serial : touched) {
    // Parse, not only Flush: requests held back while replies piled up are
    // handled once these go out (no new input may come to wake them).
    auto conn = connections_.find(serial);
    if (conn != connections_.end() && !Parse(serial, conn->second)) broken.push_back(serial);
  }
  for (const std::uint64_t serial : broken) Close(serial);
}

}  // namespace brine::master
