// A real brine-master on a config folder in a temp dir, for end-to-end tests,
// plus the client side of the bus: PUSH frames to it, SUBscribe to what it
// republishes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace brine::test {

class MasterProcess {
 public:
  // Writes <dir>/conf/master with these keys, extended by `extra_config`
  // (YAML lines appended; a key given twice is a YAML error, so override a
  // default from a master.d/*.conf file instead): id test_master, cachedir
  // <dir>/cache, brine.sock_dir <dir>/sock, brine.log_file <dir>/log/brine-master,
  // brine.log_level debug, loop_interval 3600.
  explicit MasterProcess(const std::string& extra_config = "");
  ~MasterProcess();

  // Starts brine-master and waits until its pull socket (or tcp port) answers.
  void Start();
  // SIGTERM, then waits; returns the exit code. A code other than 0 attaches
  // the child's output and its log's end to the next assertion (UNSCOPED_INFO).
  int Stop();

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_.path(); }
  [[nodiscard]] std::filesystem::path conf_dir() const { return dir_ / "conf"; }
  [[nodiscard]] std::filesystem::path database() const { return dir_ / "cache" / "brine.sqlite"; }
  [[nodiscard]] std::filesystem::path sock_dir() const { return dir_ / "sock"; }
  [[nodiscard]] std::filesystem::path log_file() const { return dir_ / "log" / "brine-master"; }
  [[nodiscard]] std::string pull_endpoint() const;
  [[nodiscard]] std::string pub_endpoint() const;
  [[nodiscard]] Child* child() { return child_.get(); }
  void set_tcp_ports(int pull, int pub);

 private:
  TempDir dir_;
  std::unique_ptr<Child> child_;
  int tcp_pull_ = 0;
  int tcp_pub_ = 0;
};

// One event in Salt's current framing: tag "\n\n" msgpack(data).
[[nodiscard]] std::string NewFrame(const std::string& tag, const Value& data);

// Pushes each frame as one ZeroMQ message from a fresh PUSH socket, then
// closes it with a linger that lets everything out.
void PushFrames(const std::string& endpoint, const std::vector<std::string>& frames);

// A free TCP port on 127.0.0.1 (bound and released).
[[nodiscard]] int FreeTcpPort();

// Three distinct free ports for a master in ipc_mode: tcp.
struct TcpBusPorts {
  int pull = 0;
  int pub = 0;
  int cache = 0;
  // The config lines that put a master's bus on them.
  [[nodiscard]] std::string Config() const;
};
[[nodiscard]] TcpBusPorts FreeTcpBusPorts();

// A counter of the master in `db` (brine_counters), -1 when it is not there.
[[nodiscard]] std::int64_t Counter(const std::filesystem::path& db, const std::string& name);

// received = stored + filtered + quarantined + cache_writes (docs/master.md, Counters).
[[nodiscard]] bool CountersBalance(const std::filesystem::path& db);

// Polls `done` every 20 ms until it holds; false when `timeout` passes first.
[[nodiscard]] bool WaitUntil(const std::function<bool()>& done,
                             std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Polls `done` every 20 ms until it holds; false when `patience.progress`
// stands still for `patience.stall` (or `patience.limit` passes) first. For
// work whose speed depends on the machine's load or a sanitizer build.
[[nodiscard]] bool WaitUntil(const std::function<bool()>& done, const Patience& patience);

// When `m`'s last stop saved what it could not commit of its overflow file
// (brine-overflow.saved beside the store, the default brine.overflow_dir),
// starts it again, waits until the frames it took from that file are
// committed, and stops it; again, should that stop save some too. Returns
// the starts it took (0: nothing was saved).
int FileSavedOverflow(MasterProcess& m);

// Runs a SQL query with the sqlite3 library and returns rows as
// "col|col\n" lines (NULL for nulls).
[[nodiscard]] std::string Sql(const std::filesystem::path& db, const std::string& query);

}  // namespace brine::test
