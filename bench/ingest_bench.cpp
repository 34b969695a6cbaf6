// ingest_bench: a real brine-master fed at full speed, side by side with a
// fixed baseline.
//
// brine: starts build/bin/brine-master on a temp config, a C++ sender pushes a
// Salt-like stream over the ipc bus as fast as ZeroMQ takes it (per job the
// bare-jid event, the `new` event and 10 returns of ~400 bytes of JSON from
// 1,000 interleaved minions), and the clock stops when the master's counters
// (committed with the data) show every frame. Also: the master's peak RSS
// (VmHWM) and the bytes on disk per event against the JSON sent.
//
// baseline: the same stream inserted by a minimal prepared-statement loop
// (WAL, synchronous=NORMAL, 1,000-row transactions, default cache) into a
// fixed layout with no secondary index:
//   jids(jid TEXT PRIMARY KEY, load TEXT NOT NULL)
//   salt_returns(fun, jid, return, id, success, full_ret, alter_time)
//   salt_events(id INTEGER PRIMARY KEY, tag, data, master_id, alter_time)
// (This program speaks SQL itself only to build that baseline.)
//
// usage: ingest_bench [--jobs N] [--minions N] [--bin DIR] [--keep DIR]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/wire/codec.h"

namespace {

using brine::Value;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Args {
  int jobs = 100000;
  int minions = 1000;
  int returns_per_job = 10;
  fs::path bin = fs::path(BRINE_BIN_DIR);
  fs::path keep;
};

struct StreamEvent {
  std::string tag;
  Value data;
  std::string frame;
};

// The stream, built before the clock starts.
std::vector<StreamEvent> BuildStream(const Args& args) {
  std::mt19937 rng(7);
  std::vector<std::string> minions;
  for (int i = 0; i < args.minions; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "minion-%04d.dc1.example.com", i);
    minions.emplace_back(buf);
  }
  std::vector<StreamEvent> out;
  out.reserve(static_cast<std::size_t>(args.jobs) * static_cast<std::size_t>(args.returns_per_job + 2));
  auto t = brine::SystemClock().Now();
  for (int j = 0; j < args.jobs; ++j) {
    t += std::chrono::microseconds(1000);
    const std::string jid = brine::FormatJid(t);
    const auto first = rng() % static_cast<unsigned>(args.minions);
    brine::ValueList targets;
    for (int k = 0; k < args.returns_per_job; ++k) {
      targets.emplace_back(minions[(first + static_cast<unsigned>(k) * 97u) % minions.size()]);
    }
    const std::string stamp = brine::FormatStamp(t);
    out.push_back({jid, Value::Map({{"minions", Value(targets)}, {"_stamp", stamp}}), ""});
    out.push_back({"salt/job/" + jid + "/new",
                   Value::Map({{"jid", jid}, {"tgt_type", "list"}, {"tgt", Value(targets)}, {"user", "root"},
                               {"fun", "cmd.run"}, {"arg", Value::List({"systemctl is-active nginx"})},
                               {"minions", Value(targets)}, {"missing", Value::EmptyList()}, {"_stamp", stamp}}),
                   ""});
    for (const Value& m : targets) {
      std::string text = "active\n" + std::string(200 + rng() % 100, 'x');
      out.push_back({"salt/job/" + jid + "/ret/" + m.as_string(),
                     Value::Map({{"cmd", "_return"}, {"id", m}, {"fun", "cmd.run"},
                                 {"fun_args", Value::List({"systemctl is-active nginx"})}, {"jid", jid},
                                 {"return", text}, {"retcode", 0}, {"success", true}, {"_stamp", stamp}}),
                     ""});
    }
  }
  for (auto& e : out) e.frame = brine::wire::EncodeFrame(e.tag, e.data, brine::wire::Framing::kNew);
  return out;
}

std::int64_t Counter(const fs::path& db, const char* name) {
  try {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY, 5000);
    SQLite::Statement q(d, "SELECT value FROM brine_counters WHERE name = ?");
    q.bind(1, name);
    return q.executeStep() ? q.getColumn(0).getInt64() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

long PeakRssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct BrineResult {
  std::int64_t stored = 0;   // archived events (counter)
  std::int64_t returns = 0;  // returns in the job cache (counter)
  double seconds = 0;
  long rss_kib = 0;
  std::uintmax_t bytes = 0;
};

BrineResult RunBrine(const Args& args, const std::vector<StreamEvent>& stream, const fs::path& dir) {
  fs::create_directories(dir / "conf");
  std::ofstream(dir / "conf" / "master") << "id: bench_master\ncachedir: " << (dir / "cache").string()
                                         << "\nbrine.sock_dir: " << (dir / "sock").string()
                                         << "\nbrine.log_file: " << (dir / "brine-master.log").string()
                                         << "\nkeep_jobs_seconds: 0\nloop_interval: 3600\n";
  const fs::path db = dir / "cache" / "brine.sqlite";
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string exe = (args.bin / "brine-master").string();
    const std::string conf = (dir / "conf").string();
    execl(exe.c_str(), exe.c_str(), "-c", conf.c_str(), nullptr);
    _exit(127);
  }
  while (!fs::exists(dir / "sock" / "master_event_pull.ipc")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 0);
  push.set(zmq::sockopt::linger, -1);
  push.connect("ipc://" + (dir / "sock" / "master_event_pull.ipc").string());
  const auto start = SteadyClock::now();
  for (const auto& e : stream) push.send(zmq::buffer(e.frame), zmq::send_flags::none);
  const auto total = static_cast<std::int64_t>(stream.size());
  while (Counter(db, "received") < total) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BrineResult r;
  r.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  r.stored = Counter(db, "stored");
  r.returns = Counter(db, "returns");
  r.rss_kib = PeakRssKib(pid);
  push.close();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  {
    SQLite::Database d(db.string(), SQLite::OPEN_READWRITE);
    d.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  r.bytes = fs::file_size(db);
  return r;
}

double RunBaseline(const std::vector<StreamEvent>& stream, const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path db = dir / "baseline.sqlite";
  SQLite::Database d(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  d.exec("PRAGMA journal_mode = WAL");
  d.exec("PRAGMA synchronous = NORMAL");
  d.exec(
      "CREATE TABLE jids (jid TEXT PRIMARY KEY, load TEXT NOT NULL);"
      "CREATE TABLE salt_returns (fun TEXT, jid TEXT, return TEXT, id TEXT, success TEXT, full_ret TEXT,"
      " alter_time TEXT);"
      "CREATE TABLE salt_events (id INTEGER PRIMARY KEY, tag TEXT, data TEXT, master_id TEXT, alter_time TEXT);");
  SQLite::Statement job(d, "INSERT OR IGNORE INTO jids (jid, load) VALUES (?, ?)");
  SQLite::Statement ret(d,
                        "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret, alter_time)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)");
  SQLite::Statement ev(d, "INSERT INTO salt_events (tag, data, master_id, alter_time) VALUES (?, ?, ?, ?)");
  const auto start = SteadyClock::now();
  int rows = 0;
  d.exec("BEGIN");
  for (const auto& e : stream) {
    // The same work brine does per frame: decode it, make JSON.
    auto decoded = brine::wire::DecodeFrame(e.frame);
    const auto& event = std::get<brine::wire::DecodedEvent>(decoded);
    const std::string data = brine::ToJson(event.data);
    const std::string now = brine::FormatSqliteTime(brine::SystemClock().Now());
    ev.bind(1, event.tag);
    ev.bind(2, data);
    ev.bind(3, "bench_master");
    ev.bind(4, now);
    ev.exec();
    ev.reset();
    ++rows;
    if (event.tag.find("/new") != std::string::npos) {
      job.bind(1, *event.data.FindString("jid"));
      job.bind(2, data);
      job.exec();
      job.reset();
      ++rows;
    } else if (event.tag.find("/ret/") != std::string::npos) {
      ret.bind(1, *event.data.FindString("fun"));
      ret.bind(2, *event.data.FindString("jid"));
      ret.bind(3, brine::ToJson(*event.data.Find("return")));
      ret.bind(4, *event.data.FindString("id"));
      ret.bind(5, "True");
      ret.bind(6, data);
      ret.bind(7, now);
      ret.exec();
      ret.reset();
      ++rows;
    }
    if (rows >= 1000) {
      d.exec("COMMIT");
      d.exec("BEGIN");
      rows = 0;
    }
  }
  d.exec("COMMIT");
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--jobs") args.jobs = std::stoi(argv[i + 1]);
    else if (k == "--minions") args.minions = std::stoi(argv[i + 1]);
    else if (k == "--bin") args.bin = argv[i + 1];
    else if (k == "--keep") args.keep = argv[i + 1];
  }
  const fs::path dir = args.keep.empty() ? fs::temp_directory_path() / ("brine-ingest-bench-" + std::to_string(getpid()))
                                         : args.keep;
  fs::remove_all(dir);
  std::fprintf(stderr, "building the stream (%d jobs)...\n", args.jobs);
  const auto stream = BuildStream(args);
  std::uint64_t json_bytes = 0;
  for (const auto& e : stream) json_bytes += e.tag.size() + brine::ToJson(e.data).size();
  const double n = static_cast<double>(stream.size());

  std::fprintf(stderr, "brine-master...\n");
  const BrineResult brine = RunBrine(args, stream, dir / "brine");
  std::fprintf(stderr, "baseline...\n");
  const double base = RunBaseline(stream, dir / "baseline");
  const auto base_bytes = fs::file_size(dir / "baseline" / "baseline.sqlite");

  std::printf("ingest_bench: %zu events (%d jobs x (bare + new + %d returns)), %d minions\n", stream.size(), args.jobs,
              args.returns_per_job, args.minions);
  std::printf("  %-34s %12s %10s\n", "", "events/s", "seconds");
  std::printf("  %-34s %12.0f %10.2f\n", "brine-master (send -> committed)", n / brine.seconds, brine.seconds);
  std::printf("  %-34s %12.0f %10.2f\n", "baseline (prepared loop, no index)", n / base, base);
  std::printf("  brine / baseline: %.2f\n", (n / brine.seconds) / (n / base));
  std::printf("  master peak RSS: %.1f MiB\n", static_cast<double>(brine.rss_kib) / 1024.0);
  std::printf("  disk: brine %.2f x JSON sent (%.0f B/event), baseline %.2f x\n",
              static_cast<double>(brine.bytes) / static_cast<double>(json_bytes),
              static_cast<double>(brine.bytes) / n, static_cast<double>(base_bytes) / static_cast<double>(json_bytes));
  std::printf("{\"bench\":\"ingest\",\"events\":%zu,\"brine_events_per_s\":%.0f,\"baseline_events_per_s\":%.0f,"
              "\"ratio\":%.3f,\"master_peak_rss_mib\":%.1f,\"disk_over_json\":%.3f}\n",
              stream.size(), n / brine.seconds, n / base, (n / brine.seconds) / (n / base),
              static_cast<double>(brine.rss_kib) / 1024.0,
              static_cast<double>(brine.bytes) / static_cast<double>(json_bytes));
  if (args.keep.empty()) fs::remove_all(dir);
  // Every frame archived and every return in the job cache, or the run failed.
  const auto expected_returns = static_cast<std::int64_t>(args.jobs) * args.returns_per_job;
  if (brine.stored != static_cast<std::int64_t>(stream.size()) || brine.returns != expected_returns) {
    std::fprintf(stderr, "ingest_bench: LOST DATA: stored %lld of %zu events, %lld of %lld returns\n",
                 static_cast<long long>(brine.stored), stream.size(), static_cast<long long>(brine.returns),
                 static_cast<long long>(expected_returns));
    return 1;
  }
  return 0;
}
