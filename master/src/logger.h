// brine-master's log: one line per message, `YYYY-MM-DD HH:MM:SS,mmm [level] text`,
// to a file (brine.log_file) or stderr. Thread-safe. Levels are Salt's names.
#pragma once

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

namespace brine::master {

enum class LogLevel { kTrace = 5, kDebug = 10, kInfo = 20, kWarning = 30, kError = 40, kCritical = 50, kQuiet = 1000 };

// Salt's level names (all, garbage, trace, debug, profile, info, warning,
// error, critical, quiet). Unknown names give kWarning.
[[nodiscard]] LogLevel ParseLogLevel(std::string_view name);

class Logger {
 public:
  // Logs to stderr until Open() succeeds.
  explicit Logger(LogLevel level) : level_(level) {}
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Appends to `path` from now on (created 0600 if missing). Throws
  // std::runtime_error naming the path when it cannot be opened.
  void Open(const std::filesystem::path& path);
  // Reopens the same path (after logrotate moved it; SIGHUP). Keeps the old
  // file on failure and says so in it.
  void Reopen();

  void Log(LogLevel level, std::string_view message);
  [[nodiscard]] bool Enabled(LogLevel level) const { return level >= level_; }

 private:
  LogLevel level_;
  std::mutex mu_;
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;  // owned; nullptr: stderr
};

}  // namespace brine::master
