// Real binaries as child processes, for end-to-end tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
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

// A child process that is killed (SIGKILL) if still running when destroyed.
class Child {
 public:
  // Starts `argv` with stdout and stderr appended to `log`.
  Child(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits for exit; returns the exit code (-signal if killed), nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  [[nodiscard]] bool Running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Waits until `path` exists; false on timeout.
bool WaitForPath(const std::filesystem::path& path, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Reads a whole file ("" when missing).
[[nodiscard]] std::string ReadFile(const std::filesystem::path& path);

}  // namespace brine::test
