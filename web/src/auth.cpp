#include "brine/web/auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "brine/core/atomic_file.h"

namespace brine::web {
namespace {

[[noreturn]] void Fail(const std::filesystem::path& path, const std::string& why) {
  throw std::runtime_error("brine.web_token_file " + path.string() + ": " + why);
}

bool IsHexToken(std::string_view s) {
  if (s.size() != 2 * kTokenBytes) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// nullopt when the file does not exist.
std::optional<std::string> ReadIfPresent(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) Fail(path, "is a symlink; brine-web reads its token only from a file of its own");
    Fail(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  std::string text(2 * kTokenBytes + 2, '\0');
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (!S_ISREG(st.st_mode)) Fail(path, "is not a regular file");
  if (st.st_uid != ::geteuid()) {
    Fail(path, "belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                   std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & 077) != 0) Fail(path, "others may read it; it must be mode 0600");
  text.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!IsHexToken(text)) Fail(path, "does not hold 64 hex digits; remove it and brine-web makes a new one");
  return text;
}

}  // namespace

std::string RandomHex(std::size_t n) {
  std::string raw(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(raw.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned char c : raw) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  return hex;
}

std::string LoadOrCreateToken(const std::filesystem::path& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (auto token = ReadIfPresent(path)) return *token;
    try {
      AtomicFile file(path, {.mode = 0600, .replace = AtomicFile::Replace::kNever});
      file.Write(RandomHex(kTokenBytes) + "\n");
      file.Commit();
    } catch (const FileError& e) {
      // Another brine-web made it meanwhile: read that one.
      if (std::filesystem::exists(std::filesystem::symlink_status(path))) continue;
      Fail(path, e.what());
    }
  }
  Fail(path, "appears and vanishes while it is read");
}

std::string ReadToken(const std::filesystem::path& path) {
  if (auto token = ReadIfPresent(path)) return *token;
  Fail(path, "does not exist; brine-web makes it at its first start");
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string Sessions::Create(const std::string& user) {
  std::string id = RandomHex(32);
  const Micros now = clock_.Now();
  std::lock_guard lock(mutex_);
  while (sessions_.size() >= limits_.max_count && !sessions_.empty()) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
    sessions_.erase(oldest);
  }
  sessions_[id] = Entry{{user, RandomHex(32)}, now, now};
  return id;
}

std::optional<Sessions::Session> Sessions::Use(const std::string& id) {
  const Micros now = clock_.Now();
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.created >= limits_.max_age || now - it->second.last_used >= limits_.idle) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = now;
  return it->second.session;
}

void Sessions::End(const std::string& id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

std::size_t Sessions::Count() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void LoginLimiter::Expire(Micros now) {
  while (!failures_.empty() && now - failures_.front() >= window_) failures_.pop_front();
}

bool LoginLimiter::Allowed() {
  std::lock_guard lock(mutex_);
  Expire(clock_.Now());
  return failures_.size() < max_failures_;
}

void LoginLimiter::Failed() {
  std::lock_guard lock(mutex_);
  failures_.push_back(clock_.Now());
  ++total_;
}

std::int64_t LoginLimiter::total_failures() {
  std::lock_guard lock(mutex_);
  return total_;
}

}  // namespace brine::web
