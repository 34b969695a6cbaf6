// Real binaries as child processes, for end-to-end tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brine::test {

// The path of a built executable (build/bin/<name>).
[[nodiscard]] std::filesystem::path Binary(const std::string& name);

struct RunResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out;
  std::string err;
};

// Runs `argv` to completion (stdin from /dev/null), capturing stdout and stderr.
[[nodiscard]] RunResult Run(const std::vector<std::string>& argv,
                            std::chrono::seconds timeout = std::chrono::seconds(60));

// "exit 3", "killed by signal 9 (Killed)", or "still running" for nullopt:
// how a failing test names an exit status.
[[nodiscard]] std::string DescribeExit(std::optional<int> exit_code);

// A finished Run() for INFO: its status, then its stdout and stderr.
[[nodiscard]] std::string Describe(const RunResult& r);

// A child process in a process group of its own. It is never left behind:
// the destructor kills the group (SIGKILL, so also what a `sh -c` started)
// and reaps the child on every path, a failed REQUIRE's unwinding included;
// and should the test process die without unwinding (abort, a sanitizer
// report, ctest's timeout), the kernel kills the child (PR_SET_PDEATHSIG).
// That signal comes when the thread that made the Child ends, so a Child
// belongs to the test's main thread, or to a thread that outlives it.
class Child {
 public:
  // Starts `argv` with stdout and stderr appended to `log`.
  Child(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Signals the child itself (not its group).
  void Signal(int sig);
  // Waits for exit; returns the exit code (-signal if killed), nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  [[nodiscard]] bool Running();
  // The exit code once it exited (-signal if killed), else nullopt.
  [[nodiscard]] std::optional<int> exit_code();
  [[nodiscard]] const std::filesystem::path& log() const { return log_; }
  // What it wrote to its log so far (stdout and stderr interleaved).
  [[nodiscard]] std::string Output() const;
  // For INFO when it failed: its command line, DescribeExit, and its output
  // (the last 8 KiB of it).
  [[nodiscard]] std::string Describe();

 private:
  std::vector<std::string> argv_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// How long to wait for a group of children, by progress rather than by wall
// time: a loaded 2-core machine or a sanitizer build that is merely slow
// still gets there. The wait gives up when `progress` has not changed for
// `stall`, or after `limit` in all.
struct Patience {
  // Anything that grows while the work gets done (items stored, bytes
  // written). Beside it, the children's output and their exits count as
  // progress anyway.
  std::function<std::int64_t()> progress;
  std::chrono::milliseconds stall = std::chrono::seconds(60);
  std::chrono::milliseconds limit = std::chrono::minutes(15);
};

// Waits until every child has exited (whatever its code); false when the
// patience ran out first (those still running keep running until their
// destructor kills them).
[[nodiscard]] bool WaitAll(const std::vector<std::unique_ptr<Child>>& children, const Patience& patience = {});

// Each child's Describe(), one after the other, for INFO.
[[nodiscard]] std::string DescribeAll(const std::vector<std::unique_ptr<Child>>& children);

// Waits until `path` exists; false on timeout.
bool WaitForPath(const std::filesystem::path& path, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Reads a whole file ("" when missing).
[[nodiscard]] std::string ReadFile(const std::filesystem::path& path);

}  // namespace brine::test
