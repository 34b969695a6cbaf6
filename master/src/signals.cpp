// Why a signalfd and not a handler: a handler runs on whichever thread the
// signal lands on and interrupts the call that thread is in. libzmq's recv
// and send poll the socket's command pipe, so one that a signal interrupts
// fails with EINTR; an EINTR from the reader's recv once escaped the poll
// loop in the middle of a burst and brine-master aborted at its SIGTERM
// (CI, ASan build; tests/master_process_test.cpp has the SIGHUP storm that
// reproduces it). Blocked, the signals interrupt nothing, in any thread:
// they wait in the descriptor until the reader's next turn, whose poll the
// descriptor ends.
#include "signals.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace brine::master {
namespace {

sigset_t Handled() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

Signals::Signals() {
  const sigset_t set = Handled();
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "blocking SIGTERM, SIGINT and SIGHUP");
  }
  fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  signal(SIGPIPE, SIG_IGN);
}

Signals::~Signals() { ::close(fd_); }

bool Signals::Take() {
  bool reopen_log = false;
  signalfd_siginfo info{};
  while (true) {
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n < 0) {
      if (errno == EAGAIN) return reopen_log;
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "reading the signalfd");
    }
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGHUP) {
      reopen_log = true;
    } else if (stop_signal_ == 0) {
      stop_signal_ = sig;
    }
  }
}

}  // namespace brine::master
