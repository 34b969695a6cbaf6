#include "ownership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace brine::master {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void Fail(const std::string& what, const std::filesystem::path& at) {
  throw std::runtime_error(what + " " + at.string() + ": " + std::strerror(errno));
}

}  // namespace

void CreateOwnedDirs(const std::filesystem::path& dir, uid_t uid, gid_t gid) {
  const std::filesystem::path full = std::filesystem::absolute(dir).lexically_normal();
  Fd at(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (at.get() < 0) Fail("cannot open", "/");
  std::filesystem::path so_far = "/";
  for (const auto& part : full.relative_path()) {
    if (part.empty()) continue;
    so_far /= part;
    // An existing component is used as it is, symlinks included (/var/run).
    int next = ::openat(at.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      bool created = true;
      if (::mkdirat(at.get(), part.c_str(), 0700) != 0) {
        if (errno != EEXIST) Fail("cannot create", so_far);
        created = false;  // made by someone else meanwhile: theirs
      }
      // What we just made is reopened without following a link: a symlink
      // swapped in meanwhile is refused, not chowned through.
      next = ::openat(at.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0) Fail("cannot open the folder it created,", so_far);
      struct stat st {};
      if (created && ::fstat(next, &st) == 0 && st.st_uid == ::geteuid()) {
        (void)::fchmod(next, 0700);
        if (::geteuid() == 0 && ::fchown(next, uid, gid) != 0) {
          const int err = errno;
          ::close(next);
          errno = err;
          Fail("cannot give the new folder to the service user:", so_far);
        }
      }
    }
    if (next < 0) Fail("cannot open", so_far);
    at.Reset(next);
  }
}

std::optional<std::string> CheckWritableDir(const std::filesystem::path& dir, const std::string& what,
                                            const std::string& user) {
  if (::access(dir.c_str(), W_OK | X_OK) == 0) return std::nullopt;
  return dir.string() + " (" + what + ") exists and user " + user + " cannot create files in it (" +
         std::strerror(errno) + "); brine-master gives the service user only folders it created itself: "
         "give this folder to " + user + " by hand, or point the setting at a folder of brine's own";
}

}  // namespace brine::master
