#include "support/master_process.h"

#include "brine/wire/codec.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <stdexcept>
#include <thread>
#include <zmq.hpp>

namespace brine::test {

MasterProcess::MasterProcess(const std::string& extra_config) {
  std::filesystem::create_directories(dir_ / "conf");
  std::ofstream(dir_ / "conf" / "master") << "id: test_master\n"
                                          << "cachedir: " << (dir_ / "cache").string() << "\n"
                                          // The 2014 bus unless the test says otherwise.
                                          << (extra_config.find("brine.bus:") == std::string::npos ? "brine.bus: bind\n" : "")
                                          << "brine.sock_dir: " << (dir_ / "sock").string() << "\n"
                                          << "brine.log_file: " << (dir_ / "log" / "brine-master").string() << "\n"
                                          << "brine.log_level: debug\n"
                                          << "loop_interval: 3600\n"
                                          << extra_config << "\n";
}

MasterProcess::~MasterProcess() {
  if (child_ && child_->Running()) (void)Stop();
}

void MasterProcess::set_tcp_ports(int pull, int pub) {
  tcp_pull_ = pull;
  tcp_pub_ = pub;
}

std::string MasterProcess::pull_endpoint() const {
  if (tcp_pull_ != 0) return "tcp://127.0.0.1:" + std::to_string(tcp_pull_);
  return "ipc://" + (sock_dir() / "master_event_pull.ipc").string();
}

std::string MasterProcess::pub_endpoint() const {
  if (tcp_pub_ != 0) return "tcp://127.0.0.1:" + std::to_string(tcp_pub_);
  return "ipc://" + (sock_dir() / "master_event_pub.ipc").string();
}

void MasterProcess::Start() {
  child_ = std::make_unique<Child>(std::vector<std::string>{Binary("brine-master").string(), "-c", conf_dir().string()},
                                   dir_ / "master.out");
  // Ready once the log says so (the sockets are bound before that line).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFile(log_file()).find("started:") == std::string::npos) {
    if (!child_->Running()) {
      throw std::runtime_error("brine-master exited at start: " + ReadFile(dir_ / "master.out"));
    }
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("brine-master did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int MasterProcess::Stop() {
  child_->Signal(SIGTERM);
  auto code = child_->Wait(std::chrono::seconds(30));
  if (!code) {
    child_->Signal(SIGKILL);
    code = child_->Wait();
  }
  const int result = code.value_or(-1000);
  if (result != 0) {
    // What the child said and logged, attached to the assertion that checks
    // this code, so a failure (an abort under ASan, say) shows its cause.
    const auto tail = [](const std::string& text) {
      constexpr std::size_t kKeep = 6000;
      return text.size() <= kKeep ? text : "[...]" + text.substr(text.size() - kKeep);
    };
    UNSCOPED_INFO("brine-master exit code " << result << "; its output:\n"
                                            << tail(ReadFile(dir_ / "master.out")) << "\nits log's end:\n"
                                            << tail(ReadFile(log_file())));
  }
  return result;
}

std::int64_t Counter(const std::filesystem::path& db, const std::string& name) {
  const std::string v = Sql(db, "SELECT value FROM brine_counters WHERE name = '" + name + "'");
  return v.empty() ? -1 : std::stoll(v);
}

bool CountersBalance(const std::filesystem::path& db) {
  return Counter(db, "received") ==
         Counter(db, "stored") + Counter(db, "filtered") + Counter(db, "quarantined") + Counter(db, "cache_writes");
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool WaitUntil(const std::function<bool()>& done, const Patience& patience) {
  const auto start = std::chrono::steady_clock::now();
  auto last_change = start;
  std::int64_t last = patience.progress ? patience.progress() : 0;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now - start > patience.limit) return false;
    const std::int64_t seen = patience.progress ? patience.progress() : 0;
    if (seen != last) {
      last = seen;
      last_change = now;
    } else if (now - last_change > patience.stall) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void PushFrames(const std::string& endpoint, const std::vector<std::string>& frames) {
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 10000);
  push.set(zmq::sockopt::sndhwm, 0);
  push.connect(endpoint);
  for (const auto& f : frames) push.send(zmq::buffer(f), zmq::send_flags::none);
  push.close();
}

std::string NewFrame(const std::string& tag, const Value& data) {
  return wire::EncodeFrame(tag, data, wire::Framing::kNew);
}

int FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TcpBusPorts FreeTcpBusPorts() {
  TcpBusPorts p;
  p.pull = FreeTcpPort();
  do p.pub = FreeTcpPort(); while (p.pub == p.pull);
  do p.cache = FreeTcpPort(); while (p.cache == p.pull || p.cache == p.pub);
  return p;
}

std::string TcpBusPorts::Config() const {
  return "ipc_mode: tcp\nbrine.tcp_pull_port: " + std::to_string(pull) + "\nbrine.tcp_pub_port: " +
         std::to_string(pub) + "\nbrine.tcp_cache_port: " + std::to_string(cache) + "\n";
}

std::string Sql(const std::filesystem::path& db, const std::string& query) {
  SQLite::Database d(db.string(), SQLite::OPEN_READONLY, 10000);
  SQLite::Statement q(d, query);
  std::string out;
  while (q.executeStep()) {
    for (int i = 0; i < q.getColumnCount(); ++i) {
      if (i > 0) out += "|";
      out += q.getColumn(i).isNull() ? "NULL" : q.getColumn(i).getString();
    }
    out += "\n";
  }
  return out;
}

}  // namespace brine::test

namespace brine::test {

int FileSavedOverflow(MasterProcess& m) {
  const std::filesystem::path saved = m.database().parent_path() / "brine-overflow.saved";
  int starts = 0;
  while (std::filesystem::exists(saved)) {
    m.Start();
    ++starts;
    // The start logs "<n> frames saved by the last stop taken from ...".
    std::int64_t taken = -1;
    (void)WaitUntil([&] {
      const std::string log = ReadFile(m.log_file());
      const auto at = log.rfind(" frames saved by the last stop taken from");
      if (at == std::string::npos) return false;
      const auto from = log.find_last_not_of("0123456789", at - 1);
      taken = std::stoll(log.substr(from + 1, at - from - 1));
      return true;
    });
    // Per run, "received" counts what this start filed, saved frames first.
    (void)WaitUntil([&] { return taken >= 0 && Counter(m.database(), "received") >= taken; }, std::chrono::seconds(300));
    if (m.Stop() != 0) break;
  }
  return starts;
}

}  // namespace brine::test
