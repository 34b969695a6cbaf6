// Day two for operators (issue 17): brine-master's metrics file, its reports
// in the log, systemd's notify protocol, and brine-run's brine.health and
// brine.stats against a real brine-master that is up, stalled and down.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "reporter.h"
#include "brine/runner/cli.h"
#include "brine/wire/codec.h"
#include "support/joining_thread.h"
#include "support/master_process.h"
#include "support/runner_site.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::Value;
using brine::test::MasterProcess;
namespace fs = std::filesystem;

namespace {

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A strict reader of Prometheus's text exposition format 0.0.4, enough to
// hold brine's file to it: every line is a comment (# HELP name text, # TYPE
// name counter|gauge|...), blank, or a sample `name[{l="v",...}] value`; names
// and label names match the format's grammar; HELP and TYPE come once per
// metric and before its samples; a counter's name ends in _total; values are
// floats (or NaN, +Inf, -Inf). Fails the test on the first violation.
// Returns each sample's value by name.
std::map<std::string, double> ParsePrometheus(const std::string& text) {
  static const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kLabels(R"(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")*,?\})");
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::istringstream in(text);
  std::string line;
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  while (std::getline(in, line)) {
    INFO(line);
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string keyword, name;
      words >> keyword >> name;
      if (keyword == "HELP") {
        REQUIRE(std::regex_match(name, kName));
        REQUIRE(helped.insert(name).second);
        REQUIRE(samples.count(name) == 0);
      } else if (keyword == "TYPE") {
        std::string type;
        words >> type;
        REQUIRE(std::regex_match(name, kName));
        REQUIRE((type == "counter" || type == "gauge" || type == "histogram" || type == "summary" || type == "untyped"));
        REQUIRE(types.emplace(name, type).second);
        REQUIRE(samples.count(name) == 0);
        if (type == "counter") REQUIRE(name.size() > 6);
        if (type == "counter") REQUIRE(name.substr(name.size() - 6) == "_total");
      }
      continue;
    }
    std::size_t end = line.find_first_of("{ ");
    REQUIRE(end != std::string::npos);
    const std::string name = line.substr(0, end);
    REQUIRE(std::regex_match(name, kName));
    std::string rest = line.substr(end);
    if (rest[0] == '{') {
      const std::size_t close = rest.rfind('}');
      REQUIRE(close != std::string::npos);
      REQUIRE(std::regex_match(rest.substr(0, close + 1), kLabels));
      rest = rest.substr(close + 1);
    }
    REQUIRE(rest.size() > 1);
    REQUIRE(rest[0] == ' ');
    const std::string value = rest.substr(1);
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    REQUIRE((*stop == '\0' || value == "NaN" || value == "+Inf" || value == "-Inf"));
    REQUIRE(types.count(name) == 1);  // TYPE before the sample
    REQUIRE(helped.count(name) == 1);
    samples[name] = v;
  }
  return samples;
}

// The samples of a file by name, without judging it (for polling).
std::map<std::string, double> ParsePrometheusQuiet(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    const auto brace = line.find('{');
    out[line.substr(0, std::min(space, brace))] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

using brine::test::CliResult;

// brine-run in-process (support/runner_site.h).
CliResult Run(const std::vector<std::string>& args) { return brine::test::Cli(args); }

std::vector<std::string> Events(int n) {
  std::vector<std::string> frames;
  for (int i = 0; i < n; ++i) {
    frames.push_back(brine::wire::EncodeFrame("brine/test/" + std::to_string(i),
                                              Value::Map({{"i", i}, {"_stamp", "2026-11-23T10:00:00.000000"}}),
                                              brine::wire::Framing::kNew));
  }
  return frames;
}

fs::path MetricsFile(const MasterProcess& m) { return m.dir() / "cache" / "brine-master.prom"; }

std::map<std::string, double> Metrics(const MasterProcess& m) {
  return ParsePrometheus(brine::test::ReadFile(MetricsFile(m)));
}

// An AF_UNIX datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{.tv_sec = 0, .tv_usec = 100000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() { ::close(fd_); }
  // Every datagram received until `until` holds or 20 s pass.
  std::string ReadUntil(const std::function<bool(const std::string&)>& until) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!until(got_) && std::chrono::steady_clock::now() < deadline) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) got_.append(buf, static_cast<std::size_t>(n)).append("|");
    }
    return got_;
  }

 private:
  fs::path path_;
  int fd_ = -1;
  std::string got_;
};

}  // namespace

TEST_CASE("operations: the metrics text is Prometheus's exposition format, with HELP and TYPE before each metric",
          "[master]") {
  brine::master::MetricsSnapshot m;
  m.version = "0.1.0";
  m.master_id = "web\"1\\x\nmaster";  // a label value that needs every escape
  m.now_s = 1795000000.25;
  m.received = 10;
  m.stored = 7;
  m.commit_lag_s = 0.5;
  m.store_bytes = 1 << 20;
  m.overflow_bytes = 3 << 20;
  const auto samples = ParsePrometheus(brine::master::FormatMetrics(m));
  CHECK(samples.at("brine_events_received_total") == 10);
  CHECK(samples.at("brine_events_stored_total") == 7);
  CHECK(samples.at("brine_commit_lag_seconds") == 0.5);
  CHECK(samples.at("brine_store_bytes") == 1048576);
  CHECK(samples.at("brine_metrics_timestamp_seconds") == 1795000000.25);
  CHECK(samples.at("brine_master_info") == 1);
  CHECK(samples.at("brine_queue_overflow_bytes") == 3145728);
  CHECK(samples.at("brine_future_arrivals_total") == 0);
  CHECK(samples.size() == 26);  // brine_future_arrivals_total among them
}

TEST_CASE("operations: the file is replaced whole, never written in place", "[master]") {
  brine::test::TempDir dir;
  const fs::path file = dir / "brine.prom";
  brine::master::WriteFileAtomically(file, "a 1\n");
  std::ifstream held(file);  // a reader that opened the old file keeps reading it whole
  brine::master::WriteFileAtomically(file, "b 2\n");
  std::string old;
  std::getline(held, old);
  CHECK(old == "a 1");
  CHECK(brine::test::ReadFile(file) == "b 2\n");
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);  // no temp file left
  CHECK_THROWS_WITH(brine::master::WriteFileAtomically(dir / "missing" / "x.prom", ""),
                    Catch::Contains((dir / "missing").string()));
}

TEST_CASE("operations: the reporter logs a throughput line and warns while frames wait", "[master]") {
  brine::test::TempDir dir;
  brine::master::Logger log(brine::master::LogLevel::kInfo);
  log.Open(dir / "log");
  brine::master::LiveStatus status;
  status.received = 42;
  brine::master::FrameQueue queue(1 << 20);
  REQUIRE(queue.Push({.bytes = "x", .received = brine::SystemClock().Now()}));
  brine::SystemClock clock;
  {
    brine::master::Reporter reporter({.metrics_file = dir / "m.prom",
                                      .database = dir / "none.sqlite",
                                      .master_id = "m",
                                      .queue_capacity_bytes = 1 << 20,
                                      .lag_warning = std::chrono::seconds(0),
                                      .throughput_every = std::chrono::seconds(0),
                                      .tick = std::chrono::milliseconds(20)},
                                     status, queue, log, clock);
    REQUIRE(WaitUntil([&] {
      const std::string text = brine::test::ReadFile(dir / "log");
      return text.find("[WARNING] commit lag ") != std::string::npos &&
             text.find("[INFO] last minute: ") != std::string::npos;
    }));
  }
  const std::string text = brine::test::ReadFile(dir / "log");
  CHECK(text.find("frames wait for the store") != std::string::npos);
  CHECK(text.find("since start 42 received") != std::string::npos);
  const auto samples = ParsePrometheus(brine::test::ReadFile(dir / "m.prom"));
  CHECK(samples.at("brine_pending_frames") == 1);
  CHECK(samples.at("brine_queue_frames") == 1);
  CHECK(samples.at("brine_events_received_total") == 42);
}

TEST_CASE("operations: brine.health exits 0 with the master up, 1 when it is stalled and 1 when it is down",
          "[master][e2e]") {
  MasterProcess m;
  const fs::path notify = m.dir() / "notify.sock";
  NotifySocket systemd(notify);
  ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  m.Start();
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  const std::string conf = m.conf_dir().string();

  // systemd hears READY=1 (the bus is bound, the store open), then watchdog pings.
  const std::string heard = systemd.ReadUntil([](const std::string& s) {
    return s.find("READY=1") != std::string::npos && s.find("WATCHDOG=1") != std::string::npos;
  });
  CHECK(heard.find("READY=1\nSTATUS=archiving ipc://") != std::string::npos);
  CHECK(heard.find("WATCHDOG=1") != std::string::npos);
  // The metrics file is there by the time READY=1 is sent.
  CHECK(fs::exists(MetricsFile(m)));

  REQUIRE(WaitUntil([&] { return fs::exists(MetricsFile(m)); }));
  brine::test::PushFrames(m.pull_endpoint(), Events(10));
  REQUIRE(WaitUntil([&] {
    const auto s = ParsePrometheusQuiet(brine::test::ReadFile(MetricsFile(m)));
    return s.count("brine_events_received_total") == 1 && s.at("brine_events_received_total") == 10;
  }));
  const auto up = Metrics(m);
  CHECK(up.at("brine_events_stored_total") == 10);
  CHECK(up.at("brine_pending_frames") == 0);
  CHECK(up.at("brine_last_commit_timestamp_seconds") > 0);
  CHECK(up.at("brine_store_bytes") > 0);

  const CliResult healthy = Run({"-c", conf, "brine.health"});
  INFO(healthy.out << healthy.err);
  CHECK(healthy.code == 0);
  CHECK(healthy.out.rfind("brine-master is running and keeps up: ", 0) == 0);

  const CliResult stats = Run({"-c", conf, "brine.stats", "--out", "json"});
  REQUIRE(stats.code == 0);
  const Value st = brine::ParseJson(stats.out);
  REQUIRE(st.Find("test_master") != nullptr);
  CHECK(*st.Find("test_master")->Find("running") == true);
  CHECK(*st.Find("test_master")->Find("since_start")->Find("received") == 10);
  CHECK(st.Find("test_master")->Find("per_second_last_minute") != nullptr);
  CHECK(st.Find("test_master")->Find("last_commit_us")->as_int() > 0);
  CHECK(st.Find("store")->Find("bytes")->as_int() > 0);
  // People get Salt's time format and no raw microseconds.
  const CliResult nested = Run({"-c", conf, "brine.stats"});
  CHECK(std::regex_search(nested.out, std::regex("    last_commit:\n        20[0-9]{2}, [A-Z][a-z]{2} [0-9]{2} ")));
  CHECK(nested.out.find("_us") == std::string::npos);

  {
    // Stalled: another connection holds the write lock, so nothing commits.
    SQLite::Database db(m.database().string(), SQLite::OPEN_READWRITE);
    db.exec("BEGIN IMMEDIATE");
    brine::test::PushFrames(m.pull_endpoint(), Events(3));
    CliResult stalled;
    REQUIRE(WaitUntil(
        [&] {
          stalled = Run({"-c", conf, "brine.health", "stall_factor=10"});
          return stalled.code == 1;
        },
        std::chrono::seconds(8)));
    CHECK(stalled.out.rfind("brine-master is stalled: no commit for ", 0) == 0);
    CHECK(stalled.out.find(" frames pending (limit 10 x brine.flush_interval_ms = 1.0 s)\n") != std::string::npos);
    db.exec("ROLLBACK");
  }
  REQUIRE(WaitUntil([&] { return Run({"-c", conf, "brine.health", "stall_factor=10"}).code == 0; }));

  REQUIRE(m.Stop() == 0);
  const CliResult down = Run({"-c", conf, "brine.health"});
  CHECK(down.code == 1);
  CHECK(down.out == "brine-master is not running: nothing listens on " + (m.sock_dir() / "master_event_pull.ipc").string() + "\n");
  // brine.stats says so, and the totals since the store was created survive a restart.
  CHECK(*brine::ParseJson(Run({"-c", conf, "brine.stats", "--out", "json"}).out).Find("test_master")->Find("running") ==
        false);
  m.Start();
  brine::test::PushFrames(m.pull_endpoint(), Events(2));
  REQUIRE(WaitUntil([&] {
    const Value s = brine::ParseJson(Run({"-c", conf, "brine.stats", "--out", "json"}).out);
    return *s.Find("test_master")->Find("since_start")->Find("received") == 2;
  }));
  const Value after = brine::ParseJson(Run({"-c", conf, "brine.stats", "--out", "json"}).out);
  CHECK(*after.Find("test_master")->Find("since_created")->Find("received") == 15);
  CHECK(m.Stop() == 0);
}

TEST_CASE("operations: the systemd unit passes systemd-analyze verify and has notify, watchdog and hardening",
          "[master]") {
  const std::string unit = brine::test::ReadFile(std::string(BRINE_SOURCE_DIR) + "/contrib/systemd/brine-master.service");
  REQUIRE(!unit.empty());
  for (const char* line : {"Type=notify\n", "WatchdogSec=60\n", "RestartPreventExitStatus=2\n", "Before=salt-master.service\n",
                           "NoNewPrivileges=yes\n", "ProtectSystem=strict\n", "ProtectHome=yes\n", "PrivateTmp=yes\n",
                           "ReadWritePaths=-/var/cache/salt -/run/salt -/var/log/salt\n"}) {
    INFO(line);
    CHECK(unit.find(line) != std::string::npos);
  }
  // verify wants ExecStart's binary to exist: point it at the built one.
  brine::test::TempDir dir;
  std::string local = unit;
  const std::string exec = "/usr/bin/brine-master";
  local.replace(local.find(exec), exec.size(), brine::test::Binary("brine-master").string());
  std::ofstream(dir / "brine-master.service") << local;
  const auto r = brine::test::Run({"/usr/bin/systemd-analyze", "verify", (dir / "brine-master.service").string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  // verify only warns (exit 0) about an unknown key or a bad value: it must say nothing.
  CHECK(r.err.empty());
  CHECK(r.out.empty());
}

TEST_CASE("operations: the logrotate snippet rotates the log and brine-master writes to a fresh one", "[master][e2e]") {
  MasterProcess m;
  m.Start();
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(m.log_file()).find("started") != std::string::npos; }));
  // The snippet, aimed at this master's log and signalling it directly
  // rather than through systemctl.
  std::string snippet = brine::test::ReadFile(std::string(BRINE_SOURCE_DIR) + "/contrib/logrotate/brine-master");
  const std::string path = "/var/log/salt/brine-master";
  snippet.replace(snippet.find(path), path.size(), m.log_file().string());
  const auto post = snippet.find("systemctl kill");
  REQUIRE(post != std::string::npos);
  snippet.replace(post, snippet.find('\n', post) - post, "kill -HUP " + std::to_string(m.child()->pid()));
  std::ofstream(m.dir() / "logrotate.conf") << snippet;
  const auto r = brine::test::Run({"/usr/sbin/logrotate", "--force", "--state", (m.dir() / "logrotate.state").string(),
                                   (m.dir() / "logrotate.conf").string()});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const fs::path rotated = m.log_file().string() + ".1";
  CHECK(brine::test::ReadFile(rotated).find("started") != std::string::npos);
  brine::test::PushFrames(m.pull_endpoint(), Events(1));
  CHECK(m.Stop() == 0);
  // After SIGHUP the master logs to a new file of its own, 0600.
  CHECK(brine::test::ReadFile(m.log_file()).find("stopped") != std::string::npos);
  CHECK((fs::status(m.log_file()).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("operations: brine.backup copies the store while brine-master writes, and the copy passes integrity_check",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string conf = m.conf_dir().string();
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  brine::test::JoiningThread writer([&] {
    while (!stop) {
      brine::test::PushFrames(m.pull_endpoint(), Events(200));
      sent += 200;
    }
  }, [&] { stop = true; });
  std::vector<fs::path> copies = {m.dir() / "backup1.sqlite", m.dir() / "backup2.sqlite"};
  std::vector<CliResult> results;
  (void)WaitUntil([&] { return sent >= 1000; });
  for (const auto& copy : copies) results.push_back(Run({"-c", conf, "brine.backup", copy.string(), "--out", "json"}));
  const int sent_during = sent;
  stop = true;
  writer.Join();
  CHECK(sent_during >= 1000);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const CliResult& r = results[i];
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    const Value v = brine::ParseJson(r.out);
    CHECK(*v.Find("integrity_check") == "ok");
    CHECK(*v.Find("backup") == copies[i].string());
    CHECK(v.Find("bytes")->as_int() > 0);
  }
  REQUIRE(m.Stop() == 0);
  // Each copy is a store brine opens, as of one commit: its events are a
  // prefix of what was sent, and the counters committed with them agree.
  std::int64_t previous = 0;
  for (const auto& copy : copies) {
    const std::int64_t events = std::stoll(brine::test::Sql(copy, "SELECT count(*) FROM salt_events"));
    const std::int64_t counted =
        std::stoll(brine::test::Sql(copy, "SELECT value FROM brine_counters WHERE name = 'stored'"));
    CHECK(events == counted);
    CHECK(events >= previous);
    CHECK(brine::test::Sql(copy, "PRAGMA integrity_check") == "ok\n");
    previous = events;
  }
  // An existing path is refused, not overwritten.
  const CliResult exists = Run({"-c", conf, "brine.backup", copies[0].string()});
  CHECK(exists.code == 1);
  CHECK(exists.err.find(copies[0].string() + " exists") != std::string::npos);
}

TEST_CASE("operations: brine.import_local_cache reads a local_cache tree written as Salt writes it, once, while "
          "brine-master ingests",
          "[runner][e2e]") {
  // The tree's jobs are from 2014 and 2024: with the default keep_jobs_seconds
  // a retention pass between the two imports would remove the first one's.
  MasterProcess m("keep_jobs_seconds: 0\n");
  const fs::path jobs = m.dir() / "cache" / "jobs";
  // tests/tools/write_local_cache.py follows spec salt-jobs.md 4.1 byte for byte.
  const auto gen = brine::test::Run({"/usr/bin/python3", std::string(BRINE_SOURCE_DIR) + "/tests/tools/write_local_cache.py",
                                     jobs.string()});
  INFO(gen.out << gen.err);
  REQUIRE(gen.exit_code == 0);
  m.Start();
  const std::string conf = m.conf_dir().string();
  std::atomic<bool> stop{false};
  // At least one burst, however quick the imports are (they can end before
  // the thread's first look at `stop`).
  brine::test::JoiningThread writer([&] {
    do {
      brine::test::PushFrames(m.pull_endpoint(), Events(50));
    } while (!stop);
  }, [&] { stop = true; });
  const CliResult first = Run({"-c", conf, "brine.import_local_cache", "--out", "json"});
  const CliResult second = Run({"-c", conf, "brine.import_local_cache", jobs.string(), "--out", "json"});
  stop = true;
  writer.Join();
  INFO(first.out << first.err);
  REQUIRE(first.code == 0);
  const Value r1 = brine::ParseJson(first.out);
  CHECK(*r1.Find("jobs") == 5);  // the job with a damaged .load.p is skipped
  CHECK(*r1.Find("returns") == 5);  // not the nocache job's, not the damaged return.p
  CHECK(r1.Find("damaged")->as_map().size() == 2);
  for (const auto& [path, why] : r1.Find("damaged")->as_map()) {
    CHECK((path.ends_with("/.load.p") || path.ends_with("/web2/return.p")));
    CHECK(why.as_string().rfind("not one msgpack value", 0) == 0);
  }
  // Idempotent: the second run finds everything there.
  const Value r2 = brine::ParseJson(second.out);
  CHECK(*r2.Find("jobs") == 0);
  CHECK(*r2.Find("jobs_present") == 5);
  CHECK(*r2.Find("returns") == 0);
  CHECK(*r2.Find("returns_present") == 5);

  // What Salt's local_cache gives for the tree (spec 4.2, 4.3), through the jobs runner.
  CHECK(Run({"-c", conf, "jobs.lookup_jid", "20240101120000123456"}).out == "web1:\n    True\n");
  const Value job = brine::ParseJson(Run({"-c", conf, "jobs.list_job", "20240101120000123456", "--out", "json"}).out);
  CHECK(*job.Find("Minions") == Value::List({"web1", "web2"}));
  CHECK(*job.Find("Result") ==
        Value::Map({{"web1", Value::Map({{"return", true}, {"retcode", 0}, {"success", true}})}}));
  // Syndic lists merge; out.p comes back as "out"; a datetime (ext 78) and a too-big int as Salt packs them.
  const Value state = brine::ParseJson(Run({"-c", conf, "jobs.list_job", "20240101120500654321", "--out", "json"}).out);
  CHECK(*state.Find("Minions") == Value::List({"db1", "web1"}));
  CHECK(*state.Find("Metadata") == Value::Map({{"ticket", 7}}));
  CHECK(*state.Find("Result")->Find("web1")->Find("out") == "highstate");
  const Value* motd = state.Find("Result")->Find("web1")->Find("return")->Find("file_|-motd_|-/etc/motd_|-managed");
  REQUIRE(motd != nullptr);
  CHECK(*motd->Find("inode") == "1180591620717411303424");
  CHECK(*state.Find("Result")->Find("db1") ==
        Value::Map({{"return", "Minion did not run state"}, {"retcode", 2}, {"success", false}}));
  // The old bare return.p, and nocache (load kept, return not).
  CHECK(Run({"-c", conf, "jobs.lookup_jid", "20140101000000000001"}).out == "old1:\n     00:00:01 up 1 day\n");
  CHECK(Run({"-c", conf, "jobs.lookup_jid", "20240101130000000000"}).out.empty());
  CHECK(*brine::ParseJson(Run({"-c", conf, "jobs.list_job", "20240101130000000000", "--out", "json"}).out)
             .Find("Function") == "test.ping");
  // The damaged return.p is skipped, its neighbour kept.
  CHECK(Run({"-c", conf, "jobs.lookup_jid", "20240101150000000000"}).out == "web1:\n    hi\n");
  // The endtime file, with job_cache_store_endtime.
  fs::create_directories(m.conf_dir() / "master.d");
  std::ofstream(m.conf_dir() / "master.d" / "endtime.conf") << "job_cache_store_endtime: true\n";
  const Value ended = brine::ParseJson(Run({"-c", conf, "jobs.list_job", "20240101120500654321", "--out", "json"}).out);
  REQUIRE(ended.Find("EndTime") != nullptr);
  CHECK(*ended.Find("EndTime") == "2024, Jan 01 12:05:03.114477");
  // The master's own frames went in meanwhile.
  CHECK(m.Stop() == 0);
  CHECK(std::stoll(brine::test::Sql(m.database(), "SELECT count(*) FROM salt_events")) >= 50);
  // A folder that is not there is a runtime error.
  const CliResult missing = Run({"-c", conf, "brine.import_local_cache", (m.dir() / "nope").string()});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("not a folder") != std::string::npos);
}

namespace {

// A job announced and answered on the bus as a Salt master and its minions do.
std::vector<std::string> JobFrames(const std::string& jid, const std::string& fun,
                                   const std::vector<std::string>& minions, const std::string& return_json) {
  std::vector<std::string> frames;
  Value names = Value::EmptyList();
  for (const auto& m : minions) names.as_list().emplace_back(m);
  frames.push_back(brine::wire::EncodeFrame(
      "salt/job/" + jid + "/new",
      Value::Map({{"jid", jid}, {"tgt", "*"}, {"tgt_type", "glob"}, {"user", "root"}, {"fun", fun},
                  {"arg", Value::EmptyList()}, {"minions", names}, {"missing", Value::EmptyList()},
                  {"_stamp", "2026-11-23T10:00:00.000000"}}),
      brine::wire::Framing::kNew));
  for (const auto& m : minions) {
    Value ret = Value::Map({{"cmd", "_return"}, {"id", m}, {"jid", jid}, {"fun", fun}, {"fun_args", Value::EmptyList()},
                            {"return", brine::ParseJson(return_json)}, {"retcode", 0}, {"success", true},
                            {"_stamp", "2026-11-23T10:00:01.000000"}});
    frames.push_back(brine::wire::EncodeFrame("salt/job/" + jid + "/ret/" + m, ret, brine::wire::Framing::kNew));
  }
  return frames;
}

std::string JsonOut(const std::string& conf, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", conf, "--out", "json"});
  const CliResult r = Run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("operations: brine.export and brine.import_export move jobs, returns and events to a fresh store losslessly",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string conf = m.conf_dir().string();
  const brine::Micros now = brine::SystemClock().Now();
  // Jids three, two and one hour old; returns with non-ASCII text, integers at
  // both 64-bit ends, floats; events that are no job's.
  const std::vector<std::string> jids = {brine::FormatJid(now - std::chrono::hours(3)),
                                         brine::FormatJid(now - std::chrono::hours(2)),
                                         brine::FormatJid(now - std::chrono::hours(1))};
  const std::string odd = R"({"ünïcødé ✓":"日本語\u0000\t\"","big":18446744073709551615,"small":-9223372036854775808,)"
                          R"("f":0.1,"e":1.5e+300,"neg":-0.0,"list":[1,2.5,null,true,{}]})";
  std::vector<std::string> frames = JobFrames(jids[0], "test.ping", {"m1", "m2"}, "true");
  for (auto& f : JobFrames(jids[1], "state.apply", {"m1", "m2", "m3"}, odd)) frames.push_back(std::move(f));
  for (auto& f : JobFrames(jids[2], "cmd.run", {"m2"}, R"("caf\u00e9 \ud83d\ude00")")) frames.push_back(std::move(f));
  frames.push_back(brine::wire::EncodeFrame("salt/auth", Value::Map({{"id", "m9"}, {"act", "pend"}}),
                                            brine::wire::Framing::kNew));
  // The same return again with its own _stamp: archived sharing the payload.
  frames.push_back(brine::wire::EncodeFrame(
      "salt/job/" + jids[0] + "/ret/m1",
      Value::Map({{"cmd", "_return"}, {"id", "m1"}, {"jid", jids[0]}, {"fun", "test.ping"},
                  {"fun_args", Value::EmptyList()}, {"return", true}, {"retcode", 0}, {"success", true},
                  {"_stamp", "2026-11-23T10:00:09.000000"}}),
      brine::wire::Framing::kNew));
  brine::test::PushFrames(m.pull_endpoint(), frames);
  REQUIRE(WaitUntil([&] { return brine::test::Counter(m.database(), "received") == static_cast<std::int64_t>(frames.size()); }));
  REQUIRE(m.Stop() == 0);

  const fs::path file = m.dir() / "export.jsonl";
  const Value exported = brine::ParseJson(JsonOut(conf, {"brine.export", file.string()}));
  CHECK(exported.Find("jobs")->as_int() == 3);
  CHECK(exported.Find("returns")->as_int() == 6);
  CHECK(exported.Find("events")->as_int() == static_cast<std::int64_t>(frames.size()));

  // Another store, through another config.
  MasterProcess other;
  fs::create_directories(other.database().parent_path());
  const std::string conf2 = other.conf_dir().string();
  const Value imported = brine::ParseJson(JsonOut(conf2, {"brine.import_export", file.string()}));
  CHECK(imported.Find("jobs")->as_int() == 3);
  CHECK(imported.Find("returns")->as_int() == 6);
  CHECK(imported.Find("events")->as_int() == static_cast<std::int64_t>(frames.size()));

  auto same_answers = [&] {
    CHECK(JsonOut(conf, {"jobs.list_jobs"}) == JsonOut(conf2, {"jobs.list_jobs"}));
    for (const auto& jid : jids) {
      CHECK(JsonOut(conf, {"jobs.lookup_jid", jid}) == JsonOut(conf2, {"jobs.lookup_jid", jid}));
      CHECK(JsonOut(conf, {"jobs.list_job", jid}) == JsonOut(conf2, {"jobs.list_job", jid}));
    }
    // The events, the returns' arrival times and the jobs' first sight: the
    // second store's export is the first's, byte for byte.
    const fs::path again = other.dir() / "again.jsonl";
    fs::remove(again);
    (void)JsonOut(conf2, {"brine.export", again.string()});
    CHECK(brine::test::ReadFile(again) == brine::test::ReadFile(file));
  };
  same_answers();
  CHECK(brine::test::ReadFile(file).find("日本語") != std::string::npos);
  CHECK(brine::test::ReadFile(file).find("18446744073709551615") != std::string::npos);
  // The archived return events share their return's payload, as the master stored them.
  CHECK(brine::test::Sql(other.database(), "SELECT count(*) FROM event WHERE data IS NULL") ==
        brine::test::Sql(m.database(), "SELECT count(*) FROM event WHERE data IS NULL"));

  // Twice is once.
  const Value twice = brine::ParseJson(JsonOut(conf2, {"brine.import_export", file.string()}));
  CHECK(twice.Find("jobs")->as_int() == 0);
  CHECK(twice.Find("jobs_present")->as_int() == 3);
  CHECK(twice.Find("returns")->as_int() == 0);
  CHECK(twice.Find("returns_present")->as_int() == 6);
  CHECK(twice.Find("events")->as_int() == 0);
  CHECK(twice.Find("events_present")->as_int() == static_cast<std::int64_t>(frames.size()));
  same_answers();

  // --since/--until pick jobs by jid time (until exclusive); events by arrival (all just now).
  const fs::path part = m.dir() / "part.jsonl";
  const std::string since = brine::FormatStamp(now - std::chrono::minutes(150));
  const std::string until = brine::FormatStamp(now - std::chrono::minutes(60));
  const Value window = brine::ParseJson(JsonOut(conf, {"brine.export", "--since", since, "--until=" + until, part.string()}));
  CHECK(window.Find("jobs")->as_int() == 1);
  CHECK(window.Find("returns")->as_int() == 3);
  CHECK(window.Find("events")->as_int() == 0);
  CHECK(brine::test::ReadFile(part).find("\"job\":\"" + jids[1] + "\"") != std::string::npos);

  // A file that is not an export is refused with its line.
  std::ofstream(m.dir() / "bad.jsonl") << "{\"brine_export\":1,\"schema\":5,\"since\":null,\"until\":null}\n{\"job\":5}\n";
  const CliResult bad = Run({"-c", conf2, "brine.import_export", (m.dir() / "bad.jsonl").string()});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("line 2") != std::string::npos);
}
