#include "spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <optional>
#include <system_error>
#include <utility>

namespace brine::master {
namespace {

constexpr std::string_view kMagic = "BRS1";
constexpr std::size_t kHeader = 8;   // magic + length
constexpr std::size_t kTrailer = 4;  // crc
constexpr std::string_view kSuffix = ".frames";
constexpr std::string_view kTakenSuffix = ".frames.taken";
constexpr std::size_t kWindow = std::size_t{1} << 20;

// The running CRC-32 state (start 0xFFFFFFFF, finish ^ 0xFFFFFFFF) after
// `bytes`. zlib's crc32 is the same CRC (IEEE 802.3, as Python's zlib.crc32,
// which the plug-in writes with) but takes and gives the finished value, and
// runs several bytes a cycle: the overflow file checks every frame it takes,
// so a byte-at-a-time table slowed the reader enough for libzmq's pipes to
// hold 1 MB frames it had not read yet (hardening_test's flood: 210 MiB).
std::uint32_t CrcUpdate(std::uint32_t c, std::string_view bytes) {
  uLong crc = c ^ 0xFFFFFFFFu;
  while (!bytes.empty()) {
    const auto n = static_cast<uInt>(std::min<std::size_t>(bytes.size(), std::size_t{1} << 30));
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), n);
    bytes.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(crc) ^ 0xFFFFFFFFu;
}

std::uint32_t ReadU32(std::string_view b, std::size_t at) {
  return (std::uint32_t{static_cast<unsigned char>(b[at])} << 24) |
         (std::uint32_t{static_cast<unsigned char>(b[at + 1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(b[at + 2])} << 8) |
         std::uint32_t{static_cast<unsigned char>(b[at + 3])};
}

void PutU32(std::string& out, std::uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void ThrowErrno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// A spool file is a regular file of this process's user; anything else named
// like one (a FIFO would block the open or the read for ever, a symlink would
// point elsewhere, another user's file is not the plug-in's) is left alone.
bool IsOwnRegularFile(const struct stat& st) { return S_ISREG(st.st_mode) && st.st_uid == ::geteuid(); }

// Opens `name` in the folder `dir_fd` and locks it; nullopt for a file that
// is not one of ours (see IsOwnRegularFile) or is gone.
std::optional<TakenSpoolFile> OpenLocked(int dir_fd, const std::filesystem::path& dir, const std::string& name) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO || errno == ENOENT) return std::nullopt;
    ThrowErrno("cannot open " + (dir / name).string());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !IsOwnRegularFile(st)) {
    ::close(fd);
    return std::nullopt;
  }
  TakenSpoolFile taken(dir / name, fd);
  // Waits for a writer that still holds the file from before the rename.
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) ThrowErrno("cannot lock " + (dir / name).string());
  }
  return taken;
}

// Closes a descriptor on every path out.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::uint32_t Crc32(std::string_view bytes) { return CrcUpdate(0xFFFFFFFFu, bytes) ^ 0xFFFFFFFFu; }

void AppendSpoolRecord(std::string& out, std::string_view frame) {
  out.append(kMagic);
  PutU32(out, static_cast<std::uint32_t>(frame.size()));
  out.append(frame);
  PutU32(out, Crc32(frame));
}

SpoolContents ParseSpool(std::string_view bytes) {
  SpoolContents out;
  std::size_t pos = 0;
  std::size_t damage_start = std::string_view::npos;
  auto end_damage = [&](std::size_t at) {
    if (damage_start != std::string_view::npos) {
      out.damaged.emplace_back(bytes.substr(damage_start, at - damage_start));
      damage_start = std::string_view::npos;
    }
  };
  while (pos < bytes.size()) {
    bool ok = false;
    std::size_t next = pos;
    if (bytes.size() - pos >= kHeader + kTrailer && bytes.substr(pos, kMagic.size()) == kMagic) {
      const std::size_t len = ReadU32(bytes, pos + 4);
      if (len <= bytes.size() - pos - kHeader - kTrailer) {
        const std::string_view payload = bytes.substr(pos + kHeader, len);
        if (ReadU32(bytes, pos + kHeader + len) == Crc32(payload)) {
          end_damage(pos);
          out.frames.emplace_back(payload);
          next = pos + kHeader + len + kTrailer;
          ok = true;
        }
      }
    }
    if (!ok) {
      // Not a record here: skip to the next magic (at least one byte on).
      if (damage_start == std::string_view::npos) damage_start = pos;
      const std::size_t found = bytes.find(kMagic, pos + 1);
      next = found == std::string_view::npos ? bytes.size() : found;
    }
    pos = next;
  }
  end_damage(bytes.size());
  return out;
}

TakenSpoolFile::TakenSpoolFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    size_ = static_cast<std::uint64_t>(st.st_size);
    key_ = path_.filename().string() + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" +
           std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);
  }
}

TakenSpoolFile::TakenSpoolFile(TakenSpoolFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      key_(std::move(other.key_)) {}

TakenSpoolFile::~TakenSpoolFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::string TakenSpoolFile::ReadAll() const {
  std::string out;
  char buf[1 << 16];
  off_t at = 0;
  while (true) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("cannot read " + path_.string());
    }
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
}

void TakenSpoolFile::Remove() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) ThrowErrno("cannot remove " + path_.string());
}

std::vector<TakenSpoolFile> TakeSpoolFiles(const std::filesystem::path& dir) {
  std::vector<std::string> skipped;
  return TakeSpoolFiles(dir, skipped);
}

std::vector<TakenSpoolFile> TakeSpoolFiles(const std::filesystem::path& dir, std::vector<std::string>& skipped) {
  std::vector<TakenSpoolFile> out;
  // The folder itself, never through a symlink, and only our own: names are
  // then resolved against this descriptor, whatever happens to the path.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    if (errno == ENOENT) return out;
    ThrowErrno("cannot open the spool folder " + dir.string() + " (it must be a directory, not a symlink)");
  }
  FdCloser closer{dir_fd};
  struct stat dst {};
  if (::fstat(dir_fd, &dst) != 0) ThrowErrno("cannot stat " + dir.string());
  if (dst.st_uid != ::geteuid()) {
    throw std::system_error(EPERM, std::generic_category(),
                            "the spool folder " + dir.string() + " belongs to uid " + std::to_string(dst.st_uid) +
                                ", not to this process's user (uid " + std::to_string(::geteuid()) + ")");
  }
  std::vector<std::string> names;
  {
    // fdopendir takes its descriptor over: give it a copy.
    const int list_fd = ::dup(dir_fd);
    if (list_fd < 0) ThrowErrno("cannot list " + dir.string());
    DIR* d = ::fdopendir(list_fd);
    if (d == nullptr) {
      ::close(list_fd);
      ThrowErrno("cannot list " + dir.string());
    }
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
      errno = 0;
    }
    const int list_errno = errno;
    ::closedir(d);
    if (list_errno != 0) throw std::system_error(list_errno, std::generic_category(), "cannot list " + dir.string());
  }
  std::sort(names.begin(), names.end());
  const auto own_regular = [&](const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && IsOwnRegularFile(st);
  };
  const auto open_locked = [&](const std::string& name) {
    try {
      if (auto file = OpenLocked(dir_fd, dir, name)) out.push_back(std::move(*file));
    } catch (const std::system_error& e) {
      skipped.push_back(std::string(e.what()) + "; it is left where it is");
    }
  };
  for (const std::string& name : names) {
    if (!EndsWith(name, kTakenSuffix) || !own_regular(name)) continue;
    open_locked(name);
  }
  for (const std::string& name : names) {
    if (!EndsWith(name, kSuffix) || !own_regular(name)) continue;
    const std::string taken = name + ".taken";
    if (std::find(names.begin(), names.end(), taken) != names.end()) continue;  // next pass
    if (::renameat(dir_fd, name.c_str(), dir_fd, taken.c_str()) != 0) {
      if (errno == ENOENT) continue;
      // One file that cannot be taken (a name of 250 bytes or more has no
      // room for ".taken") must not hold up the others.
      skipped.push_back("cannot take " + (dir / name).string() + " (rename to .taken: " +
                        std::generic_category().message(errno) + "); it is left where it is");
      continue;
    }
    open_locked(taken);
  }
  return out;
}

SpoolReader::SpoolReader(int fd, std::uint64_t size, std::uint64_t offset, std::size_t max_record_bytes)
    : fd_(fd), size_(size), pos_(std::min(offset, size)), max_record_bytes_(max_record_bytes) {}

void SpoolReader::ReadAt(std::uint64_t at, std::size_t n, std::string& out) {
  out.resize(n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, out.data() + got, n - got, static_cast<off_t>(at + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      ThrowErrno("cannot read the spool file");
    }
    if (r == 0) break;  // shorter than its size said
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
}

std::string_view SpoolReader::Peek(std::uint64_t at, std::size_t n) {
  if (at >= size_) return {};
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - at));
  if (at >= window_at_ && at + n <= window_at_ + window_.size()) {
    return std::string_view(window_).substr(static_cast<std::size_t>(at - window_at_), n);
  }
  if (n > kWindow) {
    ReadAt(at, n, big_);
    return big_;
  }
  window_at_ = at;
  ReadAt(at, static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, size_ - at)), window_);
  return std::string_view(window_).substr(0, std::min(n, window_.size()));
}

std::optional<SpoolItem> SpoolReader::TryRecord(std::uint64_t at) {
  const std::string_view header = Peek(at, kHeader);
  if (header.size() < kHeader || header.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const std::uint64_t len = ReadU32(header, 4);
  if (len + kHeader + kTrailer > size_ - at) return std::nullopt;
  SpoolItem item;
  item.length = len;
  item.end = at + kHeader + len + kTrailer;
  if (len <= max_record_bytes_) {
    const std::string_view body = Peek(at + kHeader, static_cast<std::size_t>(len) + kTrailer);
    if (body.size() < len + kTrailer) return std::nullopt;
    const std::string_view payload = body.substr(0, static_cast<std::size_t>(len));
    item.crc = Crc32(payload);
    if (ReadU32(body, static_cast<std::size_t>(len)) != item.crc) return std::nullopt;
    item.bytes.assign(payload);
    return item;
  }
  // Bigger than a frame may be: checked as it streams past, only a prefix kept.
  std::uint32_t c = 0xFFFFFFFFu;
  std::string chunk;
  for (std::uint64_t done = 0; done < len;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, len - done));
    ReadAt(at + kHeader + done, n, chunk);
    if (chunk.size() < n) return std::nullopt;
    c = CrcUpdate(c, chunk);
    if (item.bytes.size() < kSpoolKeepBytes) item.bytes.append(chunk.substr(0, kSpoolKeepBytes - item.bytes.size()));
    done += n;
  }
  item.crc = c ^ 0xFFFFFFFFu;
  const std::string_view trailer = Peek(at + kHeader + len, kTrailer);
  if (trailer.size() < kTrailer || ReadU32(trailer, 0) != item.crc) return std::nullopt;
  item.kind = SpoolItem::Kind::kOversize;
  return item;
}

std::uint64_t SpoolReader::FindMagic(std::uint64_t from) {
  while (from < size_) {
    const std::string_view v = Peek(from, kWindow);
    const std::size_t found = v.find(kMagic);
    if (found != std::string_view::npos) return from + found;
    if (v.size() < kMagic.size()) break;
    from += v.size() - (kMagic.size() - 1);  // a magic across the window's edge
  }
  return size_;
}

std::optional<SpoolItem> SpoolReader::Next() {
  if (pending_) {
    std::optional<SpoolItem> item = std::move(pending_);
    pending_.reset();
    return item;
  }
  std::optional<SpoolItem> damage;
  while (pos_ < size_) {
    if (auto record = TryRecord(pos_)) {
      pos_ = record->end;
      if (!damage) return record;
      pending_ = std::move(record);
      return damage;
    }
    // Not a record here: damage up to the next magic (at least one byte on).
    if (!damage) {
      damage.emplace();
      damage->kind = SpoolItem::Kind::kDamage;
    }
    const std::uint64_t next = FindMagic(pos_ + 1);
    if (damage->bytes.size() < kSpoolKeepBytes) {
      const std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(next - pos_, kSpoolKeepBytes - damage->bytes.size()));
      damage->bytes.append(Peek(pos_, want));
    }
    damage->length += next - pos_;
    damage->end = next;
    pos_ = next;
  }
  return damage;
}

}  // namespace brine::master
