// query_bench: brine-run's answers on a big store, timed as a user runs them.
//
// The store is built once through a real brine-master (kept in --store between
// runs): --jobs jobs of 10 returns each from 1,000 minions, jids spread evenly
// over the ten days before the build (so 1M jobs put 100k in the last 24 h),
// plus one job answered by 10,000 minions. Then each query runs as a brine-run
// process, 5 times warm and (where the page cache can be dropped for the file)
// 5 times cold; the table shows the median wall time and the peak RSS. Time
// windows are relative to the build (recorded in built.json), so a store kept
// for days answers the same queries.
//
// The store is rebuilt when built.json names another job count or the store's
// schema is older than this build's migrations (a store migrated in place is
// not the layout a fresh master writes).
//
// Why not brine-sim (issue 7 asks for its virtual clock): its fleet has a fixed
// target mix (40% `*`, 30% role globs, 20% lists, 10% one id) and a realistic
// return-size mix (grains ~2.5 kB, highstates ~20 kB mean), so it cannot give
// exactly 1M jobs of 10 returns plus one job of 10,000, and 10M of its returns
// would be ~60 GB and take hours at the ~4,400 events/s it reaches here. This
// builder sends the same Salt framing and event sequence (bare jid, new,
// returns) with jids and _stamp from its own virtual clock, through the master
// with keep_jobs_seconds: 0, at full speed.
//
// usage: query_bench [--jobs N] [--store DIR] [--bin DIR] [--runs N]
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench_support.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"

namespace {

using brine::bench::Counter;
using brine::bench::DropCache;
using brine::bench::Median;
using brine::bench::PeakRssKib;
using brine::bench::RunOnce;
using brine::bench::Sample;

namespace fs = std::filesystem;
using brine::Value;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  long jobs = 100000;
  fs::path store = "/var/tmp/brine-query-bench";
  fs::path bin = fs::path(BRINE_BIN_DIR);
  int runs = 5;
};

std::string Minion(long i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "web-%05ld.dc1.example.com", i);
  return buf;
}

// Pushes one job (bare jid, new, returns) as Salt does.
void PushJob(zmq::socket_t& push, const std::string& jid, const std::string& fun, const std::vector<std::string>& targets,
             brine::Micros t, std::mt19937& rng, std::int64_t& sent) {
  brine::ValueList tl;
  for (const auto& m : targets) tl.emplace_back(m);
  const std::string stamp = brine::FormatStamp(t);
  auto send = [&](const std::string& tag, const Value& data) {
    const std::string f = brine::wire::EncodeFrame(tag, data, brine::wire::Framing::kNew);
    push.send(zmq::buffer(f), zmq::send_flags::none);
    ++sent;
  };
  send(jid, Value::Map({{"minions", Value(tl)}, {"_stamp", stamp}}));
  // A few users, one return in 40 failed (a state.apply's with a failed state in
  // its highstate dict) and an auth event now and then, for forensic_bench.
  static const char* const kUsers[] = {"root", "sudo_alice", "sudo_bob"};
  send("salt/job/" + jid + "/new",
       Value::Map({{"jid", jid}, {"tgt_type", targets.size() > 1 ? "list" : "glob"},
                   {"tgt", targets.size() > 1 ? Value(tl) : Value(targets[0])}, {"user", kUsers[rng() % 3]}, {"fun", fun},
                   {"arg", fun == "cmd.run" ? Value::List({"uptime"}) : Value::EmptyList()}, {"minions", Value(tl)},
                   {"missing", Value::EmptyList()}, {"_stamp", stamp}}));
  for (const auto& m : targets) {
    const bool failed = rng() % 40 == 0;
    Value ret = fun == "cmd.run" ? Value(" 12:05:01 up 3 days, load " + std::to_string(rng() % 100)) : Value(true);
    if (failed && fun == "state.apply") {
      ret = Value::Map({{"pkg_|-vim_|-vim_|-installed",
                         Value::Map({{"__id__", "vim"}, {"name", "vim"}, {"result", false}, {"comment", "no vim"}})}});
    }
    send("salt/job/" + jid + "/ret/" + m,
         Value::Map({{"cmd", "_return"}, {"id", m}, {"fun", fun}, {"fun_args", Value::EmptyList()}, {"jid", jid},
                     {"return", ret}, {"retcode", failed ? (fun == "state.apply" ? 2 : 1) : 0}, {"success", !failed},
                     {"_stamp", stamp}}));
  }
  if (rng() % 50 == 0) send("salt/auth", Value::Map({{"id", targets[0]}, {"act", "accept"}, {"_stamp", stamp}}));
}

struct Built {
  std::string small_jid;   // a job with 10 returns
  std::string big_jid;     // the job with 10,000 returns
  brine::Micros built_at;  // the build's "now": the last jid is 10 days after the first
};

int StoreSchemaVersion(const fs::path& db) {
  try {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    return d.execAndGet("PRAGMA user_version").getInt();
  } catch (const std::exception&) {
    return -1;
  }
}

Built BuildOrReuse(const Args& args) {
  const fs::path db = args.store / "cache" / "brine.sqlite";
  const fs::path marker = args.store / "built.json";
  if (fs::exists(marker)) {
    std::ifstream in(marker);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Value v = brine::ParseJson(text);
    const int schema = StoreSchemaVersion(db);
    if (v.Find("jobs") != nullptr && v.Find("jobs")->as_int() == args.jobs &&
        schema == brine::store::LatestSchemaVersion()) {
      Built b{*v.FindString("small_jid"), *v.FindString("big_jid"), {}};
      // Markers written before built_at: the big job's jid is 2 h before the build, plus 7 us.
      b.built_at = v.Find("built_at") != nullptr
                       ? brine::Micros(std::chrono::microseconds(v.Find("built_at")->as_int()))
                       : *brine::JidToMicros(b.big_jid) + std::chrono::hours(2) - std::chrono::microseconds(7);
      return b;
    }
    std::fprintf(stderr, "  %s is stale (jobs %s, schema %d, this build's %d): rebuilding\n", marker.c_str(),
                 v.Find("jobs") != nullptr ? brine::ToJson(*v.Find("jobs")).c_str() : "?", schema,
                 brine::store::LatestSchemaVersion());
  }
  fs::remove_all(args.store);
  fs::create_directories(args.store / "conf");
  std::ofstream(args.store / "conf" / "master") << "id: bench_master\ncachedir: " << (args.store / "cache").string()
                                                << "\nbrine.bus: bind\nbrine.sock_dir: " << (args.store / "sock").string()
                                                << "\nbrine.log_file: " << (args.store / "brine-master.log").string()
                                                << "\nkeep_jobs_seconds: 0\nloop_interval: 86400\n";
  // Made before the fork: the child may not allocate (bench_support.h, Spawn).
  const std::string exe = (args.bin / "brine-master").string();
  const std::string conf = (args.store / "conf").string();
  const pid_t pid = fork();
  if (pid == 0) {
    execl(exe.c_str(), exe.c_str(), "-c", conf.c_str(), nullptr);
    _exit(127);
  }
  while (!fs::exists(args.store / "sock" / "master_event_pull.ipc")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, -1);
  push.connect("ipc://" + (args.store / "sock" / "master_event_pull.ipc").string());

  std::mt19937 rng(11);
  const auto now = brine::SystemClock().Now();
  const auto span = std::chrono::microseconds(std::chrono::hours(24 * 10));
  const auto step = span / args.jobs;
  std::int64_t sent = 0;
  Built built;
  built.built_at = now;
  const auto start = SteadyClock::now();
  for (long j = 0; j < args.jobs; ++j) {
    const auto t = now - span + step * j;
    const std::string jid = brine::FormatJid(t);
    const std::string fun = j % 3 == 0 ? "test.ping" : (j % 3 == 1 ? "cmd.run" : "state.apply");
    std::vector<std::string> targets;
    const long first = static_cast<long>(rng() % 1000);
    for (int k = 0; k < 10; ++k) targets.push_back(Minion((first + k * 97) % 1000));
    PushJob(push, jid, fun, targets, t, rng, sent);
    if (j == args.jobs / 2) built.small_jid = jid;
    if (j % 100000 == 0) std::fprintf(stderr, "  %ld / %ld jobs sent\n", j, args.jobs);
  }
  {
    const auto t = now - std::chrono::hours(2);
    built.big_jid = brine::FormatJid(t + std::chrono::microseconds(7));
    std::vector<std::string> targets;
    for (long k = 0; k < 10000; ++k) targets.push_back(Minion(k));
    PushJob(push, built.big_jid, "cmd.run", targets, t, rng, sent);
  }
  const fs::path dbp = db;
  while (Counter(dbp, "received") < sent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double secs = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::fprintf(stderr, "  built: %lld events in %.1f s (%.0f events/s)\n", static_cast<long long>(sent), secs,
               static_cast<double>(sent) / secs);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  {
    SQLite::Database d(db.string(), SQLite::OPEN_READWRITE);
    d.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  std::ofstream(marker) << brine::ToJson(Value::Map({{"jobs", static_cast<long long>(args.jobs)},
                                                     {"small_jid", built.small_jid},
                                                     {"big_jid", built.big_jid},
                                                     {"built_at", static_cast<long long>(
                                                         built.built_at.time_since_epoch().count())},
                                                     {"schema_version", brine::store::LatestSchemaVersion()}}));
  return built;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--jobs") args.jobs = std::stol(argv[i + 1]);
    else if (k == "--store") args.store = argv[i + 1];
    else if (k == "--bin") args.bin = argv[i + 1];
    else if (k == "--runs") args.runs = std::stoi(argv[i + 1]);
  }
  std::fprintf(stderr, "query_bench: store of %ld jobs in %s\n", args.jobs, args.store.c_str());
  const Built built = BuildOrReuse(args);
  const fs::path db = args.store / "cache" / "brine.sqlite";
  const auto now = built.built_at;
  const std::string day_ago = date::format("%Y-%m-%dT%H:%M:%S", date::floor<std::chrono::seconds>(now - std::chrono::hours(24)));
  const auto hour_start = now - std::chrono::hours(30);
  const std::string h0 = date::format("%Y-%m-%d %H:%M", date::floor<std::chrono::minutes>(hour_start));
  const std::string h1 = date::format("%Y-%m-%d %H:%M", date::floor<std::chrono::minutes>(hour_start + std::chrono::hours(1)));
  const std::string run = (args.bin / "brine-run").string();
  const std::string conf = (args.store / "conf").string();
  struct Query {
    std::string name;
    std::vector<std::string> args;
  };
  const std::vector<Query> queries = {
      {"list_jobs last 24h --out json", {"jobs.list_jobs", "start_time=" + day_ago, "--out", "json"}},
      {"list_jobs 1h window, search_function", {"jobs.list_jobs", "start_time=" + h0, "end_time=" + h1, "search_function=cmd.run", "--out", "json"}},
      {"list_jobs 1h window, search_target glob", {"jobs.list_jobs", "start_time=" + h0, "end_time=" + h1, "search_target=*web-0001*", "--out", "json"}},
      {"list_jobs 1h window, search_target prefix", {"jobs.list_jobs", "start_time=" + h0, "end_time=" + h1, "search_target=web-000[0-4]?.*", "--out", "json"}},
      {"list_jobs last 24h, search_target 10 ids", {"jobs.list_jobs", "start_time=" + day_ago, "search_target=web-0000?.dc1.example.com", "--out", "json"}},
      {"lookup_jid, 10 returns", {"jobs.lookup_jid", built.small_jid, "--out", "json"}},
      {"lookup_jid, 10,000 returns", {"jobs.lookup_jid", built.big_jid, "--out", "json"}},
      {"list_jobs_filter count=50", {"jobs.list_jobs_filter", "50", "--out", "json"}},
      // brine.sql as a whole process, start-up included (issue 27: <= 15 ms).
      {"brine.sql, one row", {"brine.sql", "SELECT jid, fun FROM jids WHERE jid = :jid", "jid=" + built.small_jid, "--out", "json"}},
  };
  std::printf("query_bench: %ld jobs (+1 of 10,000 returns), store %.1f GB, median of %d runs\n", args.jobs,
              static_cast<double>(fs::file_size(db)) / 1e9, args.runs);
  std::printf("  %-42s %10s %10s %10s %12s\n", "brine-run ...", "warm s", "cold s", "RSS MiB", "output B");
  for (const auto& q : queries) {
    std::vector<std::string> command = {run, "-c", conf};
    command.insert(command.end(), q.args.begin(), q.args.end());
    std::vector<double> warm, cold;
    long rss = 0;
    std::size_t bytes = 0;
    (void)RunOnce(command, "/tmp/query_bench.out");  // warm the page cache
    for (int i = 0; i < args.runs; ++i) {
      const Sample s = RunOnce(command, "/tmp/query_bench.out");
      warm.push_back(s.seconds);
      rss = std::max(rss, s.rss_kib);
      bytes = s.out_bytes;
    }
    bool cold_ok = true;
    for (int i = 0; i < args.runs; ++i) {
      cold_ok = DropCache(db) && cold_ok;
      cold.push_back(RunOnce(command, "/tmp/query_bench.out").seconds);
    }
    std::printf("  %-42s %10.4f %10.4f %10.1f %12zu\n", q.name.c_str(), Median(warm), cold_ok ? Median(cold) : -1.0,
                static_cast<double>(rss) / 1024.0, bytes);
    std::printf("{\"bench\":\"query\",\"query\":\"%s\",\"jobs\":%ld,\"warm_s\":%.4f,\"cold_s\":%.4f,\"peak_rss_mib\":%.1f}\n",
                q.name.c_str(), args.jobs, Median(warm), cold_ok ? Median(cold) : -1.0, static_cast<double>(rss) / 1024.0);
  }
  return 0;
}
