// A private PostgreSQL server for tests: Debian's PostgreSQL 15 binaries
// (/usr/lib/postgresql/15/bin) run initdb and postgres in a fresh temp dir,
// as an unprivileged user (`nobody` when the tests run as root, else the
// current user), listening only on a Unix socket inside that dir
// (listen_addresses=''), so no port is taken and no system service is needed.
//
// The postmaster is a direct child of the test process with a parent-death
// signal (SIGQUIT, PostgreSQL's immediate shutdown), so even a crashed test
// leaves nothing running; the destructor stops it (fast shutdown) and removes
// the dir. Tests relax durability (fsync off): they kill processes, never the
// machine. The benchmarks use the same server with PostgreSQL's defaults.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace brine::test {

class PostgresServer {
 public:
  // Where the binaries are looked for.
  static constexpr const char* kBinDir = "/usr/lib/postgresql/15/bin";

  // Why no server can be started here (the binaries are missing), or nullopt.
  // A test that gets a reason WARNs it and returns: a visible skip.
  [[nodiscard]] static std::optional<std::string> Unavailable();

  // This process's server, started on first use and stopped at exit.
  // Throws std::runtime_error when it cannot start (call Unavailable first).
  [[nodiscard]] static PostgresServer& Shared();

  // kRelaxed (tests): fsync off. kDurable (the benchmarks): PostgreSQL's
  // defaults, every commit flushed, and shared_buffers big enough to matter.
  enum class Durability { kRelaxed, kDurable };
  // initdb + start. Throws std::runtime_error (with the server's log) on failure.
  explicit PostgresServer(Durability durability = Durability::kRelaxed);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Creates an empty database with a fresh name and returns its libpq URI.
  [[nodiscard]] std::string CreateDatabase();
  // The libpq URI of database `name` on this server (user `brine`, trust auth).
  [[nodiscard]] std::string Uri(const std::string& name) const;
  // Runs `sql` in database `name` (from a URI's path or a name) and returns
  // the rows, fields separated by "|" (as brine::test::Sql), one row a line. Throws on an SQL error.
  [[nodiscard]] std::string Query(const std::string& uri, const std::string& sql) const;

  // SIGKILLs the postmaster and every backend at once (a crash) and waits for it.
  void Kill();
  // Starts the server again on the same data dir (after Kill or Stop); waits
  // until it accepts connections.
  void Start();
  // Fast shutdown; waits for the postmaster to exit.
  void Stop();
  [[nodiscard]] bool Running() const { return pid_ > 0; }

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  void WaitReady();

  std::filesystem::path dir_;   // socket and log; data/ inside
  pid_t pid_ = -1;              // the postmaster while running
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  int next_database_ = 0;
};

}  // namespace brine::test
