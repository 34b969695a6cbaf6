#include "store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "brine/store/store.h"

namespace brine::master {

std::filesystem::path StoreLock::PathFor(const std::filesystem::path& database) {
  // store::Describe names it; a server database (no lock) never gets here.
  return store::Describe(database).lock_file.value_or(database.string() + ".lock");
}

StoreLock::StoreLock(const std::filesystem::path& database, const std::string& master_id) {
  const std::filesystem::path path = PathFor(database);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::runtime_error("cannot open the store's lock file " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("the store's lock file " + path.string() + " is not a regular file");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[256] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("an unknown process");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw StoreHeld("the store " + database.string() + " is already written by another brine-master (" + holder +
                      ", holding " + path.string() +
                      "); a SQLite store has one writer: give this master its own brine.database");
    }
    throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
  }
  const std::string me = "pid " + std::to_string(::getpid()) + " id " + master_id + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace brine::master
