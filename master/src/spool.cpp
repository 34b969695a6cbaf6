#include "brine/master/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::array<std::uint32_t, 256> MakeCrcTable() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
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

std::optional<TakenSpoolFile> OpenLocked(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO || errno == ENOENT) return std::nullopt;
    ThrowErrno("cannot open " + path.string());
  }
  TakenSpoolFile taken(path, fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !IsOwnRegularFile(st)) return std::nullopt;
  // Waits for a writer that still holds the file from before the rename.
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) ThrowErrno("cannot lock " + path.string());
  }
  return taken;
}

}  // namespace

std::uint32_t Crc32(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = MakeCrcTable();
  std::uint32_t c = 0xFFFFFFFFu;
  for (char ch : bytes) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

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

TakenSpoolFile::TakenSpoolFile(TakenSpoolFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

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
  std::vector<TakenSpoolFile> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  const auto own_regular = [&](const std::string& name) {
    struct stat st {};
    return ::lstat((dir / name).c_str(), &st) == 0 && IsOwnRegularFile(st);
  };
  for (const std::string& name : names) {
    if (!EndsWith(name, kTakenSuffix) || !own_regular(name)) continue;
    if (auto file = OpenLocked(dir / name)) out.push_back(std::move(*file));
  }
  for (const std::string& name : names) {
    if (!EndsWith(name, kSuffix) || !own_regular(name)) continue;
    const std::filesystem::path taken = dir / (name + ".taken");
    if (std::find(names.begin(), names.end(), taken.filename().string()) != names.end()) continue;  // next pass
    if (::rename((dir / name).c_str(), taken.c_str()) != 0) {
      if (errno == ENOENT) continue;
      ThrowErrno("cannot take " + (dir / name).string());
    }
    if (auto file = OpenLocked(taken)) out.push_back(std::move(*file));
  }
  return out;
}

}  // namespace brine::master
