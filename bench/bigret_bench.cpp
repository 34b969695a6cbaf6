// bigret_bench: big returns through a real brine-master, then read back as a
// user reads them.
//
// Starts build/bin/brine-master on a temp config with brine.max_frame_bytes
// raised to 256 MiB and sends two jobs as Salt does (bare jid, new, one
// return): a cmd.run whose `return` is a --mb MB string (lines of command
// output) and a pillar.items whose `return` is a dict of --keys keys of about
// the same JSON size. It times each return from send to commit, then runs
// `brine-run jobs.lookup_jid <jid> --out json` as a process, once to warm the
// page cache and --runs times timed, and prints the median wall time, the
// peak RSS (getrusage of the child) and that RSS over the return's JSON size.
// Targets of issue 7: under 1 s, RSS under 3 times the return.
//
// usage: bigret_bench [--mb N] [--keys N] [--runs N] [--bin DIR] [--keep DIR]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench_support.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/wire/codec.h"

namespace {

using brine::bench::Counter;
using brine::bench::Median;
using brine::bench::PeakRssKib;
using brine::bench::RunOnce;
using brine::bench::Sample;

namespace fs = std::filesystem;
using brine::Value;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  long mb = 50;
  long keys = 500000;
  int runs = 5;
  fs::path bin = fs::path(BRINE_BIN_DIR);
  fs::path keep;
};

// About `bytes` of command output: numbered lines of printable text.
std::string BigText(long bytes) {
  std::string s;
  s.reserve(static_cast<std::size_t>(bytes) + 128);
  char line[160];
  for (long i = 0; static_cast<long>(s.size()) < bytes; ++i) {
    std::snprintf(line, sizeof line, "%08ld /srv/data/archive/2026/11/%02ld/host-%05ld.log.gz  rw-r--r--  %10ld bytes\n",
                  i, i % 30 + 1, i % 100000, (i * 7919) % 1000000000);
    s += line;
  }
  return s;
}

// `keys` keys of about 100 bytes of JSON each (key, value and separators).
Value BigDict(long keys) {
  brine::ValueMap m;
  char key[32];
  char val[96];
  for (long i = 0; i < keys; ++i) {
    std::snprintf(key, sizeof key, "pillar_key_%07ld", i);
    std::snprintf(val, sizeof val, "value %07ld: /etc/app/conf.d/%05ld.conf managed by salt, revision %06ld", i,
                  i % 50000, (i * 31) % 1000000);
    m.emplace_back(key, Value(std::string(val)));
  }
  return Value(std::move(m));
}

struct Job {
  std::string name;
  std::string fun;
  std::string jid;
  Value ret;
  std::size_t ret_json_bytes = 0;
  std::size_t frame_bytes = 0;
  double ingest_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--mb") args.mb = std::stol(argv[i + 1]);
    else if (k == "--keys") args.keys = std::stol(argv[i + 1]);
    else if (k == "--runs") args.runs = std::stoi(argv[i + 1]);
    else if (k == "--bin") args.bin = argv[i + 1];
    else if (k == "--keep") args.keep = argv[i + 1];
    else {
      std::fprintf(stderr, "bigret_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const fs::path dir = args.keep.empty() ? fs::temp_directory_path() / ("brine-bigret-bench-" + std::to_string(getpid()))
                                         : args.keep;
  fs::remove_all(dir);
  fs::create_directories(dir / "conf");
  std::ofstream(dir / "conf" / "master") << "id: bench_master\ncachedir: " << (dir / "cache").string()
                                         << "\nbrine.bus: bind\nbrine.sock_dir: " << (dir / "sock").string()
                                         << "\nbrine.log_file: " << (dir / "brine-master.log").string()
                                         << "\nbrine.max_frame_bytes: 268435456"
                                         << "\nkeep_jobs_seconds: 0\nloop_interval: 3600\n";
  const fs::path db = dir / "cache" / "brine.sqlite";

  std::fprintf(stderr, "building the returns (%ld MB string, %ld keys)...\n", args.mb, args.keys);
  const auto now = brine::SystemClock().Now();
  std::vector<Job> jobs;
  jobs.push_back({"cmd.run, " + std::to_string(args.mb) + " MB string", "cmd.run", brine::FormatJid(now),
                  Value(BigText(args.mb * 1000000)), 0, 0, 0});
  jobs.push_back({"pillar.items, dict of " + std::to_string(args.keys) + " keys", "pillar.items",
                  brine::FormatJid(now + std::chrono::microseconds(1)), BigDict(args.keys), 0, 0, 0});

  // Made before the fork: the child may not allocate (bench_support.h, Spawn).
  const std::string exe = (args.bin / "brine-master").string();
  const std::string conf = (dir / "conf").string();
  const pid_t pid = fork();
  if (pid == 0) {
    execl(exe.c_str(), exe.c_str(), "-c", conf.c_str(), nullptr);
    _exit(127);
  }
  while (!fs::exists(dir / "sock" / "master_event_pull.ipc")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, -1);
  push.connect("ipc://" + (dir / "sock" / "master_event_pull.ipc").string());
  const std::string minion = "db-0001.dc1.example.com";
  std::int64_t sent = 0;
  bool lost = false;
  for (auto& job : jobs) {
    const std::string stamp = brine::FormatStamp(now);
    const Value targets = Value::List({minion});
    job.ret_json_bytes = brine::ToJson(job.ret).size();
    const std::string ret_frame = brine::wire::EncodeFrame(
        "salt/job/" + job.jid + "/ret/" + minion,
        Value::Map({{"cmd", "_return"}, {"id", minion}, {"fun", job.fun}, {"fun_args", Value::EmptyList()},
                    {"jid", job.jid}, {"return", job.ret}, {"retcode", 0}, {"success", true}, {"_stamp", stamp}}),
        brine::wire::Framing::kNew);
    job.frame_bytes = ret_frame.size();
    const auto start = SteadyClock::now();
    for (const std::string& f :
         {brine::wire::EncodeFrame(job.jid, Value::Map({{"minions", targets}, {"_stamp", stamp}}),
                                   brine::wire::Framing::kNew),
          brine::wire::EncodeFrame("salt/job/" + job.jid + "/new",
                                   Value::Map({{"jid", job.jid}, {"tgt_type", "glob"}, {"tgt", minion}, {"user", "root"},
                                               {"fun", job.fun}, {"arg", Value::EmptyList()}, {"minions", targets},
                                               {"missing", Value::EmptyList()}, {"_stamp", stamp}}),
                                   brine::wire::Framing::kNew),
          ret_frame}) {
      push.send(zmq::buffer(f), zmq::send_flags::none);
      ++sent;
    }
    const auto deadline = SteadyClock::now() + std::chrono::seconds(120);
    while (Counter(db, "received") < sent && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    job.ingest_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  }
  const long master_rss = PeakRssKib(pid);
  const std::int64_t returns = Counter(db, "returns");
  const std::int64_t quarantined = Counter(db, "quarantined");
  push.close();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  if (returns != static_cast<std::int64_t>(jobs.size())) {
    std::fprintf(stderr, "bigret_bench: LOST DATA: %lld of %zu returns stored, %lld frames quarantined\n",
                 static_cast<long long>(returns), jobs.size(), static_cast<long long>(quarantined));
    lost = true;
  }

  // A child's ru_maxrss counts the pages it shared with this process before
  // exec: the returns built here (hundreds of MB) would be measured as
  // brine-run's. Give them back to the system first.
  for (auto& job : jobs) job.ret = Value();
  malloc_trim(0);

  std::printf("bigret_bench: jobs.lookup_jid of big returns, median of %d runs (warm)\n", args.runs);
  std::printf("  %-36s %9s %9s %9s %9s %9s %9s\n", "return", "JSON MB", "ingest s", "lookup s", "RSS MiB",
              "RSS/ret", "out MB");
  const std::string run = (args.bin / "brine-run").string();
  for (const auto& job : jobs) {
    if (lost) break;
    const std::vector<std::string> command = {run, "-c", (dir / "conf").string(), "jobs.lookup_jid", job.jid,
                                              "--out", "json"};
    const fs::path out_file = dir / "lookup.out";
    (void)RunOnce(command, out_file);  // warm the page cache
    std::vector<double> secs;
    long rss = 0;
    std::size_t out_bytes = 0;
    for (int i = 0; i < args.runs; ++i) {
      const Sample s = RunOnce(command, out_file);
      secs.push_back(s.seconds);
      rss = std::max(rss, s.rss_kib);
      out_bytes = s.out_bytes;
    }
    const double ret_mb = static_cast<double>(job.ret_json_bytes) / 1e6;
    const double rss_ratio = static_cast<double>(rss) * 1024.0 / static_cast<double>(job.ret_json_bytes);
    std::printf("  %-36s %9.1f %9.2f %9.3f %9.1f %9.2f %9.1f\n", job.name.c_str(), ret_mb, job.ingest_s, Median(secs),
                static_cast<double>(rss) / 1024.0, rss_ratio, static_cast<double>(out_bytes) / 1e6);
    std::printf("{\"bench\":\"bigret\",\"return\":\"%s\",\"return_json_bytes\":%zu,\"frame_bytes\":%zu,"
                "\"ingest_s\":%.3f,\"lookup_s\":%.4f,\"peak_rss_mib\":%.1f,\"rss_over_return\":%.2f}\n",
                job.name.c_str(), job.ret_json_bytes, job.frame_bytes, job.ingest_s, Median(secs),
                static_cast<double>(rss) / 1024.0, rss_ratio);
  }
  std::printf("  master peak RSS while storing them: %.1f MiB\n", static_cast<double>(master_rss) / 1024.0);
  std::printf("{\"bench\":\"bigret_master\",\"master_peak_rss_mib\":%.1f}\n", static_cast<double>(master_rss) / 1024.0);
  if (args.keep.empty()) fs::remove_all(dir);
  return lost ? 1 : 0;
}
