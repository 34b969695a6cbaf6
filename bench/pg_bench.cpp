// pg_bench: brine on PostgreSQL, with the database on the same machine.
//
// It starts its own PostgreSQL 15 server (tests/support/postgres_server: a
// temp dir, a Unix socket, PostgreSQL's durable defaults: every commit is
// flushed) and measures:
//   ingest, one master: the Salt-like stream of ingest_bench (event_stream.h)
//     sent at full speed to one brine-master on the database; the clock stops
//     when the master's committed counters show every frame;
//   ingest, two masters: the stream split by job, half to each of two
//     brine-masters (own buses, own ids) on one database, sent at once; the
//     rate is the total;
//   baseline: what Salt's pgjsonb returner does with the same stream, one
//     autocommit INSERT per return (salt_returns) and per event (salt_events)
//     and an upsert per publish load (jids), into pgjsonb's own tables and
//     indexes (spec salt-jobs.md 5.2), on one connection;
//   store API: --lookup-returns returns of one job in one batch through
//     OpenStore (no bus, no master): returns/s and round trips (the batching
//     contract: a handful, never one per return);
//   queries: brine-run jobs.list_jobs (json) over every job of the two-master
//     run and jobs.lookup_jid of one job with --lookup-returns returns, warm
//     (median of 3 after one run).
//
// usage: pg_bench [--jobs N] [--baseline-events N] [--lookup-returns N] [--bin DIR]
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>
#include <zmq.hpp>

#include "bench_support.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/postgres_stats.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"
#include "event_stream.h"
#include "support/postgres_server.h"

namespace {

namespace fs = std::filesystem;
using brine::Value;
using brine::bench::BuildStream;
using brine::bench::Median;
using brine::bench::RunOnce;
using brine::bench::Stream;
using brine::test::PostgresServer;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  long jobs = 20000;  // x 12 events
  long baseline_events = 20000;
  int lookup_returns = 10000;
  fs::path bin = fs::path(BRINE_BIN_DIR);
};

double Since(SteadyClock::time_point t) { return std::chrono::duration<double>(SteadyClock::now() - t).count(); }

struct Master {
  pid_t pid = -1;
  fs::path dir;
  [[nodiscard]] std::string pull() const { return "ipc://" + (dir / "sock" / "master_event_pull.ipc").string(); }
};

Master StartMaster(const Args& args, const fs::path& dir, const std::string& id, const std::string& uri) {
  return Master{brine::bench::StartBenchMaster(args.bin / "brine-master", dir, id, "brine.database: '" + uri + "'\n"),
                dir};
}

void StopMaster(const Master& m) {
  kill(m.pid, SIGTERM);
  int status = 0;
  waitpid(m.pid, &status, 0);
}

// One libpq connection for the bench's own SQL.
class Pg {
 public:
  explicit Pg(const std::string& uri) : c_(PQconnectdb(uri.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) Die(PQerrorMessage(c_));
  }
  ~Pg() { PQfinish(c_); }
  Pg(const Pg&) = delete;
  Pg& operator=(const Pg&) = delete;
  std::string One(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    Check(r);
    std::string v = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return v;
  }
  void Exec(const char* sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* r = PQexecParams(c_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
    Check(r);
    PQclear(r);
  }

 private:
  void Check(PGresult* r) {
    const auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) Die(PQresultErrorMessage(r));
  }
  [[noreturn]] static void Die(const char* msg) {
    std::fprintf(stderr, "pg_bench: %s\n", msg);
    std::exit(1);
  }
  PGconn* c_;
};

void Send(const Master& m, const Stream& stream, const std::vector<std::size_t>& frames) {
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 100000);
  push.set(zmq::sockopt::linger, -1);
  push.connect(m.pull());
  for (std::size_t i : frames) {
    const auto f = stream.frame(i);
    push.send(zmq::buffer(f.data(), f.size()), zmq::send_flags::none);
  }
}

// Seconds until the masters' committed `received` counters add up to `total`.
double WaitReceived(const std::string& uri, std::int64_t total, SteadyClock::time_point start) {
  Pg pg(uri);
  while (true) {
    const std::string v = pg.One("SELECT coalesce(sum(value), 0) FROM brine_counters WHERE name = 'received'");
    if (!v.empty() && std::stoll(v) >= total) return Since(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Ingest through `masters` brine-masters on a fresh database; events/s in total.
double IngestRun(const Args& args, PostgresServer& server, const Stream& stream, int masters, const fs::path& dir,
                 std::string* uri_out) {
  const std::string uri = server.CreateDatabase();
  std::vector<Master> ms;
  for (int i = 0; i < masters; ++i) {
    ms.push_back(StartMaster(args, dir / ("master" + std::to_string(i)), "bench_master_" + std::to_string(i), uri));
  }
  // Split by job (12 frames a job): each master sees whole jobs of its own.
  std::vector<std::vector<std::size_t>> parts(static_cast<std::size_t>(masters));
  const std::size_t per_job = stream.size() / static_cast<std::size_t>(args.jobs);
  for (std::size_t i = 0; i < stream.size(); ++i) parts[(i / per_job) % parts.size()].push_back(i);
  const auto start = SteadyClock::now();
  std::vector<std::thread> senders;
  for (std::size_t k = 0; k < ms.size(); ++k) senders.emplace_back([&, k] { Send(ms[k], stream, parts[k]); });
  const double s = WaitReceived(uri, static_cast<std::int64_t>(stream.size()), start);
  for (auto& t : senders) t.join();
  for (const Master& m : ms) StopMaster(m);
  *uri_out = uri;
  return static_cast<double>(stream.size()) / s;
}

// Salt's pgjsonb returner on the same stream: events/s.
double Baseline(PostgresServer& server, const Stream& stream, long count) {
  const std::string uri = server.CreateDatabase();
  Pg pg(uri);
  // pgjsonb's schema, as its docs create it (spec salt-jobs.md 5.2).
  pg.One(
      "CREATE TABLE jids (jid varchar(255) NOT NULL PRIMARY KEY, load jsonb NOT NULL);"
      "CREATE INDEX idx_jids_jsonb ON jids USING gin (load) WITH (fastupdate=on);"
      "CREATE TABLE salt_returns (fun varchar(50) NOT NULL, jid varchar(255) NOT NULL, return jsonb NOT NULL,"
      " id varchar(255) NOT NULL, success varchar(10) NOT NULL, full_ret jsonb NOT NULL,"
      " alter_time timestamp with time zone DEFAULT now());"
      "CREATE INDEX idx_salt_returns_id ON salt_returns (id);"
      "CREATE INDEX idx_salt_returns_jid ON salt_returns (jid);"
      "CREATE INDEX idx_salt_returns_fun ON salt_returns (fun);"
      "CREATE INDEX idx_salt_returns_return ON salt_returns USING gin (return) WITH (fastupdate=on);"
      "CREATE INDEX idx_salt_returns_full_ret ON salt_returns USING gin (full_ret) WITH (fastupdate=on);"
      "CREATE SEQUENCE seq_salt_events_id;"
      "CREATE TABLE salt_events (id bigint NOT NULL UNIQUE DEFAULT nextval('seq_salt_events_id'),"
      " tag varchar(255) NOT NULL, data jsonb NOT NULL, alter_time timestamp with time zone DEFAULT now(),"
      " master_id varchar(255) NOT NULL);"
      "CREATE INDEX idx_salt_events_tag ON salt_events (tag);"
      "CREATE INDEX idx_salt_events_data ON salt_events USING gin (data) WITH (fastupdate=on)");
  const auto start = SteadyClock::now();
  const std::size_t n = std::min(stream.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < n; ++i) {
    auto decoded = brine::wire::DecodeFrame(stream.frame(i));
    auto* e = std::get_if<brine::wire::DecodedEvent>(&decoded);
    if (e == nullptr) continue;
    const std::string data = brine::ToJson(e->data);
    const std::string now = std::to_string(std::chrono::duration<double>(
                                               std::chrono::system_clock::now().time_since_epoch()).count());
    if (e->tag.find("/ret/") != std::string::npos) {
      const Value* ret = e->data.Find("return");
      const Value* success = e->data.Find("success");
      pg.Exec(
          "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret, alter_time)"
          " VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7))",
          {*e->data.FindString("fun"), *e->data.FindString("jid"), ret ? brine::ToJson(*ret) : "null",
           *e->data.FindString("id"), success && success->is_bool() && success->as_bool() ? "True" : "False", data,
           now});
    } else if (e->tag.ends_with("/new")) {
      pg.Exec("INSERT INTO jids (jid, load) VALUES ($1, $2) ON CONFLICT (jid) DO UPDATE SET load = excluded.load",
              {*e->data.FindString("jid"), data});
    }
    pg.Exec("INSERT INTO salt_events (tag, data, master_id, alter_time) VALUES ($1, $2, $3, to_timestamp($4))",
            {e->tag, data, "bench_master", now});
  }
  return static_cast<double>(n) / Since(start);
}

double WarmSeconds(const std::vector<std::string>& argv, const fs::path& out) {
  (void)RunOnce(argv, out);
  std::vector<double> s;
  for (int i = 0; i < 3; ++i) s.push_back(RunOnce(argv, out).seconds);
  return Median(s);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--jobs") args.jobs = std::stol(argv[i + 1]);
    else if (k == "--baseline-events") args.baseline_events = std::stol(argv[i + 1]);
    else if (k == "--lookup-returns") args.lookup_returns = std::stoi(argv[i + 1]);
    else if (k == "--bin") args.bin = argv[i + 1];
  }
  if (auto why = PostgresServer::Unavailable()) {
    std::fprintf(stderr, "pg_bench: %s\n", why->c_str());
    return 1;
  }
  const fs::path dir = fs::temp_directory_path() / ("brine-pg-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  PostgresServer server(PostgresServer::Durability::kDurable);
  constexpr int kReturnsPerJob = 10;  // of the stream's 12 events a job
  const Stream stream = BuildStream(args.jobs, 1000, kReturnsPerJob, brine::FromUnixMicros(1704110400000000));

  std::string uri1, uri2;
  const double one = IngestRun(args, server, stream, 1, dir / "one", &uri1);
  const double two = IngestRun(args, server, stream, 2, dir / "two", &uri2);
  const double baseline = Baseline(server, stream, args.baseline_events);

  // A job with --lookup-returns returns, through the store API, on the
  // two-master database, in one batch: its rate and round trips are the
  // backend's own (no bus, no master).
  const std::string big_jid = brine::FormatJid(brine::FromUnixMicros(1704110400000000) - std::chrono::hours(1));
  double api_returns_per_s = 0;
  std::int64_t api_round_trips = 0;
  {
    auto store = brine::store::OpenStore(uri2, {.master_id = "bench_loader"});
    const auto started = SteadyClock::now();
    const std::int64_t trips_before = brine::store::PostgresRoundTrips();
    auto batch = store->BeginBatch();
    std::vector<std::string> minions;
    for (int i = 0; i < args.lookup_returns; ++i) minions.push_back("lookup-minion-" + std::to_string(i));
    store->SaveLoad(big_jid, Value::Map({{"fun", "test.ping"}, {"tgt", "*"}, {"jid", big_jid}}), minions);
    for (const std::string& m : minions) {
      (void)store->Returner(Value::Map({{"jid", big_jid}, {"id", m}, {"fun", "test.ping"}, {"return", true},
                                        {"retcode", 0}, {"success", true}}));
    }
    batch.Commit();
    api_round_trips = brine::store::PostgresRoundTrips() - trips_before;
    api_returns_per_s =
        args.lookup_returns / std::chrono::duration<double>(SteadyClock::now() - started).count();
  }
  fs::create_directories(dir / "runner");
  std::ofstream(dir / "runner" / "master") << "id: bench_runner\ncachedir: " << (dir / "cache").string()
                                           << "\nbrine.database: '" << uri2 << "'\n";
  const std::string run = (args.bin / "brine-run").string();
  const std::string conf = (dir / "runner").string();
  const double list_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.list_jobs"}, dir / "out.json");
  const double lookup_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.lookup_jid", big_jid}, dir / "out.json");

  std::printf("%-44s %14s\n", "PostgreSQL (local, durable)", "figure");
  std::printf("%-44s %14.0f\n", "ingest, 1 master (events/s)", one);
  std::printf("%-44s %14.0f\n", "ingest, 1 master (returns/s)", one * kReturnsPerJob / 12);
  std::printf("%-44s %14.0f\n", "ingest, 2 masters at once (events/s, total)", two);
  std::printf("%-44s %14.0f\n", "store API, one batch (returns/s)", api_returns_per_s);
  std::printf("%-44s %14lld\n", "store API, one batch (round trips)", static_cast<long long>(api_round_trips));
  std::printf("%-44s %14.0f\n", "pgjsonb-style baseline (events/s)", baseline);
  std::printf("%-44s %14.1f\n", "2 masters / baseline", two / baseline);
  std::printf("%-44s %14.3f\n", ("list_jobs of " + std::to_string(args.jobs + 1) + " jobs (s, warm)").c_str(), list_s);
  std::printf("%-44s %14.3f\n", ("lookup_jid of " + std::to_string(args.lookup_returns) + " returns (s, warm)").c_str(),
              lookup_s);
  std::printf(
      "{\"bench\":\"pg\",\"events\":%zu,\"ingest_one_master_eps\":%.0f,\"ingest_two_masters_eps\":%.0f,"
      "\"baseline_eps\":%.0f,\"list_jobs_jobs\":%ld,\"list_jobs_s\":%.3f,\"lookup_returns\":%d,\"lookup_jid_s\":%.3f,"
      "\"api_returns_per_s\":%.0f,\"api_round_trips\":%lld}\n",
      stream.size(), one, two, baseline, args.jobs + 1, list_s, args.lookup_returns, lookup_s, api_returns_per_s,
      static_cast<long long>(api_round_trips));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
