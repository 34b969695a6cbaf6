#include "attached_bus.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "brine/core/atomic_file.h"

namespace brine::master {
namespace {

constexpr std::size_t kReadBytes = 256 * 1024;

std::string UserName() {
  const uid_t uid = ::geteuid();
  if (const passwd* pw = ::getpwuid(uid)) return std::string(pw->pw_name) + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

// A connected, non-blocking socket to `bus`'s publisher, or -1 with errno set.
int Connect(const config::SaltBus& bus) {
  int fd = -1;
  int rc = -1;
  if (bus.pub_port != 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(bus.pub_port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = bus.pub_path.string();
    if (p.size() >= sizeof(addr.sun_path)) {
      errno = ENAMETOOLONG;
      return -1;
    }
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace

AttachedBus::AttachedBus(AttachOptions options, GapMailbox& gaps, AttachStatus& status, Logger& log,
                         const Clock& clock)
    : options_(std::move(options)), gaps_(gaps), status_(status), log_(log), clock_(clock),
      decoder_(options_.max_frame_bytes), read_buffer_(kReadBytes, '\0') {
  if (!options_.bus.pub_path.empty()) watch_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

AttachedBus::~AttachedBus() {
  if (fd_ >= 0) ::close(fd_);
  if (watch_fd_ >= 0) ::close(watch_fd_);
}

void AttachedBus::Watch() {
  if (watch_fd_ < 0 || watching_) return;
  // The folder may not exist before Salt's first start: retried each attempt.
  watching_ = ::inotify_add_watch(watch_fd_, options_.bus.pub_path.parent_path().c_str(),
                                  IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) >= 0;
}

void AttachedBus::OnWake() {
  alignas(inotify_event) char buf[4096];
  while (true) {
    const ssize_t n = ::read(watch_fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      // The folder itself went (or the watch did): set it again later.
      if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) watching_ = false;
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  next_attempt_ = std::chrono::steady_clock::now();
  Maintain();
}

std::optional<ino_t> AttachedBus::SocketInode() const {
  if (options_.bus.pub_path.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(options_.bus.pub_path.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}

void AttachedBus::OpenGap(store::GapReason reason) {
  if (gap_open_) return;
  gap_open_ = true;
  ++status_.gaps;
  gaps_.Post({.kind = GapOp::Kind::kOpen, .reason = reason, .at = clock_.Now(), .last_frame = last_frame_});
}

void AttachedBus::Maintain() {
  const auto now = std::chrono::steady_clock::now();
  if (stopped_) return;
  if (fd_ < 0) {
    if (now >= next_attempt_) TryConnect();
    return;
  }
  if (options_.bus.pub_path.empty() || now < next_inode_check_) return;
  next_inode_check_ = now + kInodeCheckInterval;
  const std::optional<ino_t> inode = SocketInode();
  // A missing file is the master going away: its EOF says so. A new inode is
  // a new publisher, whatever this connection still shows.
  if (inode && inode_ && *inode != *inode_) {
    Detach(store::GapReason::kSocketReplaced, "the socket file " + options_.bus.PubName() + " was replaced");
    TryConnect();
  }
}

void AttachedBus::TryConnect() {
  const auto now = std::chrono::steady_clock::now();
  next_attempt_ = now + kRetryInterval;
  Watch();
  const std::optional<ino_t> inode = SocketInode();
  const int fd = Connect(options_.bus);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      OpenGap(store::GapReason::kPermissionDenied);
      if (!episode_logged_ || now - last_permission_log_ >= kPermissionLogInterval) {
        episode_logged_ = true;
        last_permission_log_ = now;
        log_.Log(LogLevel::kError,
                 "cannot read the Salt master's event bus " + options_.bus.PubName() + " as user " + UserName() +
                     ": permission denied; run brine-master as the master's user (the config's `user`: salt "
                     "for the onedir packages since 3006.3, else root), or set publisher_acl in the master's "
                     "config (the socket then becomes 0660); retrying every second");
      }
      return;
    }
    OpenGap(store::GapReason::kMasterWentAway);
    if (!episode_logged_) {
      episode_logged_ = true;
      log_.Log(LogLevel::kWarning, "the Salt master's event bus " + options_.bus.PubName() + " is not there (" +
                                       std::strerror(err) + "); waiting for it, retrying every second");
    }
    return;
  }
  fd_ = fd;
  inode_ = inode;
  next_inode_check_ = now + kInodeCheckInterval;
  decoder_.Reset();
  stalled_ = false;
  episode_logged_ = false;
  if (ever_attached_) ++status_.reconnects;
  status_.attached = 1;
  status_.since_us = ToUnixMicros(clock_.Now());
  // The first attach also ends the gap an earlier run left open (its stop).
  if (gap_open_ || !ever_attached_) {
    gap_open_ = false;
    gaps_.Post({.kind = GapOp::Kind::kClose, .at = clock_.Now()});
  }
  ever_attached_ = true;
  log_.Log(LogLevel::kInfo, "attached to the Salt master's event bus " + options_.bus.PubName());
}

void AttachedBus::Detach(store::GapReason reason, const std::string& why) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  inode_.reset();
  decoder_.Reset();
  status_.attached = 0;
  status_.since_us = ToUnixMicros(clock_.Now());
  OpenGap(reason);
  episode_logged_ = true;
  log_.Log(reason == store::GapReason::kMasterStopped ? LogLevel::kInfo : LogLevel::kWarning,
           "detached from the Salt master's event bus: " + why + " (" + std::string(store::GapReasonText(reason)) +
               "); reconnecting every second");
  next_attempt_ = std::chrono::steady_clock::now();  // a restarted master may be there already
}

void AttachedBus::Stop() {
  stopped_ = true;
  if (fd_ >= 0) {
    Detach(store::GapReason::kMasterStopped, "brine-master stops");
  } else if (gap_open_) {
    // Already in a gap: it goes on through the stop, with its first reason.
  } else {
    OpenGap(store::GapReason::kMasterStopped);
  }
}

void AttachedBus::RecordFraming(wire::StreamFraming framing) {
  status_.framing = framing == wire::StreamFraming::kPrefixed ? 2 : 1;
  if (framing_written_ == framing || options_.framing_file.empty()) return;
  framing_written_ = framing;
  try {
    AtomicFile file(options_.framing_file, {.mode = 0644, .sync = AtomicFile::Sync::kNone});
    file.Write(std::string(wire::FramingName(framing)) + "\n");
    file.Commit();
  } catch (const std::exception& e) {
    log_.Log(LogLevel::kWarning, std::string("the bus framing could not be recorded for brine-run: ") + e.what());
  }
}

std::size_t AttachedBus::Read(FrameQueue& queue, const Archiver& archiver, std::size_t max_frames) {
  std::size_t n = 0;
  bool has_room = queue.HasRoom();
  while (fd_ >= 0 && has_room && n < max_frames) {
    const ssize_t got = ::read(fd_, read_buffer_.data(), read_buffer_.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        stalled_ = false;  // caught up: whatever the master sent, we read
        break;
      }
      Detach(stalled_ ? store::GapReason::kFellBehind : store::GapReason::kMasterWentAway,
             std::string("read: ") + std::strerror(errno));
      break;
    }
    if (got == 0) {
      // The master closes a reader it dropped for falling behind the same way
      // it closes them all at a stop: only our own stall tells them apart.
      Detach(stalled_ ? store::GapReason::kFellBehind : store::GapReason::kMasterWentAway,
             stalled_ ? "the master dropped this reader while brine's queue and overflow file were full"
                      : "end of stream (the master stopped or restarted)");
      break;
    }
    decoder_.Append(std::string_view(read_buffer_.data(), static_cast<std::size_t>(got)));
    while (std::optional<wire::StreamDecoder::Item> item = decoder_.Next()) {
      Frame frame;
      frame.received = clock_.Now();
      frame.bytes = std::move(item->bytes);
      const bool broken = item->kind == wire::StreamDecoder::Item::Kind::kBroken;
      if (item->kind == wire::StreamDecoder::Item::Kind::kBody) {
        last_frame_ = frame.received;
        RecordFraming(item->framing);
      } else {
        frame.damage = "modern bus (" + std::string(wire::FramingName(item->framing)) + "): " + item->reason;
      }
      ++n;
      if (queue.Spill(frame)) {
        has_room = queue.HasRoom();
      } else {
        try {
          archiver.Prepare(frame);
        } catch (const std::exception&) {
          frame.prepared.reset();
        }
        has_room = queue.Push(std::move(frame));
      }
      if (broken) {
        Detach(store::GapReason::kUndecodableStream, "a bare frame could not be read: " + item->reason);
        break;
      }
    }
  }
  if (!has_room) stalled_ = true;
  return n;
}

}  // namespace brine::master
