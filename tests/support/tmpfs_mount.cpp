#include "support/tmpfs_mount.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>

namespace brine::test {

TmpfsMount::TmpfsMount(std::filesystem::path where, const std::string& size) : path_(std::move(where)) {
  std::filesystem::create_directories(path_);
  const std::string opts = "size=" + size + ",mode=0700";
  if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, opts.c_str()) == 0) {
    mounted_ = true;
  } else {
    why_ = std::string("mount -t tmpfs failed: ") + std::strerror(errno);
  }
}

TmpfsMount::~TmpfsMount() {
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
}

}  // namespace brine::test
