// What the benchmark programs share: running a brine-run process as a user
// does (wall time, peak RSS, output size), medians, and reading a master's
// peak RSS and committed counters.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace brine::bench {

struct Sample {
  double seconds;
  long rss_kib;           // the child's peak RSS (ru_maxrss)
  std::size_t out_bytes;  // what it wrote to stdout
};

// Starts argv (argv[0] a path) with stdout to `out_file` and stderr to
// /dev/null; returns its pid.
// The child only makes async-signal-safe calls (no allocation between fork
// and exec: a bench has threads, and one may hold the allocator's lock).
inline pid_t Spawn(const std::vector<std::string>& argv, const std::filesystem::path& out_file) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    const int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(devnull, 2);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

// Runs argv as Spawn does and waits for it; exits the bench when it fails.
// The caller keeps its own memory small: a child's ru_maxrss counts the pages
// it shared with the caller before exec.
inline Sample RunOnce(const std::vector<std::string>& argv, const std::filesystem::path& out_file) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = Spawn(argv, out_file);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench: %s failed (status %d)\n", argv[0].c_str(), status);
    std::exit(1);
  }
  return {secs, ru.ru_maxrss, static_cast<std::size_t>(std::filesystem::file_size(out_file))};
}

// Asks the kernel to drop a store's pages (and its -wal and -shm) from the
// page cache, for a cold run; false when the kernel refused.
inline bool DropCache(const std::filesystem::path& db) {
  bool ok = true;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string p = db.string() + suffix;
    const int fd = open(p.c_str(), O_RDONLY);
    if (fd < 0) continue;
    fdatasync(fd);
    ok = ok && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
  }
  return ok;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A running process's peak RSS (VmHWM) in KiB, -1 when unreadable.
inline long PeakRssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// One of brine-master's committed counters (brine_counters), 0 while the
// store or the counter does not exist yet.
inline std::int64_t Counter(const std::filesystem::path& db, const char* name) {
  try {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY, 5000);
    SQLite::Statement q(d, "SELECT value FROM brine_counters WHERE name = ?");
    q.bind(1, name);
    return q.executeStep() ? q.getColumn(0).getInt64() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// Writes dir/conf/master with the keys every bench master has (id, cachedir,
// brine.sock_dir, brine.log_file under `dir`, no retention, an hour between
// maintenance loops) plus `extra` lines, and starts `exe -c dir/conf`.
// Returns its pid once its sockets exist (its store is open and migrated
// by then); exits the bench when the master exits first. `extra` may set
// brine.bus (bind otherwise).
inline pid_t StartBenchMaster(const std::filesystem::path& exe, const std::filesystem::path& dir,
                              const std::string& id, const std::string& extra = "") {
  std::filesystem::create_directories(dir / "conf");
  std::ofstream(dir / "conf" / "master") << "id: " << id << "\ncachedir: " << (dir / "cache").string()
                                         << (extra.find("brine.bus:") == std::string::npos ? "\nbrine.bus: bind" : "")
                                         << "\nbrine.sock_dir: " << (dir / "sock").string()
                                         << "\nbrine.log_file: " << (dir / "brine-master.log").string()
                                         << "\nkeep_jobs_seconds: 0\nloop_interval: 3600\n"
                                         << extra;
  const std::string conf = (dir / "conf").string();  // made before the fork, as in Spawn
  const pid_t pid = fork();
  if (pid == 0) {
    execl(exe.c_str(), exe.c_str(), "-c", conf.c_str(), nullptr);
    _exit(127);
  }
  // Its own acknowledged socket is bound with the bus, in every brine.bus mode.
  while (!std::filesystem::exists(dir / "sock" / "brine_cache.ipc")) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::fprintf(stderr, "bench: brine-master exited (see %s)\n", (dir / "brine-master.log").c_str());
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return pid;
}

}  // namespace brine::bench
