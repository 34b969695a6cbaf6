#include "support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace brine::test {
namespace {

// execv's argument array, made in the parent before it forks. Between fork
// and exec the child may only make async-signal-safe calls: the test process
// has threads, and one of them can hold the allocator's lock at the fork, so
// a malloc in the child waits for ever (seen under ASan: a brine-run that
// never started, killed by Run's timeout with nothing on stderr).
std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1000;
}

// In a forked child before exec: a process group of its own (so the parent
// can kill what it starts in turn), and death with the parent.
void DetachIntoOwnGroup(pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
}

// Reaps `pid`, retrying on EINTR; the decoded status (-1000 when it cannot).
int Reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, 0); while (r < 0 && errno == EINTR);
  return r == pid ? DecodeStatus(status) : -1000;
}

}  // namespace

std::filesystem::path Binary(const std::string& name) { return std::filesystem::path(BRINE_BIN_DIR) / name; }

RunResult Run(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  auto args = Argv(argv);  // before the fork: see Argv
  const pid_t pid = fork();
  if (pid == 0) {
    DetachIntoOwnGroup(parent);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error("fork failed");
  setpgid(pid, pid);  // also here, so the group exists whichever side runs first
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  if (open_fds > 0) {
    // Timed out: say where it was before the kill (a child that never got
    // to exec still shows the test's own binary).
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    r.err += "\n[tests: killed after " + std::to_string(timeout.count()) + " s; it was " + exe.string() +
             ", waiting in " + ReadFile("/proc/" + std::to_string(pid) + "/wchan") + "]";
  }
  for (auto& f : fds) {
    if (f.fd >= 0) {
      close(f.fd);
      kill(-pid, SIGKILL);
    }
  }
  r.exit_code = Reap(pid);
  kill(-pid, SIGKILL);  // anything it left running in its group
  return r;
}

std::string DescribeExit(std::optional<int> exit_code) {
  if (!exit_code) return "still running";
  if (*exit_code >= 0) return "exit " + std::to_string(*exit_code);
  if (*exit_code == -1000) return "an exit status that is neither an exit nor a signal";
  const char* name = strsignal(-*exit_code);
  return "killed by signal " + std::to_string(-*exit_code) + " (" + (name != nullptr ? name : "?") + ")";
}

std::string Describe(const RunResult& r) {
  return DescribeExit(r.exit_code) + "\n--- stdout ---\n" + r.out + "\n--- stderr ---\n" + r.err + "\n--- end ---";
}

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& log) : argv_(argv), log_(log) {
  const pid_t parent = getpid();
  auto args = Argv(argv);  // before the fork: see Argv
  pid_ = fork();
  if (pid_ == 0) {
    DetachIntoOwnGroup(parent);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid_ < 0) throw std::runtime_error("fork failed");
  setpgid(pid_, pid_);  // also here, so the group exists whichever side runs first
}

Child::~Child() {
  // The whole group, even when the child itself has exited: what it started
  // must not outlive the test either.
  kill(-pid_, SIGKILL);
  if (!status_) status_ = Reap(pid_);
}

void Child::Signal(int sig) { kill(pid_, sig); }

bool Child::Running() {
  if (status_) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = DecodeStatus(status);
    return false;
  }
  return true;
}

std::optional<int> Child::exit_code() {
  (void)Running();
  return status_;
}

std::optional<int> Child::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

std::string Child::Output() const { return ReadFile(log_); }

std::string Child::Describe() {
  std::string command;
  for (const auto& a : argv_) command += (command.empty() ? "" : " ") + a;
  std::string out = Output();
  constexpr std::size_t kTail = 8192;
  std::string shown = "its output (" + log_.string();
  if (out.size() > kTail) {
    shown += ", the last " + std::to_string(kTail) + " of " + std::to_string(out.size()) + " bytes";
    out.erase(0, out.size() - kTail);
  }
  return "`" + command + "` (pid " + std::to_string(pid_) + "): " + DescribeExit(exit_code()) + "\n--- " + shown +
         ") ---\n" + out + (out.empty() || out.back() == '\n' ? "" : "\n") + "--- end ---";
}

bool WaitAll(const std::vector<std::unique_ptr<Child>>& children, const Patience& patience) {
  const auto start = std::chrono::steady_clock::now();
  auto measure = [&] {
    std::vector<std::int64_t> v;
    for (const auto& c : children) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(c->log(), ec);
      v.push_back(ec ? -1 : static_cast<std::int64_t>(size));
      v.push_back(c->Running() ? 0 : 1);
    }
    if (patience.progress) v.push_back(patience.progress());
    return v;
  };
  auto last = measure();
  auto last_change = start;
  for (;;) {
    bool running = false;
    for (const auto& c : children) running = running || c->Running();
    if (!running) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - start > patience.limit) return false;
    auto seen = measure();
    if (seen != last) {
      last = std::move(seen);
      last_change = now;
    } else if (now - last_change > patience.stall) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string DescribeAll(const std::vector<std::unique_ptr<Child>>& children) {
  std::string out;
  for (const auto& c : children) out += c->Describe() + "\n";
  return out;
}

bool WaitForPath(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace brine::test
