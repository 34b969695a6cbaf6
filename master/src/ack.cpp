#include "ack.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace brine::master {

AckMailbox::AckMailbox() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

AckMailbox::~AckMailbox() { ::close(fd_); }

void AckMailbox::Post(std::vector<AckDone> done) {
  if (done.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (posted_.empty()) {
      posted_ = std::move(done);
    } else {
      for (AckDone& d : done) posted_.push_back(std::move(d));
    }
  }
  const std::uint64_t one = 1;
  // The counter only saturates after 2^64 - 2 posts without a Take; a failed
  // write then still leaves the fd readable.
  (void)!::write(fd_, &one, sizeof one);
}

std::vector<AckDone> AckMailbox::Take() {
  std::uint64_t count = 0;
  (void)!::read(fd_, &count, sizeof count);
  std::lock_guard lock(mu_);
  std::vector<AckDone> out;
  out.swap(posted_);
  return out;
}

}  // namespace brine::master
