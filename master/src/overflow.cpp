#include "brine/master/overflow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "brine/master/frame_queue.h"

namespace brine::master {
namespace {

// A record: received (int64 us) | parts (u32) | damage length (u32) |
// bytes length (u32) | damage | bytes, integers in host order: the file
// never outlives the process that wrote it.
constexpr std::size_t kHeader = 8 + 4 + 4 + 4;
// Appends are gathered up to this much before one write; reads take this much
// at a time (or one whole record, when it is bigger).
constexpr std::size_t kChunk = std::size_t{1} << 20;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T Get(const std::string& in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

DiskOverflow::DiskOverflow(std::filesystem::path dir, std::size_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes), segment_bytes_(std::max(max_bytes / 8, kChunk)) {
  ::close(OpenSegment());
  Adopt();
}

void DiskOverflow::Adopt() {
  const std::filesystem::path path = dir_ / kSavedName;
  // O_NONBLOCK: a FIFO planted under the name must not hang the open.
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) notice_ = path.string() + " is left alone: " + std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    notice_ = path.string() + " is left alone: not a regular file of this user";
    return;
  }
  // Count whole records; bytes after the last one (a save cut short cannot be
  // renamed into place, so only damage makes them) are overwritten by appends.
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t at = 0;
  std::string header(kHeader, '\0');
  while (at + kHeader <= size) {
    if (::pread(fd, header.data(), kHeader, static_cast<off_t>(at)) != static_cast<ssize_t>(kHeader)) break;
    const std::uint64_t record = kHeader + Get<std::uint32_t>(header, 12) + std::uint64_t{Get<std::uint32_t>(header, 16)};
    if (at + record > size) break;
    at += record;
    ++frames_;
  }
  bytes_ = static_cast<std::size_t>(at);
  adopted_frames_ = frames_;
  ::unlink(path.c_str());
  segments_.push_back({fd, at});
  notice_ = std::to_string(frames_) + " frames saved by the last stop taken from " + path.string();
  if (at < size) notice_ += " (" + std::to_string(size - at) + " bytes after the last whole frame ignored)";
}

void DiskOverflow::SaveTo() {
  const std::filesystem::path path = dir_ / kSavedName;
  const std::filesystem::path temp = dir_ / (std::string(kSavedName) + ".new");
  auto fail = [&](const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what + " " + temp.string());
  };
  const int out = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) fail("cannot create");
  // Any failure below leaves no temp file and forgets nothing.
  auto abandon = [&](int err, const std::string& what) {
    ::close(out);
    ::unlink(temp.c_str());
    errno = err;
    fail(what);
  };
  std::uint64_t written = 0;
  auto put = [&](const char* data, std::size_t size) {
    if (!WriteAll(out, written, data, size)) abandon(EIO, error_ + "; writing");
    written += size;
  };
  put(rbuf_.data() + rpos_, rbuf_.size() - rpos_);
  std::string chunk;
  bool first = true;
  for (const Segment& seg : segments_) {
    for (std::uint64_t at = first ? read_at_ : 0; at < seg.end;) {
      chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, seg.end - at)));
      const ssize_t n = ::pread(seg.fd, chunk.data(), chunk.size(), static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) abandon(n < 0 ? errno : EIO, "reading an overflow segment for");
      put(chunk.data(), static_cast<std::size_t>(n));
      at += static_cast<std::uint64_t>(n);
    }
    first = false;
  }
  put(wbuf_.data(), wbuf_.size());
  if (::fsync(out) != 0) abandon(errno, "cannot fsync");
  ::close(out);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("cannot rename");
  const int dirfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd >= 0) {
    (void)::fsync(dirfd);
    ::close(dirfd);
  }
  Drop();
}

DiskOverflow::~DiskOverflow() {
  for (const Segment& s : segments_) ::close(s.fd);
}

int DiskOverflow::OpenSegment() const {
  int fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // File systems without O_TMPFILE: a named file, unlinked before it is used.
  if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
    std::string name = (dir_ / ".brine-overflow-XXXXXX").string();
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) {
      ::unlink(name.c_str());
      return fd;
    }
  }
  throw std::system_error(errno, std::generic_category(), "cannot create an overflow file in " + dir_.string());
}

bool DiskOverflow::Refuse(const std::string& why) {
  error_ = why;
  return false;
}

bool DiskOverflow::WriteAll(int fd, std::uint64_t at, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "writing an overflow file in " + dir_.string() + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
    at += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool DiskOverflow::Flush() {
  if (wbuf_.empty()) return true;
  Segment& last = segments_.back();
  // A write that fails part way leaves bytes past `end`, which the next write
  // overwrites: `end` moves only over whole writes.
  if (!WriteAll(last.fd, last.end, wbuf_.data(), wbuf_.size())) return false;
  last.end += wbuf_.size();
  wbuf_.clear();
  return true;
}

bool DiskOverflow::Append(const Frame& frame, bool over_budget) {
  if (!error_.empty()) return false;
  const std::size_t record = kHeader + frame.damage.size() + frame.bytes.size();
  if (!over_budget && bytes_ + record > max_bytes_) return false;
  // A new segment starts between records, with nothing left to write.
  if (!segments_.empty() && segments_.back().end + wbuf_.size() >= segment_bytes_ && !Flush()) return false;
  if (segments_.empty() || segments_.back().end >= segment_bytes_) {
    try {
      segments_.push_back({OpenSegment(), 0});
    } catch (const std::system_error& e) {
      return Refuse(e.what());
    }
  }
  Put<std::int64_t>(wbuf_, frame.received.time_since_epoch().count());
  Put<std::uint32_t>(wbuf_, static_cast<std::uint32_t>(frame.parts));
  Put<std::uint32_t>(wbuf_, static_cast<std::uint32_t>(frame.damage.size()));
  Put<std::uint32_t>(wbuf_, static_cast<std::uint32_t>(frame.bytes.size()));
  wbuf_ += frame.damage;
  wbuf_ += frame.bytes;
  ++frames_;
  bytes_ += record;
  // The record is taken even when this write fails: it stays in wbuf_, which
  // the reads reach after the segments (Fill), and appends stop until the
  // overflow is read empty.
  if (wbuf_.size() >= kChunk) (void)Flush();
  return true;
}

void DiskOverflow::Fill(std::size_t want) {
  if (rbuf_.size() - rpos_ >= want) return;
  // Parsed bytes go only when more must be read: one move per chunk.
  rbuf_.erase(0, rpos_);
  rpos_ = 0;
  while (rbuf_.size() < want) {
    if (!segments_.empty()) {
      Segment& first = segments_.front();
      if (read_at_ < first.end) {
        const std::size_t chunk =
            static_cast<std::size_t>(std::min<std::uint64_t>(std::max(want - rbuf_.size(), kChunk), first.end - read_at_));
        const std::size_t old = rbuf_.size();
        rbuf_.resize(old + chunk);
        std::size_t got = 0;
        while (got < chunk) {
          const ssize_t n = ::pread(first.fd, rbuf_.data() + old + got, chunk - got, static_cast<off_t>(read_at_ + got));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            throw std::system_error(n < 0 ? errno : EIO, std::generic_category(),
                                    "reading an overflow file in " + dir_.string());
          }
          got += static_cast<std::size_t>(n);
        }
        read_at_ += chunk;
        continue;
      }
      if (segments_.size() > 1) {
        ::close(first.fd);
        segments_.pop_front();
        read_at_ = 0;
        continue;
      }
    }
    // The last segment is read to its end: the rest is still in wbuf_, whose
    // bytes belong just there (the next Flush writes new ones after `end`).
    if (wbuf_.empty()) {
      throw std::system_error(EIO, std::generic_category(), "an overflow record runs past the data written");
    }
    rbuf_ += wbuf_;
    wbuf_.clear();
  }
}

std::size_t DiskOverflow::ReadUpTo(std::size_t max_frames, std::size_t max_bytes, std::vector<Frame>& out) {
  std::size_t n = 0;
  std::size_t taken = 0;
  while (n < max_frames && frames_ > 0 && (n == 0 || taken < max_bytes)) {
    Fill(kHeader);
    const auto received = Get<std::int64_t>(rbuf_, rpos_);
    const auto parts = Get<std::uint32_t>(rbuf_, rpos_ + 8);
    const std::size_t damage = Get<std::uint32_t>(rbuf_, rpos_ + 12);
    const std::size_t size = Get<std::uint32_t>(rbuf_, rpos_ + 16);
    const std::size_t record = kHeader + damage + size;
    Fill(record);  // may move rbuf_'s contents: rpos_ is read again below
    Frame f;
    f.received = Micros(std::chrono::microseconds(received));
    f.parts = static_cast<int>(parts);
    f.damage.assign(rbuf_, rpos_ + kHeader, damage);
    f.bytes.assign(rbuf_, rpos_ + kHeader + damage, size);
    out.push_back(std::move(f));
    rpos_ += record;
    bytes_ -= record;
    taken += record;
    --frames_;
    ++n;
  }
  if (frames_ == 0) Reset();
  return n;
}

void DiskOverflow::Reset() {
  for (const Segment& s : segments_) ::close(s.fd);
  segments_.clear();
  read_at_ = 0;
  wbuf_.clear();
  rbuf_.clear();
  rpos_ = 0;
  bytes_ = 0;
  error_.clear();
}

}  // namespace brine::master
