#include "overflow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "frame_queue.h"
#include "spool.h"

namespace brine::master {
namespace {

// The record grammar is in overflow.h. A record's fixed part:
constexpr std::size_t kHeader = 4 + 4 + 8 + 4 + 4 + 4 + 4;
// The fixed part's bytes that head_crc covers: received .. data_crc.
constexpr std::size_t kHeadCrcFrom = 8;
constexpr std::string_view kRecordMagic = "BOR2";
constexpr std::string_view kFileMagic = "BRINEOVF";
constexpr std::uint32_t kFileVersion = 2;
constexpr std::size_t kFileHeader = 8 + 4;
// The previous version's record: received | parts | damage length | bytes
// length, host order (little-endian on every machine brine runs on).
constexpr std::size_t kV1Header = 8 + 4 + 4 + 4;
// Appends are gathered up to this much before one write; reads take this much
// at a time (or one whole record, when it is bigger).
constexpr std::size_t kChunk = std::size_t{1} << 20;
// Of a damaged run of a saved file, the quarantine keeps at most this much.
constexpr std::size_t kDamageKeep = std::size_t{64} << 10;

template <typename T>
void Put(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof v; ++i) {
    out.push_back(static_cast<char>(static_cast<std::make_unsigned_t<T>>(v) >> (8 * i)));
  }
}

template <typename T>
T Get(std::string_view in, std::size_t at) {
  std::make_unsigned_t<T> v = 0;
  for (std::size_t i = 0; i < sizeof v; ++i) {
    v |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  return static_cast<T>(v);
}

// Reads exactly `size` bytes at `at`; false at the end of the file or on an error.
bool ReadAt(int fd, std::uint64_t at, char* out, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<std::size_t>(n);
    at += static_cast<std::uint64_t>(n);
  }
  return true;
}

// Where the next record magic starts at or after `from`, or `size` when none does.
std::uint64_t FindMagic(int fd, std::uint64_t from, std::uint64_t size) {
  std::string chunk;
  while (from < size) {
    chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, size - from)));
    if (!ReadAt(fd, from, chunk.data(), chunk.size())) return size;
    const std::size_t found = chunk.find(kRecordMagic);
    if (found != std::string::npos) return from + found;
    if (from + chunk.size() >= size) break;
    // A magic may straddle two chunks.
    from += chunk.size() - (kRecordMagic.size() - 1);
  }
  return size;
}

Micros WallNow() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

}  // namespace

namespace {

// A record as the live segments keep it: the saved file's layout with both
// CRCs left 0. The segments never outlive this process (they are unlinked),
// so their checksums are only made when SaveTo writes the saved file: on the
// reader's path, a CRC of every frame slowed it enough for libzmq's pipes to
// pile up 1 MB frames it had not read yet (hardening_test's flood, 60 -> 210
// MiB).
void AppendLiveRecord(std::string& out, const Frame& frame) {
  out += kRecordMagic;
  Put<std::uint32_t>(out, 0);
  Put<std::int64_t>(out, frame.received.time_since_epoch().count());
  Put<std::uint32_t>(out, static_cast<std::uint32_t>(frame.parts));
  Put<std::uint32_t>(out, static_cast<std::uint32_t>(frame.damage.size()));
  Put<std::uint32_t>(out, static_cast<std::uint32_t>(frame.bytes.size()));
  Put<std::uint32_t>(out, 0);
  out += frame.damage;
  out += frame.bytes;
}

}  // namespace

void AppendOverflowRecord(std::string& out, const Frame& frame) {
  std::string head;
  Put<std::int64_t>(head, frame.received.time_since_epoch().count());
  Put<std::uint32_t>(head, static_cast<std::uint32_t>(frame.parts));
  Put<std::uint32_t>(head, static_cast<std::uint32_t>(frame.damage.size()));
  Put<std::uint32_t>(head, static_cast<std::uint32_t>(frame.bytes.size()));
  // Over damage and bytes as they lie in the file; damage is rare (the
  // spool's), so the copy for it costs nothing in the common case.
  Put<std::uint32_t>(head, frame.damage.empty() ? Crc32(frame.bytes) : Crc32(frame.damage + frame.bytes));
  out += kRecordMagic;
  Put<std::uint32_t>(out, Crc32(head));
  out += head;
  out += frame.damage;
  out += frame.bytes;
}

std::string OverflowFileHeader() {
  std::string out(kFileMagic);
  Put<std::uint32_t>(out, kFileVersion);
  return out;
}

DiskOverflow::DiskOverflow(std::filesystem::path dir, std::size_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes), segment_bytes_(std::max(max_bytes / 8, kChunk)) {
  ::close(OpenSegment());
  Adopt();
}

void DiskOverflow::Adopt() {
  const std::filesystem::path path = dir_ / kSavedName;
  // O_NONBLOCK: a FIFO planted under the name must not hang the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) notice_ = path.string() + " is left alone: " + std::strerror(errno);
    return;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    notice_ = path.string() + " is left alone: not a regular file of this user";
    return;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  // The file header, and the first record's magic when there is one.
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, kFileHeader + kRecordMagic.size())), '\0');
  if (!ReadAt(fd, 0, head.data(), head.size())) head.clear();
  std::string how;
  bool copied = false;
  if (head.size() >= kFileHeader && std::string_view(head).substr(0, kFileMagic.size()) == kFileMagic) {
    const auto version = Get<std::uint32_t>(head, kFileMagic.size());
    if (version != kFileVersion) {
      notice_ = path.string() + " is left alone: saved in format version " + std::to_string(version) +
                " (this brine-master reads version " + std::to_string(kFileVersion) + " and the format before it)";
      return;
    }
    copied = AdoptRecords(fd, kFileHeader, size);
  } else if (head.size() == kFileHeader + kRecordMagic.size() && std::string_view(head).substr(kFileHeader) == kRecordMagic) {
    // A damaged file header before whole records: the records still tell.
    how = "; its file header was damaged";
    copied = AdoptRecords(fd, kFileHeader, size);
  } else {
    how = " (saved by the previous version, without checksums)";
    copied = AdoptVersion1(fd, size);
  }
  if (!copied) {
    // Nothing is taken: the file stays for the next start.
    const std::string why = error_;
    Drop();
    adopted_damaged_ = 0;
    notice_ = path.string() + " is left in place: copying its frames failed (" + why + ")";
    return;
  }
  adopted_frames_ = frames_ - adopted_damaged_;
  ::unlink(path.c_str());
  notice_ = std::to_string(adopted_frames_) + " frames saved by the last stop taken from " + path.string() + how;
  if (adopted_damaged_ > 0) {
    notice_ += "; " + std::to_string(adopted_damaged_) + " damaged part" + (adopted_damaged_ == 1 ? "" : "s") +
               " quarantined (" + (adopted_damaged_ == 1 ? "" : "the first: ") + adopt_damage_ + ")";
  }
}

bool DiskOverflow::AdoptDamage(int fd, std::uint64_t at, std::uint64_t size, const std::string& what) {
  Frame f;
  f.received = WallNow();
  f.bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size, kDamageKeep)));
  if (!ReadAt(fd, at, f.bytes.data(), f.bytes.size())) f.bytes.clear();
  f.damage = std::string(kSavedName) + ": " + what + " at byte " + std::to_string(at) + " (" + std::to_string(size) +
             " bytes" + (size > f.bytes.size() ? ", the first " + std::to_string(f.bytes.size()) + " kept" : "") + ")";
  if (adopted_damaged_++ == 0) adopt_damage_ = f.damage;
  return Append(f, true);
}

bool DiskOverflow::AdoptRecords(int fd, std::uint64_t at, std::uint64_t size) {
  std::string head(kHeader, '\0');
  std::string payload;
  std::uint64_t damage_start = size;  // size: none open
  auto end_damage = [&](std::uint64_t end) {
    if (damage_start == size) return true;
    const std::uint64_t start = damage_start;
    damage_start = size;
    return AdoptDamage(fd, start, end - start, "bytes that are not whole records (a damaged length or header)");
  };
  while (at < size) {
    if (size - at >= kHeader && ReadAt(fd, at, head.data(), kHeader) &&
        std::string_view(head).substr(0, kRecordMagic.size()) == kRecordMagic &&
        Get<std::uint32_t>(head, 4) == Crc32(std::string_view(head).substr(kHeadCrcFrom))) {
      // The header is whole, so its lengths are the ones written.
      const std::uint64_t damage = Get<std::uint32_t>(head, 20);
      const std::uint64_t bytes = Get<std::uint32_t>(head, 24);
      if (damage + bytes <= size - at - kHeader) {
        if (!end_damage(at)) return false;
        payload.resize(static_cast<std::size_t>(damage + bytes));
        if (!ReadAt(fd, at + kHeader, payload.data(), payload.size())) return Refuse("cannot read the saved file");
        if (Crc32(payload) != Get<std::uint32_t>(head, 28)) {
          if (!AdoptDamage(fd, at, kHeader + payload.size(), "a record whose data fails its CRC")) return false;
        } else {
          Frame f;
          f.received = Micros(std::chrono::microseconds(Get<std::int64_t>(head, 8)));
          f.parts = static_cast<int>(Get<std::uint32_t>(head, 16));
          f.damage.assign(payload, 0, static_cast<std::size_t>(damage));
          f.bytes.assign(payload, static_cast<std::size_t>(damage));
          if (!Append(f, true)) return false;
        }
        at += kHeader + payload.size();
        continue;
      }
    }
    // Not a record here: what follows, up to the next record magic, is
    // damage (a magic inside a payload fails its header's CRC and is skipped).
    if (damage_start == size) damage_start = at;
    at = FindMagic(fd, at + 1, size);
  }
  return end_damage(size);
}

bool DiskOverflow::AdoptVersion1(int fd, std::uint64_t size) {
  std::string head(kV1Header, '\0');
  std::uint64_t at = 0;
  std::size_t records = 0;
  while (size - at >= kV1Header && ReadAt(fd, at, head.data(), kV1Header)) {
    const std::uint64_t damage = Get<std::uint32_t>(head, 12);
    const std::uint64_t bytes = Get<std::uint32_t>(head, 16);
    if (damage + bytes > size - at - kV1Header) break;
    Frame f;
    f.received = Micros(std::chrono::microseconds(Get<std::int64_t>(head, 0)));
    f.parts = static_cast<int>(Get<std::uint32_t>(head, 8));
    f.damage.resize(static_cast<std::size_t>(damage));
    f.bytes.resize(static_cast<std::size_t>(bytes));
    if (!ReadAt(fd, at + kV1Header, f.damage.data(), f.damage.size()) ||
        !ReadAt(fd, at + kV1Header + damage, f.bytes.data(), f.bytes.size())) {
      return Refuse("cannot read the saved file");
    }
    if (!Append(f, true)) return false;
    at += kV1Header + damage + bytes;
    ++records;
  }
  // That format has no magic to resynchronise on: what follows a length
  // that runs past the end cannot be split into records.
  if (at < size) {
    return AdoptDamage(fd, at, size - at,
                       "bytes after record " + std::to_string(records) +
                           " of a file without checksums that are not a whole record (a damaged length, or a save cut "
                           "short); any frames in them are lost");
  }
  return true;
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
  // The unread records, in order: what rbuf_ holds past rpos_, the segments
  // from read_at_, then wbuf_. Each is written again with its checksums
  // (AppendLiveRecord leaves them 0), one record in memory at a time.
  std::size_t source = 0;  // 0: rbuf_, 1..n: segments_, n+1: wbuf_
  std::uint64_t source_at = rpos_;
  auto take = [&](std::size_t size, std::string& into) {
    into.clear();
    while (into.size() < size) {
      std::string_view avail;
      std::string chunk;
      if (source == 0) {
        avail = std::string_view(rbuf_).substr(static_cast<std::size_t>(source_at));
      } else if (source <= segments_.size()) {
        const Segment& seg = segments_[source - 1];
        const std::uint64_t from = source_at;
        chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size - into.size(), seg.end - from)));
        if (!chunk.empty() && !ReadAt(seg.fd, from, chunk.data(), chunk.size())) {
          abandon(errno != 0 ? errno : EIO, "reading an overflow segment for");
        }
        avail = chunk;
      } else if (source == segments_.size() + 1) {
        avail = std::string_view(wbuf_).substr(static_cast<std::size_t>(source_at));
      } else {
        return false;  // the end, part way through a record: nothing more to save
      }
      const std::size_t n = std::min(avail.size(), size - into.size());
      into.append(avail.substr(0, n));
      source_at += n;
      if (n == avail.size() && into.size() < size) {
        ++source;
        source_at = source == 1 ? read_at_ : 0;
      }
    }
    return true;
  };
  std::string pending = OverflowFileHeader();
  std::string head;
  Frame f;
  for (;;) {
    if (!take(kHeader, head)) break;
    const std::size_t damage = Get<std::uint32_t>(head, 20);
    if (!take(damage, f.damage) || !take(Get<std::uint32_t>(head, 24), f.bytes)) break;
    f.received = Micros(std::chrono::microseconds(Get<std::int64_t>(head, 8)));
    f.parts = static_cast<int>(Get<std::uint32_t>(head, 16));
    AppendOverflowRecord(pending, f);
    if (pending.size() >= kChunk) {
      put(pending.data(), pending.size());
      pending.clear();
    }
  }
  put(pending.data(), pending.size());
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
  AppendLiveRecord(wbuf_, frame);
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
    // The segments are this process's own files, written by Append: their
    // CRCs are for the saved file (Adopt checks them), not checked here.
    const auto received = Get<std::int64_t>(rbuf_, rpos_ + 8);
    const auto parts = Get<std::uint32_t>(rbuf_, rpos_ + 16);
    const std::size_t damage = Get<std::uint32_t>(rbuf_, rpos_ + 20);
    const std::size_t size = Get<std::uint32_t>(rbuf_, rpos_ + 24);
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
