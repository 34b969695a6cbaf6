#include "brine/core/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace brine {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBufferBytes = 64 * 1024;
constexpr int kNameAttempts = 32;

[[noreturn]] void Fail(const fs::path& p, const std::string& what, int err) {
  throw FileError(p.string() + ": " + what + ": " + std::strerror(err));
}

// 16 hex digits from the kernel's generator: a name another account cannot
// guess ahead of time (O_EXCL makes a guess that lands harmless anyway).
std::string RandomName() {
  unsigned char bytes[8];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

void SyncFolder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) Fail(dir, "cannot open the folder to sync it", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) Fail(dir, "fsync", err);
}

// The folder a relative or absolute destination lives in ("." for a bare name).
fs::path FolderOf(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

}  // namespace

AtomicFile::AtomicFile(fs::path destination, Options options)
    : destination_(std::move(destination)), options_(options) {
  struct stat st {};
  if (::lstat(destination_.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      throw FileError(destination_.string() + " is a symlink; brine does not write through links, give the path itself");
    }
    if (options_.replace == Replace::kNever) throw FileError(destination_.string() + " exists; give a new path");
  } else if (errno != ENOENT) {
    Fail(destination_, "cannot be checked", errno);
  }
  const fs::path folder = FolderOf(destination_);
  const std::string name = destination_.filename().string();
  if (options_.staging == Staging::kPrivateFolder) {
    std::string templ = (folder / ("." + name + ".XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr) Fail(folder, "cannot create a private folder", errno);
    private_dir_ = templ;
  }
  for (int attempt = 0; attempt < kNameAttempts && fd_ < 0; ++attempt) {
    temp_ = private_dir_.empty() ? folder / ("." + name + "." + RandomName() + ".tmp") : private_dir_ / name;
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0 && (errno != EEXIST || !private_dir_.empty())) {
      const int err = errno;
      Discard();
      Fail(temp_, "cannot create", err);
    }
  }
  if (fd_ < 0) {
    Discard();
    throw FileError(folder.string() + ": no free temp name after " + std::to_string(kNameAttempts) + " tries");
  }
  if (options_.mode != 0600 && ::fchmod(fd_, static_cast<mode_t>(options_.mode)) != 0) {
    const int err = errno;
    Discard();
    Fail(temp_, "fchmod", err);
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) Discard();
}

void AtomicFile::Write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferBytes) Flush();
}

void AtomicFile::Flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      buffer_.clear();
      Fail(temp_, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

void AtomicFile::Commit() {
  try {
    Flush();
    if (options_.sync == Sync::kFsync && ::fsync(fd_) != 0) Fail(temp_, "fsync", errno);
    if (::close(fd_) != 0) {
      fd_ = -1;
      Fail(temp_, "close", errno);
    }
    fd_ = -1;
    if (options_.replace == Replace::kNever) {
      // RENAME_NOREPLACE: a name taken since the check (a file, a dangling
      // link) fails the commit rather than being replaced or followed.
      // A file system without it (EINVAL) gets link + unlink, which fails on a
      // taken name the same way.
      int rc = ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, destination_.c_str(), RENAME_NOREPLACE);
      if (rc != 0 && errno == EINVAL) {
        rc = ::link(temp_.c_str(), destination_.c_str());
        if (rc == 0) ::unlink(temp_.c_str());
      }
      if (rc != 0) {
        if (errno == EEXIST) throw FileError(destination_.string() + " exists; give a new path");
        Fail(destination_, "cannot rename " + temp_.string() + " onto it", errno);
      }
    } else if (::rename(temp_.c_str(), destination_.c_str()) != 0) {
      Fail(destination_, "cannot rename " + temp_.string() + " onto it", errno);
    }
    committed_ = true;
    if (!private_dir_.empty()) {
      temp_.clear();
      Discard();  // the private folder and whatever the writer left in it
    }
    if (options_.sync == Sync::kFsync) SyncFolder(FolderOf(destination_));
  } catch (...) {
    if (!committed_) Discard();
    throw;
  }
}

void AtomicFile::Discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_.empty()) ::unlink(temp_.c_str());
  if (private_dir_.empty()) return;
  // Only this process can create files in the 0700 folder: everything in it
  // is the writer's (a -journal, a -wal, a -shm).
  if (DIR* d = ::opendir(private_dir_.c_str())) {
    const int dfd = ::dirfd(d);
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      ::unlinkat(dfd, e->d_name, 0);
    }
    ::closedir(d);
  }
  ::rmdir(private_dir_.c_str());
  private_dir_.clear();
}

}  // namespace brine
