#include "logger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "brine/core/time.h"

namespace brine::master {

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "all" || name == "garbage" || name == "trace") return LogLevel::kTrace;
  if (name == "debug" || name == "profile") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "error") return LogLevel::kError;
  if (name == "critical") return LogLevel::kCritical;
  if (name == "quiet") return LogLevel::kQuiet;
  return LogLevel::kWarning;
}

namespace {

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kCritical: return "CRITICAL";
    case LogLevel::kQuiet: return "QUIET";
  }
  return "?";
}

// Never through a symlink, and only a regular file (a FIFO would block, a
// device would take the log): the log's folder may belong to the service user.
std::FILE* OpenAppend(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return nullptr;
  }
  std::FILE* f = ::fdopen(fd, "a");
  if (f == nullptr) ::close(fd);
  return f;
}

}  // namespace

Logger::~Logger() {
  if (file_ != nullptr) std::fclose(file_);
}

void Logger::Open(const std::filesystem::path& path) {
  std::FILE* f = OpenAppend(path);
  if (f == nullptr) {
    throw std::runtime_error("cannot open log file " + path.string() + ": " + std::strerror(errno));
  }
  std::lock_guard lock(mu_);
  if (file_ != nullptr) std::fclose(file_);
  file_ = f;
  path_ = path;
}

void Logger::Reopen() {
  std::lock_guard lock(mu_);
  if (path_.empty()) return;
  std::FILE* f = OpenAppend(path_);
  if (f == nullptr) {
    std::fprintf(file_ != nullptr ? file_ : stderr, "could not reopen log file %s: %s\n", path_.c_str(),
                 std::strerror(errno));
    return;
  }
  if (file_ != nullptr) std::fclose(file_);
  file_ = f;
}

void Logger::Log(LogLevel level, std::string_view message) {
  if (!Enabled(level)) return;
  const std::string when = date::format("%Y-%m-%d %H:%M:%S", date::floor<std::chrono::milliseconds>(SystemClock().Now()));
  std::lock_guard lock(mu_);
  std::FILE* out = file_ != nullptr ? file_ : stderr;
  std::fprintf(out, "%s [brine-master][%s] %.*s\n", when.c_str(), LevelName(level), static_cast<int>(message.size()),
               message.data());
  std::fflush(out);
}

}  // namespace brine::master
