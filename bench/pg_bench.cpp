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
//     (median of 3 after one run);
//   --store-jobs N (0: skipped): issue 16's query targets on a store of N
//     jobs (ScaleRun below): brine-run jobs.list_jobs of the last 24 h (N/10
//     jobs) and jobs.lookup_jid of a job of --lookup-returns returns, warm
//     (median of 5 after one run).
//
// --jobs 0 skips the ingest runs; --hold 1 keeps the server (and prints the
// store's URI) until stdin closes, for EXPLAIN by hand.
//
// usage: pg_bench [--jobs N] [--baseline-events N] [--lookup-returns N] [--store-jobs N] [--hold 1] [--bin DIR]
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
  long store_jobs = 0;  // 0: no ScaleRun
  bool hold = false;    // keep the server until stdin closes (EXPLAIN by hand)
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
double IngestRun(const Args& args, PostgresServer& server, const Stream& stream, long jobs, int masters,
                 const fs::path& dir, std::string* uri_out) {
  const std::string uri = server.CreateDatabase();
  std::vector<Master> ms;
  for (int i = 0; i < masters; ++i) {
    ms.push_back(StartMaster(args, dir / ("master" + std::to_string(i)), "bench_master_" + std::to_string(i), uri));
  }
  // Split by job (12 frames a job): each master sees whole jobs of its own.
  std::vector<std::vector<std::size_t>> parts(static_cast<std::size_t>(masters));
  const std::size_t per_job = stream.size() / static_cast<std::size_t>(jobs);
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

double WarmSeconds(const std::vector<std::string>& argv, const fs::path& out, int runs = 3) {
  (void)RunOnce(argv, out);
  std::vector<double> s;
  for (int i = 0; i < runs; ++i) s.push_back(RunOnce(argv, out).seconds);
  return Median(s);
}

struct ApiFigures {
  double returns_per_s = 0;
  std::int64_t round_trips = 0;
};

// A job `jid` answered by `returns` minions, each returning `ret` from
// `fun`, through the store API in one batch (no bus, no master): its rate and
// round trips are the backend's own.
ApiFigures WriteBigJob(const std::string& uri, const std::string& jid, int returns, const std::string& fun = "test.ping",
                       const Value& ret = Value(true)) {
  auto store = brine::store::OpenStore(uri, {.master_id = "bench_loader"});
  const auto started = SteadyClock::now();
  const std::int64_t trips_before = brine::store::PostgresRoundTrips();
  auto batch = store->BeginBatch();
  std::vector<std::string> minions;
  for (int i = 0; i < returns; ++i) minions.push_back("lookup-minion-" + std::to_string(i));
  store->SaveLoad(jid, Value::Map({{"fun", fun}, {"tgt", "*"}, {"jid", jid}}), minions);
  for (const std::string& m : minions) {
    (void)store->Returner(Value::Map({{"jid", jid}, {"id", m}, {"fun", fun}, {"return", ret},
                                      {"retcode", 0}, {"success", true}}));
  }
  batch.Commit();
  return {returns / Since(started), brine::store::PostgresRoundTrips() - trips_before};
}

// A brine-run config dir whose brine.database is `uri`.
std::string RunnerConf(const fs::path& dir, const std::string& uri) {
  fs::create_directories(dir);
  std::ofstream(dir / "master") << "id: bench_runner\ncachedir: " << (dir / "cache").string()
                                << "\nbrine.database: '" << uri << "'\n";
  return dir.string();
}

struct ScaleFigures {
  long jobs = 0;         // in the store
  long window_jobs = 0;  // listed by the last-24h list_jobs
  double sample_s = 0;   // the sample through brine-master
  double copy_s = 0;     // the SQL copies, VACUUM ANALYZE included
  double list_s = 0;
  double lookup_s = 0;        // the cmd.run job
  double lookup_small_s = 0;  // the test.ping job
  long big_pages = 0;         // heap pages the cmd.run job's returns are on
  long small_pages = 0;       // heap pages the test.ping job's returns are on
  double api_new_s = 0;       // the cmd.run job's returns through the store API, a new connection each time
  double api_kept_s = 0;      // the same on one kept connection
  std::string size;  // pg_database_size, pretty
  std::string uri;
};

// The returns of `jid` through the store API (ForEachReturnJson, what
// brine-run's lookup_jid reads), median of 5 after one: on a new read-only
// connection each time, as brine-run makes, or on one kept connection, as a
// pooler's server processes are. The difference is what a new PostgreSQL
// server process costs: besides connecting, its first touch of each shared
// buffer maps that page into the process (docs/performance.md, round 4).
std::pair<double, double> ApiReadSeconds(const std::string& uri, const std::string& jid) {
  const brine::store::OpenOptions reader{.access = brine::store::OpenOptions::Access::kReadOnly};
  std::size_t bytes = 0;
  auto read = [&](brine::store::Store& store) {
    store.ForEachReturnJson(jid, [&](std::string_view minion, std::string_view text) { bytes += minion.size() + text.size(); });
  };
  std::vector<double> fresh, kept;
  for (int i = 0; i < 6; ++i) {
    const auto started = SteadyClock::now();
    read(*brine::store::OpenStore(uri, reader));
    if (i > 0) fresh.push_back(Since(started));
  }
  auto store = brine::store::OpenStore(uri, reader);
  for (int i = 0; i < 6; ++i) {
    const auto started = SteadyClock::now();
    read(*store);
    if (i > 0) kept.push_back(Since(started));
  }
  if (bytes == 0) throw std::runtime_error("pg_bench: job " + jid + " has no returns");
  return {Median(fresh), Median(kept)};
}

// Issue 16's query targets on a store of --store-jobs jobs (1M in
// ./brine.sh bench). Streaming 1M jobs (12M events) through brine-master
// would take about an hour at the few thousand events/s this machine gives
// PostgreSQL ingest, so the store is built in two steps:
//   1. a sample of kSampleJobs jobs (the ingest stream's: 10 returns each
//      from 1,000 minions) goes through a real brine-master, so every row the
//      copies come from is one brine wrote;
//   2. SQL copies the sample's job, job_minion and ret rows with new ids and
//      jids (INSERT ... SELECT over generate_series, a tenth of the copies a
//      transaction) until the store holds N jobs, the copies' jids spread
//      evenly over the 10 days before the build (so the last 24 h hold N/10,
//      as in query_bench), the jid inside load and full_ret rewritten too.
// Then two jobs of --lookup-returns returns go in through the store API, an
// hour and two hours before the build, and VACUUM ANALYZE runs (what
// autovacuum will have done by the time a store has grown this big). The
// event archive is not copied: neither query reads it.
//
// The two jobs differ in the size of their returns: a cmd.run like the
// copies (~470-byte rows, 2.9 MB of json out; query_bench's job of 10,000
// returns is a cmd.run too) and a test.ping (~170-byte rows, 0.3 MB). Neither
// lands side by side: the copies leave the end of each full page free, and
// PostgreSQL's free space map hands each new row the tail of another page,
// so each job's 10,000 returns sit on 7,000-10,000 pages (printed), and
// lookup_jid reads one page per return. A store that grew by ingest with a
// mix of return sizes has fewer such tails; one clustered by job
// (CLUSTER ret USING ret_job_id_minion_id_key) reads a few hundred pages.
ScaleFigures ScaleRun(const Args& args, PostgresServer& server, const fs::path& dir) {
  constexpr long kSampleJobs = 1000;
  constexpr int kReturnsPerJob = 10;
  const long copies = args.store_jobs / kSampleJobs - 1;  // the sample is the first of them
  ScaleFigures out;
  const auto now = brine::FromUnixMicros(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  const auto t0 = now - std::chrono::hours(24 * 10);
  const std::int64_t t0_us = t0.time_since_epoch().count();
  const std::int64_t step_us = std::int64_t{10} * 86400 * 1000000 / args.store_jobs;

  std::string uri;
  auto started = SteadyClock::now();
  const Stream sample = BuildStream(kSampleJobs, 1000, kReturnsPerJob, t0);
  (void)IngestRun(args, server, sample, kSampleJobs, 1, dir / "sample", &uri);
  out.sample_s = Since(started);

  started = SteadyClock::now();
  Pg pg(uri);
  pg.One("CREATE TEMP TABLE sample AS SELECT row_number() OVER (ORDER BY jid) - 1 AS k, * FROM job");
  const std::string base = pg.One("SELECT max(id) FROM job");
  // copy i (sample job k of copy c, i = c * K + k) gets id base + i and the
  // jid of t0 + i * step.
  pg.One("CREATE TEMP TABLE copy AS SELECT c.id, s.id AS sid, s.jid AS sjid, c.t,"
         " to_char(c.t AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS') AS jid FROM sample AS s,"
         " LATERAL (SELECT " + base + " + i AS id, timestamptz 'epoch' + (" + std::to_string(t0_us) + " + i * " +
         std::to_string(step_us) + ") * interval '1 microsecond' AS t"
         " FROM generate_series(1, " + std::to_string(copies) + ") AS g(c), LATERAL (SELECT g.c * " +
         std::to_string(kSampleJobs) + " + s.k AS i) AS x) AS c");
  constexpr int kChunks = 10;
  const long per_chunk = (copies * kSampleJobs + kChunks - 1) / kChunks;
  for (int chunk = 0; chunk < kChunks; ++chunk) {
    const std::string lo = std::to_string(std::stoll(base) + kSampleJobs + chunk * per_chunk);
    const std::string hi = std::to_string(std::stoll(base) + kSampleJobs + (chunk + 1) * per_chunk);
    const std::string range = " WHERE c.id >= " + lo + " AND c.id < " + hi;
    pg.One("BEGIN");
    pg.One("INSERT INTO job (id, jid, fun, load, load_kind, stub_minions, metadata, nocache, endtime, seen,"
           " start_time, load_user) OVERRIDING SYSTEM VALUE SELECT c.id, c.jid, s.fun, replace(s.load, s.jid, c.jid),"
           " s.load_kind, s.stub_minions, s.metadata, s.nocache, s.endtime, c.t, brine_start_time(c.jid, c.t),"
           " s.load_user FROM copy AS c JOIN sample AS s ON s.id = c.sid" +
           range + " ORDER BY c.id");
    pg.One("INSERT INTO job_minion (job_id, minion_id) SELECT c.id, jm.minion_id FROM copy AS c"
           " JOIN job_minion AS jm ON jm.job_id = c.sid" + range + " ORDER BY c.id, jm.minion_id");
    pg.One("INSERT INTO ret (job_id, minion_id, recv, success, retcode, full_ret)"
           " SELECT c.id, r.minion_id, c.t + (r.recv - s.seen), r.success, r.retcode, replace(r.full_ret, c.sjid, c.jid)"
           " FROM copy AS c JOIN sample AS s ON s.id = c.sid JOIN ret AS r ON r.job_id = c.sid" + range +
           " ORDER BY c.id, r.minion_id");
    pg.One("COMMIT");
    std::fprintf(stderr, "pg_bench: store of %ld jobs: copies %d/%d\n", args.store_jobs, chunk + 1, kChunks);
  }
  pg.One("SELECT setval(pg_get_serial_sequence('job', 'id'), (SELECT max(id) FROM job))");
  const std::string big_jid = brine::FormatJid(now - std::chrono::hours(1));
  (void)WriteBigJob(uri, big_jid, args.lookup_returns, "cmd.run",
                    Value("active\n" + std::string(250, 'x')));
  const std::string small_jid = brine::FormatJid(now - std::chrono::hours(2));
  (void)WriteBigJob(uri, small_jid, args.lookup_returns);
  pg.One("VACUUM ANALYZE");
  out.copy_s = Since(started);
  auto pages = [&](const std::string& jid) {
    return std::stol(pg.One("SELECT count(DISTINCT (ctid::text::point)[0]) FROM ret WHERE job_id ="
                            " (SELECT id FROM job WHERE jid = '" + jid + "')"));
  };
  out.big_pages = pages(big_jid);
  out.small_pages = pages(small_jid);

  // The window as query_bench writes it: the build time less 24 h, to the second.
  const std::string from = brine::FormatJid(now - std::chrono::hours(24));
  const std::string start_time = from.substr(0, 4) + "-" + from.substr(4, 2) + "-" + from.substr(6, 2) + "T" +
                                 from.substr(8, 2) + ":" + from.substr(10, 2) + ":" + from.substr(12, 2);
  out.jobs = std::stol(pg.One("SELECT count(*) FROM job"));
  out.window_jobs = std::stol(pg.One("SELECT count(*) FROM job WHERE load IS NOT NULL AND jid >= '" +
                                     from.substr(0, 14) + "000000'"));
  out.uri = uri;
  out.size = pg.One("SELECT pg_size_pretty(pg_database_size(current_database()))");
  const std::string run = (args.bin / "brine-run").string();
  const std::string conf = RunnerConf(dir / "scale-runner", uri);
  out.list_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.list_jobs", "start_time=" + start_time},
                           dir / "out.json", 5);
  out.lookup_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.lookup_jid", big_jid}, dir / "out.json", 5);
  out.lookup_small_s =
      WarmSeconds({run, "-c", conf, "--out", "json", "jobs.lookup_jid", small_jid}, dir / "out.json", 5);
  std::tie(out.api_new_s, out.api_kept_s) = ApiReadSeconds(uri, big_jid);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--jobs") args.jobs = std::stol(argv[i + 1]);
    else if (k == "--baseline-events") args.baseline_events = std::stol(argv[i + 1]);
    else if (k == "--lookup-returns") args.lookup_returns = std::stoi(argv[i + 1]);
    else if (k == "--store-jobs") args.store_jobs = std::stol(argv[i + 1]);
    else if (k == "--hold") args.hold = std::string(argv[i + 1]) == "1";
    else if (k == "--bin") args.bin = argv[i + 1];
  }
  if (auto why = PostgresServer::Unavailable()) {
    std::fprintf(stderr, "pg_bench: %s\n", why->c_str());
    return 1;
  }
  const fs::path dir = fs::temp_directory_path() / ("brine-pg-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  PostgresServer server(PostgresServer::Durability::kDurable);
  if (args.jobs > 0) {
    constexpr int kReturnsPerJob = 10;  // of the stream's 12 events a job
    const Stream stream = BuildStream(args.jobs, 1000, kReturnsPerJob, brine::FromUnixMicros(1704110400000000));

    std::string uri1, uri2;
    const double one = IngestRun(args, server, stream, args.jobs, 1, dir / "one", &uri1);
    const double two = IngestRun(args, server, stream, args.jobs, 2, dir / "two", &uri2);
    const double baseline = Baseline(server, stream, args.baseline_events);

    // A job with --lookup-returns returns, through the store API, on the
    // two-master database.
    const std::string big_jid = brine::FormatJid(brine::FromUnixMicros(1704110400000000) - std::chrono::hours(1));
    const ApiFigures api = WriteBigJob(uri2, big_jid, args.lookup_returns);
    const std::string run = (args.bin / "brine-run").string();
    const std::string conf = RunnerConf(dir / "runner", uri2);
    const double list_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.list_jobs"}, dir / "out.json");
    const double lookup_s = WarmSeconds({run, "-c", conf, "--out", "json", "jobs.lookup_jid", big_jid}, dir / "out.json");

    std::printf("%-44s %14s\n", "PostgreSQL (local, durable)", "figure");
    std::printf("%-44s %14.0f\n", "ingest, 1 master (events/s)", one);
    std::printf("%-44s %14.0f\n", "ingest, 1 master (returns/s)", one * kReturnsPerJob / 12);
    std::printf("%-44s %14.0f\n", "ingest, 2 masters at once (events/s, total)", two);
    std::printf("%-44s %14.0f\n", "store API, one batch (returns/s)", api.returns_per_s);
    std::printf("%-44s %14lld\n", "store API, one batch (round trips)", static_cast<long long>(api.round_trips));
    std::printf("%-44s %14.0f\n", "pgjsonb-style baseline (events/s)", baseline);
    std::printf("%-44s %14.1f\n", "2 masters / baseline", two / baseline);
    std::printf("%-44s %14.3f\n", ("list_jobs of " + std::to_string(args.jobs + 1) + " jobs (s, warm)").c_str(), list_s);
    std::printf("%-44s %14.3f\n", ("lookup_jid of " + std::to_string(args.lookup_returns) + " returns (s, warm)").c_str(),
                lookup_s);
    std::printf(
        "{\"bench\":\"pg\",\"events\":%zu,\"ingest_one_master_eps\":%.0f,\"ingest_two_masters_eps\":%.0f,"
        "\"baseline_eps\":%.0f,\"list_jobs_jobs\":%ld,\"list_jobs_s\":%.3f,\"lookup_returns\":%d,\"lookup_jid_s\":%.3f,"
        "\"api_returns_per_s\":%.0f,\"api_round_trips\":%lld}\n",
        stream.size(), one, two, baseline, args.jobs + 1, list_s, args.lookup_returns, lookup_s, api.returns_per_s,
        static_cast<long long>(api.round_trips));
  }
  if (args.store_jobs > 0) {
    const ScaleFigures f = ScaleRun(args, server, dir);
    std::printf("%-44s %14s\n", ("PostgreSQL store of " + std::to_string(f.jobs) + " jobs, " + f.size).c_str(),
                "figure");
    std::printf("%-44s %14.1f\n", "build: sample through brine-master (s)", f.sample_s);
    std::printf("%-44s %14.1f\n", "build: SQL copies + VACUUM ANALYZE (s)", f.copy_s);
    std::printf("%-44s %14.3f\n",
                ("list_jobs last 24 h, " + std::to_string(f.window_jobs) + " jobs (s, warm)").c_str(), f.list_s);
    std::printf("%-44s %14.3f\n",
                ("lookup_jid of " + std::to_string(args.lookup_returns) + " returns (s, warm)").c_str(), f.lookup_s);
    std::printf("%-44s %14ld\n", "  heap pages they are on", f.big_pages);
    std::printf("%-44s %14.3f\n", "  same, test.ping returns (s, warm)", f.lookup_small_s);
    std::printf("%-44s %14ld\n", "  heap pages they are on", f.small_pages);
    std::printf("%-44s %14.3f\n", "  cmd.run returns, store API, new conn. (s)", f.api_new_s);
    std::printf("%-44s %14.3f\n", "  same, one kept connection (s)", f.api_kept_s);
    std::printf(
        "{\"bench\":\"pg_scale\",\"store_jobs\":%ld,\"window_jobs\":%ld,\"list_jobs_s\":%.3f,"
        "\"lookup_returns\":%d,\"lookup_jid_s\":%.3f,\"lookup_pages\":%ld,\"lookup_jid_small_s\":%.3f,"
        "\"lookup_small_pages\":%ld,\"api_read_new_s\":%.3f,\"api_read_kept_s\":%.3f}\n",
        f.jobs, f.window_jobs, f.list_s, args.lookup_returns, f.lookup_s, f.big_pages, f.lookup_small_s,
        f.small_pages, f.api_new_s, f.api_kept_s);
    if (args.hold) {
      std::fprintf(stderr, "pg_bench: --hold: psql -d '%s'; close stdin to stop\n", f.uri.c_str());
      while (std::getchar() != EOF) {
      }
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
