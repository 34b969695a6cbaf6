#include "support/postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "support/percent_encode.h"

namespace brine::test {
namespace {

namespace fs = std::filesystem;

std::string ReadLog(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

enum class Lifetime { kRunToEnd, kServer };

// Forks `argv` as uid/gid with stdout and stderr appended to `log`, working
// in `cwd`. A kServer child gets SIGQUIT when this thread dies, so a crashed
// test cannot leave the postmaster behind.
pid_t Spawn(const std::vector<std::string>& argv, uid_t uid, gid_t gid, const fs::path& cwd,
            const fs::path& log, Lifetime lifetime) {
  // Everything the child needs is made before the fork: between fork and
  // exec it may not allocate (the test process has threads; process.cpp's
  // Argv says why).
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = {"LC_ALL=C"};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("LC_ALL=", 0) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (getuid() != uid) {
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
    }
    // After setuid: a change of credentials clears the parent-death signal.
    if (lifetime == Lifetime::kServer) {
      setpgid(0, 0);  // the server's processes form a group, which Kill ends at once
      prctl(PR_SET_PDEATHSIG, SIGQUIT);
      if (getppid() != parent) _exit(125);
    }
    if (chdir(cwd.c_str()) != 0) _exit(124);
    execve(args[0], args.data(), env.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The processes whose parent is `parent` (from /proc).
std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces and parentheses.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// True once `pid` has exited (gone, or a zombie nobody has reaped yet).
bool Exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

void Chown(const fs::path& p, uid_t uid, gid_t gid) {
  if (chown(p.c_str(), uid, gid) != 0) throw std::runtime_error("chown " + p.string() + " failed");
}

}  // namespace

std::optional<std::string> PostgresServer::Unavailable() {
  for (const char* exe : {"initdb", "postgres"}) {
    const fs::path p = fs::path(kBinDir) / exe;
    if (access(p.c_str(), X_OK) != 0) {
      return "PostgreSQL tests skipped: " + p.string() +
             " is missing (./brine.sh deps installs Debian's postgresql)";
    }
  }
  return std::nullopt;
}

PostgresServer& PostgresServer::Shared() {
  static PostgresServer server;
  return server;
}

PostgresServer::PostgresServer(Durability durability) {
  if (auto why = Unavailable()) throw std::runtime_error(*why);
  uid_ = getuid();
  gid_ = getgid();
  if (uid_ == 0) {
    // PostgreSQL refuses to run as root.
    const passwd* pw = getpwnam("nobody");
    if (pw == nullptr) throw std::runtime_error("no user `nobody` to run PostgreSQL as");
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
  }
  std::string pattern = (fs::temp_directory_path() / "brine-pg-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  Chown(dir_, uid_, gid_);
  const fs::path log = dir_ / "initdb.log";
  const pid_t pid = Spawn({std::string(kBinDir) + "/initdb", "-D", (dir_ / "data").string(), "-U", "brine",
                           "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"},
                          uid_, gid_, dir_, log, Lifetime::kRunToEnd);
  if (WaitExit(pid) != 0) {
    const std::string text = ReadLog(log);
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw std::runtime_error("initdb failed:\n" + text);
  }
  std::ofstream conf(dir_ / "data" / "postgresql.conf", std::ios::app);
  conf << "\n# brine tests (tests/support/postgres_server.cpp)\n"
       << "listen_addresses = ''\n"
       << "unix_socket_directories = '" << dir_.string() << "'\n"
       << "port = 5432\n"
       << (durability == Durability::kRelaxed ? "fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\n"
                                              : "shared_buffers = 512MB\nmax_wal_size = 4GB\n")
       << "max_connections = 60\n"
       << "dynamic_shared_memory_type = posix\n"
       << "log_min_messages = warning\n";
  conf.close();
  Start();
}

PostgresServer::~PostgresServer() {
  try {
    Stop();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string PostgresServer::Uri(const std::string& name) const {
  return "postgresql://brine@/" + name + "?host=" + PercentEncode(dir_.string()) + "&port=5432";
}

std::string PostgresServer::CreateDatabase() {
  const std::string name = "t" + std::to_string(next_database_++);
  (void)Query(Uri("postgres"), "CREATE DATABASE " + name + " TEMPLATE template0");
  return Uri(name);
}

std::string PostgresServer::Query(const std::string& uri, const std::string& sql) const {
  PGconn* conn = PQconnectdb(uri.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("connecting to the test server: " + msg);
  }
  PGresult* res = PQexec(conn, sql.c_str());
  const ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    const std::string msg = PQerrorMessage(conn);
    PQclear(res);
    PQfinish(conn);
    throw std::runtime_error("test query failed: " + msg);
  }
  std::string out;
  for (int r = 0; r < PQntuples(res); ++r) {
    for (int c = 0; c < PQnfields(res); ++c) {
      if (c > 0) out += '|';
      out += PQgetisnull(res, r, c) ? "NULL" : PQgetvalue(res, r, c);
    }
    out += '\n';
  }
  PQclear(res);
  PQfinish(conn);
  return out;
}

void PostgresServer::Start() {
  if (pid_ > 0) return;
  // After a Kill, the old backends may hold the shared memory for a moment:
  // the new postmaster refuses to start until they are gone, so retry.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    pid_ = Spawn({std::string(kBinDir) + "/postgres", "-D", (dir_ / "data").string()}, uid_, gid_, dir_,
                 dir_ / "server.log", Lifetime::kServer);
    try {
      WaitReady();
      return;
    } catch (const std::exception&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

void PostgresServer::WaitReady() {
  const std::string uri = Uri("postgres");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("postgres exited at start:\n" + ReadLog(dir_ / "server.log"));
    }
    if (PQping(uri.c_str()) == PQPING_OK) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill();
  throw std::runtime_error("postgres did not accept connections within 60 s:\n" + ReadLog(dir_ / "server.log"));
}

void PostgresServer::Kill() {
  if (pid_ <= 0) return;
  // Backends too: a backend left alone finishes the statement (even a
  // COMMIT) it was sent before it notices its postmaster gone. They are not
  // in the postmaster's process group (each postmaster child calls setsid()),
  // so they are found by parent: the postmaster is stopped first, so that it
  // starts no new one, and each is killed and waited for (they are not our
  // children: polled until gone or a zombie).
  kill(pid_, SIGSTOP);
  const std::vector<pid_t> children = Children(pid_);
  for (pid_t c : children) kill(c, SIGKILL);
  kill(-pid_, SIGKILL);  // the postmaster (and its group, if anything stayed in it)
  WaitExit(pid_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (pid_t c : children) {
    while (!Exited(c) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  pid_ = -1;
}

void PostgresServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGINT);  // fast shutdown: disconnects clients, then exits
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGQUIT);
      WaitExit(pid_);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

}  // namespace brine::test
