// brine-master's status row and hourly rollups in the store (migrations
// 0011_master_status / postgres 0006; issue 26 step 4, issue 28): each case
// runs on SQLite and on this process's PostgreSQL server (skipped, with a
// WARN, where none can start).
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/runner_site.h"
#include "support/temp_dir.h"

namespace {

using brine::Value;
using brine::test::MasterProcess;
using brine::test::PostgresServer;
using brine::test::WaitUntil;

// The backends this build can run here: "sqlite" always, "postgresql" when a server can start.
std::vector<std::string> Backends() {
  std::vector<std::string> out = {"sqlite"};
  if (auto why = PostgresServer::Unavailable()) {
    WARN("PostgreSQL skipped: " << *why);
  } else {
    out.push_back("postgresql");
  }
  return out;
}

// A store for a master in `dir`: a SQLite file there or a fresh PostgreSQL database.
std::string StoreFor(const std::string& backend, const std::filesystem::path& dir) {
  if (backend == "postgresql") return PostgresServer::Shared().CreateDatabase();
  return (dir / "brine.sqlite").string();
}

std::string Query(const std::string& backend, const std::string& db, const std::string& sql) {
  return backend == "postgresql" ? PostgresServer::Shared().Query(db, sql) : brine::test::Sql(db, sql);
}

std::optional<brine::store::MasterStatus> StatusOf(const std::string& db, const std::string& master) {
  auto s = brine::store::OpenStore(db, {.access = brine::store::OpenOptions::Access::kReadOnly});
  for (auto& st : s->GetMasterStatus()) {
    if (st.master_id == master) return st;
  }
  return std::nullopt;
}

std::int64_t CounterOf(const brine::store::MasterStatus& s, const std::string& name) {
  const Value* v = s.counters.Find(name);
  return v != nullptr && v->kind() == Value::Kind::kInt ? v->as_int() : -1;
}

std::string Frame(const std::string& tag, const Value& data) {
  return brine::wire::EncodeFrame(tag, data, brine::wire::Framing::kNew);
}

// `jobs` jobs (each announced twice, as Salt does) of `minions` minions each (every third return failed: retcode
// 1, or success false), and `others` other events.
std::vector<std::string> Fleet(int jobs, int minions, int others) {
  std::vector<std::string> frames;
  for (int j = 0; j < jobs; ++j) {
    const std::string jid = "2026112609" + std::to_string(1000000000 + j);
    Value names = Value::EmptyList();
    for (int m = 0; m < minions; ++m) names.as_list().push_back(Value("m" + std::to_string(m)));
    const Value load = Value::Map({{"jid", jid}, {"fun", "test.ping"}, {"arg", Value::EmptyList()}, {"tgt", "*"},
                                   {"tgt_type", "glob"}, {"user", "root"}, {"minions", names}});
    // Salt announces a publish twice: the old `new_job` and `salt/job/<jid>/new`.
    frames.push_back(Frame("new_job", load));
    frames.push_back(Frame("salt/job/" + jid + "/new", load));
    for (int m = 0; m < minions; ++m) {
      const std::string id = "m" + std::to_string(m);
      Value ret = Value::Map({{"jid", jid}, {"id", id}, {"fun", "test.ping"}, {"return", true}});
      const int k = j * minions + m;
      if (k % 3 == 1) ret.Set("retcode", 1);
      if (k % 3 == 2) ret.Set("success", false);
      frames.push_back(Frame("salt/job/" + jid + "/ret/" + id, ret));
    }
  }
  for (int i = 0; i < others; ++i) frames.push_back(Frame("salt/auth", Value::Map({{"n", i}})));
  return frames;
}

// A config folder of a reader on another host: the same store, no bus and
// no metrics file of brine-master's.
std::filesystem::path ReaderConf(const std::filesystem::path& dir, const std::string& id, const std::string& db) {
  std::filesystem::create_directories(dir / "conf");
  std::filesystem::create_directories(dir / "cache");
  std::ofstream(dir / "conf" / "master") << "id: " << id << "\ncachedir: " << (dir / "cache").string()
                                         << "\nbrine.database: '" << db << "'\nbrine.bus: bind\nbrine.sock_dir: "
                                         << (dir / "sock").string() << "\nbrine.metrics_file: "
                                         << (dir / "no-metrics.prom").string() << "\n";
  return dir / "conf";
}

}  // namespace

TEST_CASE("master status: the status row appears when brine-master starts and updates while it ingests and idles",
          "[master][status][e2e]") {
  for (const std::string& backend : Backends()) {
    INFO("backend " << backend);
    brine::test::TempDir dir;
    const std::string db = StoreFor(backend, dir.path());
    MasterProcess m("brine.database: '" + db + "'\n");
    m.Start();
    std::optional<brine::store::MasterStatus> st;
    REQUIRE(WaitUntil([&] { return (st = StatusOf(db, "test_master")) && st->info; }));
    CHECK(st->info->pid == m.child()->pid());
    CHECK(!st->info->version.empty());
    CHECK(!st->info->host.empty());
    CHECK(st->info->started_us > 0);
    CHECK(CounterOf(*st, "started_us") == st->info->started_us);
    const std::int64_t first_heartbeat = CounterOf(*st, "heartbeat_us");
    CHECK(first_heartbeat > 0);
    CHECK(CounterOf(*st, "stopped_us") == 0);

    brine::test::PushFrames(m.pull_endpoint(), Fleet(3, 2, 4));
    REQUIRE(WaitUntil([&] { return (st = StatusOf(db, "test_master")) && CounterOf(*st, "received") == 16; }));
    CHECK(CounterOf(*st, "last_commit_us") > 0);
    CHECK(CounterOf(*st, "heartbeat_us") >= CounterOf(*st, "last_commit_us"));
    CHECK(CounterOf(*st, "commit_lag_us") >= 0);
    CHECK(CounterOf(*st, "queue_depth") >= 0);
    // Idle, it still beats (every 5 s) without a frame.
    const std::int64_t after_ingest = CounterOf(*st, "heartbeat_us");
    REQUIRE(WaitUntil([&] { return (st = StatusOf(db, "test_master")) && CounterOf(*st, "heartbeat_us") > after_ingest; },
                      std::chrono::seconds(20)));
    CHECK(CounterOf(*st, "received") == 16);
    REQUIRE(m.Stop() == 0);
    st = StatusOf(db, "test_master");
    REQUIRE(st);
    CHECK(CounterOf(*st, "stopped_us") >= CounterOf(*st, "started_us"));
  }
}

TEST_CASE("master status: brine.stats and brine.health from the store alone, with no bus and no metrics file",
          "[master][status][e2e]") {
  for (const std::string& backend : Backends()) {
    INFO("backend " << backend);
    brine::test::TempDir dir;
    const std::string db = StoreFor(backend, dir.path());
    MasterProcess m("brine.database: '" + db + "'\n");
    m.Start();
    brine::test::PushFrames(m.pull_endpoint(), Fleet(2, 2, 1));
    REQUIRE(WaitUntil([&] {
      auto st = StatusOf(db, "test_master");
      return st && CounterOf(*st, "received") == 9;
    }));
    // On SQLite the reader is another master's config on the same file (the
    // master's own id with its bus absent is judged by the bus); on
    // PostgreSQL it is this master's config on another host.
    const std::string id = backend == "postgresql" ? "test_master" : "reader";
    const auto conf = ReaderConf(dir / "reader", id, db);
    const brine::test::CliResult stats = brine::test::Cli({"-c", conf.string(), "--out", "json", "brine.stats"});
    INFO(stats.out << stats.err);
    REQUIRE(stats.code == 0);
    const Value v = brine::ParseJson(stats.out);
    const Value* mine = v.Find("test_master");
    REQUIRE(mine != nullptr);
    CHECK(*mine->Find("running") == true);
    CHECK(*mine->Find("since_start")->Find("received") == 9);
    CHECK(*mine->Find("since_start")->Find("returns") == 4);
    CHECK(mine->Find("per_second_last_minute") == nullptr);  // the metrics file's alone
    REQUIRE(mine->Find("pid") != nullptr);
    CHECK(mine->Find("pid")->as_int() == m.child()->pid());
    CHECK(mine->Find("host") != nullptr);
    CHECK(mine->Find("version") != nullptr);
    CHECK(mine->Find("heartbeat_us")->as_int() > 0);
    CHECK(mine->Find("commit_lag_s") != nullptr);
    if (backend == "postgresql") {
      const brine::test::CliResult health = brine::test::Cli({"-c", conf.string(), "brine.health"});
      INFO(health.out << health.err);
      CHECK(health.code == 0);
      CHECK(health.out.find(" is running and keeps up (by its status row in the store): ") != std::string::npos);
    }
    REQUIRE(m.Stop() == 0);
    const Value after = brine::ParseJson(brine::test::Cli({"-c", conf.string(), "--out", "json", "brine.stats"}).out);
    CHECK(*after.Find("test_master")->Find("running") == false);
    if (backend == "postgresql") {
      const brine::test::CliResult down = brine::test::Cli({"-c", conf.string(), "brine.health"});
      CHECK(down.code == 1);
      CHECK(down.out.rfind("brine-master test_master is not running: it stopped at ", 0) == 0);
    }
  }
}

TEST_CASE("master status: the hourly rollups equal the counts of the rows brine-master filed",
          "[master][status][e2e]") {
  for (const std::string& backend : Backends()) {
    INFO("backend " << backend);
    brine::test::TempDir dir;
    const std::string db = StoreFor(backend, dir.path());
    MasterProcess m("brine.database: '" + db + "'\n");
    m.Start();
    const auto from = brine::SystemClock().Now() - std::chrono::hours(2);
    brine::test::PushFrames(m.pull_endpoint(), Fleet(10, 3, 25));
    REQUIRE(WaitUntil([&] {
      auto st = StatusOf(db, "test_master");
      return st && CounterOf(*st, "received") == 10 * 2 + 30 + 25;
    }));
    REQUIRE(m.Stop() == 0);
    const auto until = brine::SystemClock().Now() + std::chrono::hours(2);
    auto s = brine::store::OpenStore(db, {.access = brine::store::OpenOptions::Access::kReadOnly});
    const auto series = s->HourlyCounts(from, until, std::string("test_master"));
    CHECK(series.size() >= 4);
    brine::store::HourCounts sum;
    for (const auto& h : series) {
      sum.jobs += h.jobs;
      sum.returns += h.returns;
      sum.failures += h.failures;
      sum.events += h.events;
    }
    auto count = [&](const std::string& sql) { return std::stoll(Query(backend, db, sql)); };
    CHECK(sum.jobs == count("SELECT count(*) FROM jids"));
    CHECK(sum.returns == count("SELECT count(*) FROM salt_returns"));
    CHECK(sum.failures == count("SELECT count(*) FROM failed_returns"));
    CHECK(sum.events == count("SELECT count(*) FROM salt_events"));
    CHECK(sum.jobs == 10);
    CHECK(sum.returns == 30);
    CHECK(sum.failures == 20);
    CHECK(sum.events == 75);
    // Another master's filter, and the sum over every master.
    for (const auto& h : s->HourlyCounts(from, until, std::string("no_such_master"))) CHECK(h.events == 0);
    std::int64_t events = 0;
    for (const auto& h : s->HourlyCounts(from, until, std::nullopt)) events += h.events;
    CHECK(events == 75);
  }
}

TEST_CASE("master status: HourlyCounts fills every hour, adds to an hour, filters by master and forgets old hours",
          "[store][status]") {
  for (const std::string& backend : Backends()) {
    INFO("backend " << backend);
    brine::test::TempDir dir;
    const std::string db = StoreFor(backend, dir.path());
    const auto t0 = brine::FromUnixMicros(std::int64_t{1'800'000'000} * 1'000'000 / 3'600'000'000 * 3'600'000'000);
    const auto hour = std::chrono::hours(1);
    for (const char* master : {"a", "b"}) {
      auto s = brine::store::OpenStore(db, {.master_id = master});
      brine::store::Batch batch = s->BeginBatch();
      const std::vector<brine::store::HourCounts> hours = {{.hour = t0, .jobs = 1, .returns = 2, .failures = 1, .events = 3},
                                                           {.hour = t0 + 2 * hour, .events = 5}};
      s->AddHourlyCounts(hours);
      s->AddHourlyCounts(std::vector<brine::store::HourCounts>{{.hour = t0, .events = 10}});
      batch.Commit();
    }
    auto s = brine::store::OpenStore(db, {.master_id = "a"});
    auto a = s->HourlyCounts(t0 + std::chrono::minutes(30), t0 + 3 * hour, std::string("a"));
    REQUIRE(a.size() == 3);
    CHECK(a[0].hour == t0);
    CHECK((a[0].jobs == 1 && a[0].returns == 2 && a[0].failures == 1 && a[0].events == 13));
    CHECK((a[1].hour == t0 + hour && a[1].events == 0));
    CHECK(a[2].events == 5);
    auto all = s->HourlyCounts(t0, t0 + 3 * hour, std::nullopt);
    REQUIRE(all.size() == 3);
    CHECK(all[0].events == 26);
    CHECK(all[2].events == 10);
    CHECK_THROWS_AS(s->HourlyCounts(t0, t0 + 24 * 367 * hour, std::nullopt), brine::store::StoreError);
    s->ForgetHoursBefore(t0 + hour + std::chrono::minutes(59));  // t0's hour ends before it, t0 + 1 h's not
    all = s->HourlyCounts(t0, t0 + 3 * hour, std::nullopt);
    CHECK(all[0].events == 0);
    CHECK(all[2].events == 10);
  }
}

TEST_CASE("master status: a retention run removes the hourly rollups of the hours older than every cut, and keeps the rest",
          "[master][status][e2e]") {
  for (const std::string& backend : Backends()) {
    INFO("backend " << backend);
    brine::test::TempDir dir;
    const std::string db = StoreFor(backend, dir.path());
    const auto now = brine::SystemClock().Now();
    {
      auto s = brine::store::OpenStore(db, {.master_id = "test_master"});
      brine::store::Batch batch = s->BeginBatch();
      s->AddHourlyCounts(std::vector<brine::store::HourCounts>{
          {.hour = date::floor<std::chrono::hours>(now - std::chrono::hours(72)), .events = 7},
          {.hour = date::floor<std::chrono::hours>(now - std::chrono::hours(2)), .events = 5}});
      batch.Commit();
    }
    // The first maintenance pass runs at start: retention with the default
    // keep_jobs_seconds and brine.keep_events_seconds of a day.
    MasterProcess m("brine.database: '" + db + "'\n");
    m.Start();
    auto events_in = [&](std::chrono::hours from, std::chrono::hours until) {
      auto s = brine::store::OpenStore(db, {.access = brine::store::OpenOptions::Access::kReadOnly});
      std::int64_t n = 0;
      for (const auto& h : s->HourlyCounts(now - from, now - until, std::nullopt)) n += h.events;
      return n;
    };
    const bool gone = WaitUntil([&] { return events_in(std::chrono::hours(80), std::chrono::hours(60)) == 0; });
    INFO(brine::test::ReadFile(m.log_file()));
    CHECK(gone);
    CHECK(events_in(std::chrono::hours(3), std::chrono::hours(0)) == 5);
    REQUIRE(m.Stop() == 0);
  }
}
