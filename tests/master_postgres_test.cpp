// brine-master end to end on PostgreSQL: two masters on one database, a
// brine-sim fleet through both, and the server killed mid-ingest (issue 16).

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "brine/wire/codec.h"
#include "support/joining_thread.h"
#include "support/master_helpers.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/process.h"

using brine::Value;
using brine::test::JoiningThread;
using brine::test::MasterProcess;
using brine::test::PushFrames;
using brine::test::Sql;
using namespace brine::test::master_helpers;

namespace {

// brine-run's stdout for `args` against the config in `conf_dir`.
std::string RunnerOut(const std::filesystem::path& conf_dir, std::vector<std::string> args) {
  std::vector<std::string> argv{brine::test::Binary("brine-run").string(), "-c", conf_dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = brine::test::Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("master: two brine-masters on one PostgreSQL database answer brine-run alike, and as SQLite does",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  auto& server = brine::test::PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const std::string database = "brine.database: '" + uri + "'\n";
  MasterProcess a(database);
  MasterProcess b(database);
  // A second id for the second master (`id` is in the generated master file).
  std::filesystem::create_directories(b.conf_dir() / "master.d");
  std::ofstream(b.conf_dir() / "master.d" / "id.conf") << "id: second_master\n";
  MasterProcess sqlite;
  a.Start();
  b.Start();
  sqlite.Start();
  // Hot multi-master: every event reaches both masters.
  const auto frames = Frames2014(Fixture2014());
  PushFrames(a.pull_endpoint(), frames);
  PushFrames(b.pull_endpoint(), frames);
  PushFrames(sqlite.pull_endpoint(), frames);
  REQUIRE(a.Stop() == 0);
  REQUIRE(b.Stop() == 0);
  REQUIRE(sqlite.Stop() == 0);

  // Each return is stored once; each master archived its own bus.
  REQUIRE(server.Query(uri, "SELECT count(*) FROM salt_returns") == "3\n");
  REQUIRE(server.Query(uri, "SELECT master_id, count(*) FROM salt_events GROUP BY master_id ORDER BY 1") ==
          "second_master|15\ntest_master|15\n");
  REQUIRE(server.Query(uri, "SELECT jid, fun, load_source FROM jids ORDER BY jid") ==
          "20140417135823133764|test.ping|publish\n"
          "20140417141834578593|cmd.run|publish\n"
          "20140417141839587706|saltutil.find_job|publish\n");

  for (const std::vector<std::string>& call :
       {std::vector<std::string>{"jobs.list_jobs", "--out", "json"},
        std::vector<std::string>{"jobs.list_jobs"},
        std::vector<std::string>{"jobs.lookup_jid", "20140417141834578593"},
        std::vector<std::string>{"jobs.lookup_jid", "20140417141834578593", "--out", "json"},
        std::vector<std::string>{"jobs.list_job", "20140417135823133764"},
        std::vector<std::string>{"jobs.list_job", "20140417141834578593", "--out", "yaml"}}) {
    INFO(call[0]);
    const std::string from_sqlite = RunnerOut(sqlite.conf_dir(), call);
    REQUIRE_FALSE(from_sqlite.empty());
    REQUIRE(RunnerOut(a.conf_dir(), call) == from_sqlite);
    REQUIRE(RunnerOut(b.conf_dir(), call) == from_sqlite);
  }
}

TEST_CASE("master: a brine-sim fleet through two brine-masters on one PostgreSQL database is stored once, as SQLite "
          "stores it",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  // The fleet's events once, as frames (a fixed seed and clock give the same
  // bytes every run), then the same frames to every master: hot multi-master.
  brine::test::TempDir scratch;
  const std::filesystem::path dump = scratch / "fleet.frames";
  const auto sim = brine::test::Run({brine::test::Binary("brine-sim").string(), "--minions", "30", "--jobs", "20",
                                     "--seed", "7", "--clock", "2024-03-01T00:00:00", "--dry-run", dump.string(),
                                     "--dry-run-format", "frames"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  std::vector<std::string> frames;
  {
    const std::string bytes = brine::test::ReadFile(dump);
    for (std::size_t at = 0; at + 4 <= bytes.size();) {
      std::size_t n = 0;
      for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(bytes[at + i]);
      REQUIRE(at + 4 + n <= bytes.size());
      frames.push_back(bytes.substr(at + 4, n));
      at += 4 + n;
    }
  }
  REQUIRE(frames.size() > 100);

  auto& server = brine::test::PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  // Keep everything: the fleet's clock is in 2024.
  const std::string keep = "keep_jobs_seconds: 0\nbrine.keep_events_seconds: 0\n";
  MasterProcess a(keep + "brine.database: '" + uri + "'\n");
  MasterProcess b(keep + "brine.database: '" + uri + "'\n");
  std::filesystem::create_directories(b.conf_dir() / "master.d");
  std::ofstream(b.conf_dir() / "master.d" / "id.conf") << "id: second_master\n";
  MasterProcess sqlite(keep);
  a.Start();
  b.Start();
  sqlite.Start();
  // A runner job runs on one master: its salt/run/ events are on that bus only.
  std::vector<std::string> minion_frames;
  for (const std::string& f : frames) {
    if (f.rfind("salt/run/", 0) != 0) minion_frames.push_back(f);
  }
  REQUIRE(minion_frames.size() < frames.size());
  JoiningThread to_b([&] { PushFrames(b.pull_endpoint(), minion_frames); });
  PushFrames(a.pull_endpoint(), frames);
  to_b.Join();
  PushFrames(sqlite.pull_endpoint(), frames);
  REQUIRE(a.Stop() == 0);
  REQUIRE(b.Stop() == 0);
  REQUIRE(sqlite.Stop() == 0);

  // Every return once in the shared store, the same ones SQLite holds; each
  // master archived its bus under its own id.
  const std::string returns = Sql(sqlite.database(), "SELECT jid || ' ' || id FROM salt_returns ORDER BY jid, id");
  REQUIRE(returns.size() > 100);
  REQUIRE(server.Query(uri, "SELECT jid || ' ' || id FROM salt_returns ORDER BY jid, id") == returns);
  const std::string events = Sql(sqlite.database(), "SELECT count(*) FROM salt_events");
  const std::string minion_events =
      Sql(sqlite.database(), "SELECT count(*) FROM salt_events WHERE tag NOT LIKE 'salt/run/%'");
  REQUIRE(server.Query(uri, "SELECT master_id, count(*) FROM salt_events GROUP BY master_id ORDER BY 1") ==
          "second_master|" + minion_events + "test_master|" + events);

  const std::string first_jid = Sql(sqlite.database(), "SELECT jid FROM jids ORDER BY jid LIMIT 1");
  const std::string state_jid =
      Sql(sqlite.database(), "SELECT jid FROM jids WHERE fun = 'state.apply' ORDER BY jid LIMIT 1");
  REQUIRE_FALSE(state_jid.empty());
  for (const std::vector<std::string>& call :
       {std::vector<std::string>{"jobs.list_jobs", "--out", "json"},
        std::vector<std::string>{"jobs.lookup_jid", first_jid.substr(0, first_jid.size() - 1), "--out", "json"},
        std::vector<std::string>{"jobs.lookup_jid", state_jid.substr(0, state_jid.size() - 1)},
        std::vector<std::string>{"jobs.list_job", state_jid.substr(0, state_jid.size() - 1), "--out", "json"}}) {
    INFO(call[0] << " " << (call.size() > 1 ? call[1] : ""));
    const std::string from_sqlite = RunnerOut(sqlite.conf_dir(), call);
    REQUIRE_FALSE(from_sqlite.empty());
    REQUIRE(RunnerOut(a.conf_dir(), call) == from_sqlite);
    REQUIRE(RunnerOut(b.conf_dir(), call) == from_sqlite);
  }
}

TEST_CASE("master: PostgreSQL killed mid-ingest and started again loses nothing, and brine-master recovers by itself",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  brine::test::PostgresServer server;  // its own: this test kills it
  const std::string uri = server.CreateDatabase();
  MasterProcess m("brine.database: '" + uri + "'\n");
  m.Start();
  int sent = 0;
  auto push = [&](int n) {
    std::vector<std::string> frames;
    for (int i = 0; i < n; ++i, ++sent) {
      frames.push_back(brine::wire::EncodeFrame("test/outage/" + std::to_string(sent),
                                                Value::Map({{"n", sent}}), brine::wire::Framing::kNew));
    }
    PushFrames(m.pull_endpoint(), frames);
  };
  auto archived = [&] {
    try {
      return std::stoi(server.Query(uri, "SELECT count(*) FROM salt_events WHERE tag LIKE 'test/outage/%'"));
    } catch (const std::exception&) {
      return -1;
    }
  };
  push(500);
  REQUIRE(WaitUntil([&] { return archived() == 500; }));
  server.Kill();
  push(500);  // arrives while the database is gone: the writer keeps the batch
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server.Start();
  push(500);
  const bool all = WaitUntil([&] { return archived() == sent; }, std::chrono::seconds(60));
  INFO("archived " << archived() << " of " << sent << "; log:\n" << brine::test::ReadFile(m.log_file())
                    << "\nstdout and stderr:\n" << brine::test::ReadFile(m.dir() / "master.out"));
  REQUIRE(all);
  REQUIRE(m.child()->Running());
  REQUIRE(m.Stop() == 0);
  // Every event exactly once.
  REQUIRE(server.Query(uri, "SELECT count(DISTINCT tag) FROM salt_events WHERE tag LIKE 'test/outage/%'") ==
          std::to_string(sent) + "\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  REQUIRE(log.find("store writable again") != std::string::npos);
}
