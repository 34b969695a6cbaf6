// What is special to the PostgreSQL backend: the test server itself, the
// migrations under an advisory lock, partitions, reconnects. The job cache's
// semantics are tested once for both backends in store_test.cpp.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/postgres_stats.h"
#include "brine/store/queues.h"
#include "brine/store/store.h"

#include "support/golden.h"
#include "support/joining_thread.h"
#include "support/postgres_server.h"
#include "support/process.h"

using brine::test::PostgresServer;

#define BRINE_REQUIRE_POSTGRES()                            \
  do {                                                      \
    if (auto why = PostgresServer::Unavailable()) {         \
      WARN(*why);                                           \
      return;                                               \
    }                                                       \
  } while (false)

TEST_CASE("postgres: the test server runs unprivileged on a private socket and leaves nothing behind",
          "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  std::filesystem::path dir;
  {
    PostgresServer server;
    dir = server.dir();
    REQUIRE(std::filesystem::exists(dir / ".s.PGSQL.5432"));
    const std::string uri = server.CreateDatabase();
    REQUIRE(server.Query(uri, "SELECT current_setting('listen_addresses')") == "\n");
    REQUIRE(server.Query(uri, "SELECT 1 + 1") == "2\n");
    // Not root: PostgreSQL refuses that, and the tests must not need it.
    struct stat st {};
    REQUIRE(stat((dir / "data").c_str(), &st) == 0);
    REQUIRE((getuid() != 0 || st.st_uid != 0));

    // Killed and started again on the same data: the data survives.
    (void)server.Query(uri, "CREATE TABLE t (x int); INSERT INTO t VALUES (7)");
    server.Kill();
    REQUIRE_THROWS(server.Query(uri, "SELECT 1"));
    server.Start();
    REQUIRE(server.Query(uri, "SELECT x FROM t") == "7\n");
  }
  REQUIRE_FALSE(std::filesystem::exists(dir));
}

namespace {

using brine::ParseJson;
using brine::Value;
using brine::store::OpenOptions;
using brine::store::OpenQueues;
using brine::store::OpenStore;
using brine::store::ReturnOutcome;

Value Ret(const std::string& jid, const std::string& minion) {
  return ParseJson(R"({"fun_args":[],"jid":")" + jid + R"(","return":true,"retcode":0,"success":true,)" +
                   R"("cmd":"_return","_stamp":"2024-01-01T12:00:01.000001","fun":"test.ping","id":")" + minion +
                   R"("})");
}

// Stores each minion's return of `jid` and gives the archive events that
// point at them (what brine-master writes for a job's returns).
std::vector<brine::store::Event> StoreReturns(brine::store::Store& s, const std::string& jid,
                                              const std::vector<std::string>& minions) {
  std::vector<brine::store::Event> events;
  for (const std::string& m : minions) {
    const Value ret = Ret(jid, m);
    const ReturnOutcome out = s.Returner(ret);
    REQUIRE(out.kind == ReturnOutcome::Kind::kStored);
    events.push_back({.tag = "salt/job/" + jid + "/ret/" + m, .data = ret, .same_as_return = out.id});
  }
  return events;
}

// The partitions of `table`, one name a line.
std::string Partitions(PostgresServer& server, const std::string& uri, const std::string& table) {
  return server.Query(uri, "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid"
                           " WHERE i.inhparent = '" + table + "'::regclass ORDER BY 1");
}

// The newest PostgreSQL schema: one version per file of migrations/postgres.
int NewestPostgresSchema() {
  return static_cast<int>(std::distance(
      std::filesystem::directory_iterator(std::string(BRINE_SOURCE_DIR) + "/migrations/postgres"),
      std::filesystem::directory_iterator{}));
}

}  // namespace

TEST_CASE("postgres: two masters starting at once migrate once, under the advisory lock", "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  std::vector<std::thread> starters;
  std::atomic<int> failures{0};
  for (int i = 0; i < 4; ++i) {
    starters.emplace_back([&, i] {
      try {
        auto s = OpenStore(uri, {.master_id = "master" + std::to_string(i)});
        if (s->SchemaVersion() != NewestPostgresSchema()) ++failures;
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& t : starters) t.join();
  REQUIRE(failures == 0);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM brine_schema") == "1\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM master") == "4\n");
}

TEST_CASE("postgres: the same return through two masters is stored once, first wins", "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  auto a = OpenStore(uri, {.master_id = "master_a"});
  auto b = OpenStore(uri, {.master_id = "master_b"});
  const std::string jid = "20240101120000000001";
  a->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::vector<std::string>{"m1"});
  b->SaveMinions(jid, {"m2"}, std::string("syndic"));
  REQUIRE(a->Returner(Ret(jid, "m1")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(b->Returner(Ret(jid, "m1")).kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(b->Returner(Ret(jid, "m2")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM salt_returns") == "2\n");
  // Either master answers for the fleet; the minion lists merged.
  REQUIRE(brine::ToJson(*a->GetLoad(jid).Find("Minions")) == R"(["m1","m2"])");
  REQUIRE(a->GetJid(jid) == b->GetJid(jid));
  // Each master archives under its own id.
  std::vector<brine::store::Event> events{{.tag = "salt/auth", .data = ParseJson(R"({"id":"m1"})")}};
  a->EventReturn(events);
  b->EventReturn(events);
  REQUIRE(server.Query(uri, "SELECT master_id FROM salt_events ORDER BY id") == "master_a\nmaster_b\n");
}

TEST_CASE("postgres: a reader opens in one round trip, and refuses a database with no brine schema or a newer one",
          "[postgres]") {
  // brine-run opens a connection per call: its settings and the schema check
  // go as one simple query (postgres_backend.cpp), each round trip being a
  // wake-up of the server process.
  BRINE_REQUIRE_POSTGRES();
  using brine::store::OpenOptions;
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const OpenOptions reader{.access = OpenOptions::Access::kReadOnly};
  CHECK_THROWS_WITH(OpenStore(uri, reader), Catch::Contains("is not a brine store (schema version 0)"));
  CHECK(server.Query(uri, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == "0\n");
  (void)OpenStore(uri, {.master_id = "master_a"});
  const std::int64_t before = brine::store::PostgresRoundTrips();
  auto store = OpenStore(uri, reader);
  CHECK(brine::store::PostgresRoundTrips() - before == 1);
  CHECK(store->GetJid("20240101120000000001").as_map().empty());
  (void)server.Query(uri, "UPDATE brine_schema SET version = 99");
  CHECK_THROWS_AS(OpenStore(uri, reader), brine::store::TooNewError);
}

TEST_CASE("postgres: a batch's returns and events cost no round trip of their own, one per job at most",
          "[postgres]") {
  // The issue: "one round trip per batch, never per row". A job's first
  // mention in a batch reads its row (its state and returned minions decide
  // first-wins); returns, events, loads and expected minions wait for COMMIT.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  auto s = OpenStore(uri, {.master_id = "master_a"});
  constexpr int kJobs = 40;
  constexpr int kReturns = 10;
  std::vector<std::string> minions;
  for (int m = 0; m < kReturns; ++m) minions.push_back("minion" + std::to_string(m));
  auto jid_of = [](int j) { return "202401011200000000" + std::string(j < 10 ? "0" : "") + std::to_string(j); };
  // Minion rows are created once per connection, not per batch: name them first.
  s->SaveMinions(jid_of(99), minions, std::nullopt);
  const std::int64_t before = brine::store::PostgresRoundTrips();
  {
    auto batch = s->BeginBatch();
    for (int j = 0; j < kJobs; ++j) {
      const std::string jid = jid_of(j);
      s->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), minions);
      const std::vector<brine::store::Event> events = StoreReturns(*s, jid, minions);
      // A repeat inside the batch is known without asking too.
      REQUIRE(s->Returner(Ret(jid, minions[0])).kind == ReturnOutcome::Kind::kRepeat);
      s->EventReturn(events);
    }
    batch.Commit();
  }
  const std::int64_t trips = brine::store::PostgresRoundTrips() - before;
  INFO("round trips for " << kJobs << " jobs of " << kReturns << " returns: " << trips);
  // One per job, one to draw return ids, the commit: never one per return.
  REQUIRE(trips <= kJobs + 2);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == std::to_string(kJobs * kReturns) + "\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM event WHERE ret_id IS NOT NULL AND tag IS NULL") ==
          std::to_string(kJobs * kReturns) + "\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM event AS e LEFT JOIN ret AS r ON r.id = e.ret_id"
                            " WHERE r.id IS NULL") == "0\n");
  REQUIRE(s->GetJid(jid_of(7)).as_map().size() == kReturns);
  REQUIRE(brine::ToJson(*s->GetLoad(jid_of(7)).Find("Minions")).find("minion9") != std::string::npos);
}

TEST_CASE("postgres: a batch's writes are parsed and planned once per connection, whatever their number of rows",
          "[postgres]") {
  // Parsing and planning each write had been 44 % of the server process's
  // time at full ingest: ids written into the SQL and multi-row VALUES made
  // every statement new. The server's statement log names a prepared
  // statement at each execution ("execute brine_N: ...") and an unnamed one
  // "<unnamed>", so it shows which writes were planned again.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer server;  // its own: its log is read
  const std::string uri = server.CreateDatabase();
  (void)server.Query(uri, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET log_statement = ''all''', "
                          "current_database()); END $$");
  auto s = OpenStore(uri, {.master_id = "m"});
  const std::string auth = R"({"id":"a \"quoted\" \\ name","act":"accept"})";
  int next_job = 10;
  auto write = [&](int jobs, int returns) {
    auto batch = s->BeginBatch();
    for (int j = 0; j < jobs; ++j) {
      const std::string jid = "202401011200000000" + std::to_string(next_job++);
      std::vector<std::string> minions;
      for (int m = 0; m < returns; ++m) minions.push_back("minion" + std::to_string(m));
      s->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), minions);
      s->SaveMinions(jid, minions, std::nullopt);  // the bare-jid event's list: the same, so no write
      std::vector<brine::store::Event> events = StoreReturns(*s, jid, minions);
      events.push_back({.tag = "salt/auth", .data = ParseJson(auth)});
      s->EventReturn(events);
    }
    return batch;
  };
  write(3, 10).Commit();
  {
    auto dropped = write(2, 4);  // sent (a job's row is read at once), then rolled back
  }
  write(5, 7).Commit();
  write(1, 1).Commit();

  std::ifstream in(server.dir() / "server.log");
  std::map<std::string, std::set<std::string>> names;  // statement head -> names it ran under
  std::map<std::string, int> runs;                     // statement head -> executions
  int unnamed_writes = 0;
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("execute ");
    if (at == std::string::npos) continue;
    const auto colon = line.find(": ", at);
    const std::string name = line.substr(at + 8, colon - at - 8);
    const std::string sql = line.substr(colon + 2);
    // Returns and expected minions are inserted in a CTE that also counts
    // them in the minions' rollups (postgres 0011).
    for (const char* head : {"WITH ins AS (INSERT INTO ret ", "INSERT INTO event", "WITH ins AS (INSERT INTO job_minion",
                             "UPDATE job SET load", "INSERT INTO job "}) {
      if (!sql.starts_with(head)) continue;
      if (name == "<unnamed>") ++unnamed_writes;
      names[head].insert(name);
      ++runs[head];
    }
  }
  INFO("server log: " << (server.dir() / "server.log"));
  REQUIRE(unnamed_writes == 0);
  // Each write ran under one name over batches of 1 to 10 rows a job, a
  // rollback between them included.
  REQUIRE(names.size() == 5);
  for (const auto& [head, under] : names) {
    INFO(head);
    REQUIRE(under.size() == 1);
  }
  REQUIRE(runs["INSERT INTO job "] == 11);  // 11 jobs, the rolled-back two included
  // A batch's returns, expected minions, loads and events go as one
  // statement each with its COMMIT, not one each time a job is read (nor a
  // second one for the list given twice): the three committed batches, and
  // nothing of the rolled-back one, whose writes were still waiting.
  REQUIRE(runs["UPDATE job SET load"] == 3);
  REQUIRE(runs["WITH ins AS (INSERT INTO ret "] == 3);
  REQUIRE(runs["WITH ins AS (INSERT INTO job_minion"] == 3);
  REQUIRE(runs["INSERT INTO event"] == 3);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == "66\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM job_minion") == "66\n");
  REQUIRE(server.Query(uri, "SELECT count(*), min(data), max(data) FROM event WHERE tag = 'salt/auth'") ==
          "9|" + auth + "|" + auth + "\n");
}

TEST_CASE("postgres: a master's batch naming a job makes another master's write of it wait, and first wins",
          "[postgres]") {
  // Returns are decided in the backend and sent at commit: without the job
  // row's lock, both masters would call the same minion's return the first.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const std::string jid = "20240101120000000001";
  auto a = OpenStore(uri, {.master_id = "master_a"});
  auto b = OpenStore(uri, {.master_id = "master_b"});
  a->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::vector<std::string>{"m1", "m2"});
  std::atomic<bool> b_done{false};
  ReturnOutcome b_outcome;
  // Outside the batch's scope: a failure unwinds the batch (its rollback
  // frees the job's lock that `other` waits on) before joining.
  brine::test::JoiningThread other;
  {
    auto batch = a->BeginBatch();
    REQUIRE(a->Returner(Ret(jid, "m1")).kind == ReturnOutcome::Kind::kStored);
    other = brine::test::JoiningThread([&] {
      b_outcome = b->Returner(Ret(jid, "m1"));
      b_done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const bool waited = !b_done;
    batch.Commit();
    other.Join();
    REQUIRE(waited);
  }
  REQUIRE(b_outcome.kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == "1\n");
}

TEST_CASE("postgres: a return stored behind the job's lock while a batch waits to send its own fails that batch, "
          "and the replay counts a repeat",
          "[postgres]") {
  // The net under the lock (the returns' unique key, which the batch's INSERT
  // meets with no ON CONFLICT): a writer that takes no lock (here plain SQL)
  // stores the return first.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const std::string jid = "20240101120000000001";
  auto a = OpenStore(uri, {.master_id = "master_a"});
  a->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::vector<std::string>{"m1", "m2"});
  {
    auto batch = a->BeginBatch();
    REQUIRE(a->Returner(Ret(jid, "m2")).kind == ReturnOutcome::Kind::kStored);
    const ReturnOutcome first = a->Returner(Ret(jid, "m1"));
    REQUIRE(first.kind == ReturnOutcome::Kind::kStored);
    a->EventReturn(std::vector<brine::store::Event>{
        {.tag = "salt/job/" + jid + "/ret/m1", .data = Ret(jid, "m1"), .same_as_return = first.id}});
    std::string text = brine::ToJson(Ret(jid, "m1"));
    std::string quoted;
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    // As every writer of ret must: with the job's day (migrations/postgres/0003).
    (void)server.Query(uri, "INSERT INTO ret (job_id, minion_id, recv, full_ret, job_day) SELECT j.id, m.id, now(), '" +
                                quoted + "', j.part_day FROM job AS j, minion AS m WHERE j.jid = '" + jid +
                                "' AND m.name = 'm1'");
    REQUIRE_THROWS_AS(batch.Commit(), brine::store::BusyError);
  }
  // Nothing of a's batch went in: no event names a return that is not there.
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == "1\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM event") == "0\n");
  REQUIRE_THROWS_AS(a->Returner(Ret(jid, "m2")), brine::store::StoreError);  // reopen and replay
  auto replay = OpenStore(uri, {.master_id = "master_a"});
  {
    auto batch = replay->BeginBatch();
    REQUIRE(replay->Returner(Ret(jid, "m2")).kind == ReturnOutcome::Kind::kStored);
    REQUIRE(replay->Returner(Ret(jid, "m1")).kind == ReturnOutcome::Kind::kRepeat);
    batch.Commit();
  }
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == "2\n");
}

TEST_CASE("postgres: a lost connection fails the commit as WriteFailedError and the replayed batch loses nothing",
          "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer server;  // its own: this test kills it
  const std::string uri = server.CreateDatabase();
  auto s = OpenStore(uri, {.master_id = "m"});
  auto write = [&](brine::store::Store& store) {
    auto batch = store.BeginBatch();
    for (int i = 0; i < 50; ++i) {
      const std::string jid = "202401011200000000" + std::to_string(10 + i);
      store.SaveLoad(jid, ParseJson(R"({"fun":"test.ping"})"), std::vector<std::string>{"m1"});
      (void)store.Returner(Ret(jid, "m1"));
    }
    batch.Commit();
  };
  {
    auto batch = s->BeginBatch();
    s->SaveLoad("20240101120000000001", ParseJson(R"({"fun":"x"})"), std::nullopt);
    server.Kill();
    REQUIRE_THROWS_AS(batch.Commit(), brine::store::WriteFailedError);
  }
  REQUIRE_THROWS_AS(write(*s), brine::store::StoreError);  // refuses until reopened
  REQUIRE_THROWS_AS(OpenStore(uri, {.master_id = "m"}), brine::store::StoreError);  // still down
  server.Start();
  s = OpenStore(uri, {.master_id = "m"});
  write(*s);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret") == "50\n");
}

TEST_CASE("postgres: a password never shows in an error, and a URI is no file path", "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  std::string uri = server.Uri("no_such_db");
  uri.replace(uri.find("brine@"), 6, "brine:sekrit99@");
  try {
    (void)OpenStore(uri);
    FAIL("opened a missing database");
  } catch (const brine::store::StoreError& e) {
    REQUIRE(std::string(e.what()).find("sekrit99") == std::string::npos);
    REQUIRE(std::string(e.what()).find("no_such_db") != std::string::npos);
  }
  REQUIRE(brine::store::IsServerDatabase(uri));
  REQUIRE_FALSE(brine::store::IsServerDatabase("/var/cache/salt/master/brine.sqlite"));
}

TEST_CASE("postgres: queues are FIFO, refuse duplicates and put a dropped pop back", "[postgres][queue]") {
  BRINE_REQUIRE_POSTGRES();
  const std::string uri = PostgresServer::Shared().CreateDatabase();
  auto q = OpenQueues(uri);
  const std::vector<Value> items{Value("zeta"), Value("alpha"), ParseJson(R"({"b":1,"a":2})"), Value(5)};
  REQUIRE(q->Insert("work", items).kind == brine::store::InsertOutcome::Kind::kInserted);
  const std::vector<Value> again{Value("new"), Value("alpha")};
  const auto dup = q->Insert("work", again);
  REQUIRE(dup.kind == brine::store::InsertOutcome::Kind::kDuplicate);
  REQUIRE(dup.duplicate_index == 1);
  REQUIRE(q->Length("work") == 4);
  REQUIRE(q->Items("work") == items);
  {
    auto held = q->BeginPop("work", 2);
    REQUIRE(held.items() == std::vector<Value>{items[0], items[1]});
  }
  REQUIRE(q->Pop("work", 1) == std::vector<Value>{items[0]});
  REQUIRE(q->Pop("work", brine::store::kAllItems) == std::vector<Value>{items[1], items[2], items[3]});
  REQUIRE(q->Length("empty") == 0);
  REQUIRE(q->ListQueues() == std::vector<std::string>{"empty", "work"});
}

TEST_CASE("postgres: eight poppers on two connections' worth of masters get each item exactly once",
          "[postgres][queue]") {
  BRINE_REQUIRE_POSTGRES();
  const std::string uri = PostgresServer::Shared().CreateDatabase();
  constexpr int kItems = 4000;
  {
    auto q = OpenQueues(uri);
    std::vector<Value> items;
    for (int i = 0; i < kItems; ++i) items.emplace_back(i);
    REQUIRE(q->Insert("work", items).kind == brine::store::InsertOutcome::Kind::kInserted);
  }
  std::mutex mu;
  std::vector<long long> got;
  std::vector<std::thread> poppers;
  std::atomic<int> errors{0};
  for (int p = 0; p < 8; ++p) {
    poppers.emplace_back([&] {
      try {
        auto q = OpenQueues(uri);
        while (true) {
          const auto batch = q->Pop("work", 7);
          if (batch.empty()) break;
          std::lock_guard lock(mu);
          for (const Value& v : batch) got.push_back(v.as_int());
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& t : poppers) t.join();
  REQUIRE(errors == 0);
  std::sort(got.begin(), got.end());
  REQUIRE(got.size() == static_cast<std::size_t>(kItems));
  for (int i = 0; i < kItems; ++i) REQUIRE(got[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("postgres: the schema after all migrations matches the golden file", "[postgres][golden]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  { auto s = OpenStore(uri); }
  const std::string schema =
      server.Query(uri,
                   "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, coalesce(c.collation_name, '')"
                   " FROM information_schema.columns AS c WHERE c.table_schema = 'public'"
                   // The day partitions are named by today's date: the retention cases pin them.
                   " AND c.table_name !~ '^(event|ret|job_minion)_p[0-9]'"
                   " ORDER BY c.table_name, c.ordinal_position") +
      server.Query(uri, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
                        " AND tablename !~ '^(event|ret|job_minion)_p[0-9]' ORDER BY indexname") +
      server.Query(uri,
                   "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public' ORDER BY viewname") +
      server.Query(uri, "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1") +
      server.Query(uri, "SELECT version FROM brine_schema");
  const std::string diff = brine::test::CheckGolden("postgres_schema.txt", schema);
  INFO(diff);
  REQUIRE(diff.empty());
}

TEST_CASE("postgres: retention drops whole days of archived events as partitions, the rest row by row",
          "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const brine::Micros t0 = brine::FromUnixMicros(1704110400000000);  // 2024-01-01 12:00:00 UTC
  brine::FakeClock clock{t0};
  auto s = OpenStore(uri, {.master_id = "m", .clock = &clock});
  auto partitions = [&] { return Partitions(server, uri, "event"); };
  // Yesterday, today and tomorrow exist from the start.
  REQUIRE(partitions() == "event_default\nevent_p20231231\nevent_p20240101\nevent_p20240102\n");
  auto archive = [&](brine::Micros at, int n) {
    std::vector<brine::store::Event> events;
    for (int i = 0; i < n; ++i) {
      events.push_back({.tag = "salt/auth", .data = ParseJson(R"({"id":"m1"})"), .received = at});
    }
    s->EventReturn(events);
  };
  archive(t0, 5);                                // today's partition
  archive(t0 - std::chrono::hours(24 * 30), 2);  // a month ago: event_default
  // A day later (the clock moved), the next batch creates the day after tomorrow.
  clock.Advance(std::chrono::hours(24));
  archive(t0 + std::chrono::hours(24), 3);
  REQUIRE(partitions() ==
          "event_default\nevent_p20231231\nevent_p20240101\nevent_p20240102\nevent_p20240103\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM event_p20240101") == "5\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM event_default") == "2\n");

  // Keep everything from 2024-01-02 00:00: 2023-12-31 and 2024-01-01 are dropped
  // whole (5 events), the month-old events go row by row (2), within a budget of 1 row.
  auto r = s->CleanOldJobs(std::nullopt, brine::FromUnixMicros(1704153600000000), 1);
  REQUIRE(r.events == 6);
  REQUIRE(r.more);
  REQUIRE(partitions() == "event_default\nevent_p20240102\nevent_p20240103\n");
  r = s->CleanOldJobs(std::nullopt, brine::FromUnixMicros(1704153600000000), 100);
  REQUIRE(r.events == 1);
  REQUIRE_FALSE(r.more);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM salt_events") == "3\n");
}

TEST_CASE("postgres: retention drops whole days of jobs and returns as partitions, a day with a kept job job by job",
          "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const brine::Micros t0 = brine::FromUnixMicros(1704110400000000);  // 2024-01-01 12:00:00 UTC
  const auto day = std::chrono::hours(24);
  brine::FakeClock clock{t0};
  auto s = OpenStore(uri, {.master_id = "m", .clock = &clock});
  auto partitions = [&](const std::string& table) { return Partitions(server, uri, table); };
  REQUIRE(partitions("ret") == "ret_default\nret_p20231231\nret_p20240101\nret_p20240102\n");
  REQUIRE(partitions("job_minion") ==
          "job_minion_default\njob_minion_p20231231\njob_minion_p20240101\njob_minion_p20240102\n");
  auto job = [&](const std::string& jid, const std::string& fun, const std::vector<std::string>& minions) {
    s->SaveLoad(jid, ParseJson(R"({"fun":")" + fun + R"(","tgt":"*"})"), minions);
    return StoreReturns(*s, jid, minions);
  };
  // 2024-01-01: a job whose m1 return is also archived as an event, and a
  // minion's own return under the jid "req" (no time: it ages by when seen).
  const std::string a = "20240101120000000001";
  const auto a_events = job(a, "test.ping", {"m1", "m2"});
  s->EventReturn(std::vector<brine::store::Event>{a_events.front()});
  REQUIRE(s->Returner(Ret("req", "m3")).kind == ReturnOutcome::Kind::kStored);
  // 2024-01-02: a job that goes, and a state.apply job kept for ever, which
  // keeps its day's partitions.
  clock.Advance(day);
  // Returns a day late keep their job's day, and first still wins (the job's
  // returned minions are read from its own day's partition).
  REQUIRE(s->Returner(Ret(a, "m1")).kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(s->Returner(Ret(a, "m9")).kind == ReturnOutcome::Kind::kStored);
  const std::string b = "20240102120000000001", kept = "20240102120000000002";
  (void)job(b, "test.ping", {"m1"});
  (void)job(kept, "state.apply", {"m1"});
  // 2024-01-03: a job inside keep_jobs.
  clock.Advance(day);
  const std::string c = "20240103120000000001";
  (void)job(c, "test.ping", {"m1"});
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret_p20240101") == "4\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM job_minion_p20240101") == "3\n");  // req's stub names m3

  // Keep jobs from 2024-01-03 00:00, state.* for ever, events for ever; a
  // budget of one row. 2023-12-31 and 2024-01-01 go whole, outside the
  // budget; on 2024-01-02 the kept job holds the day, so b goes job by job.
  brine::store::Retention retention{.jobs_before = brine::FromUnixMicros(1704240000000000),
                                    .jobs_by_fun = {{.glob = "state.*", .before = std::nullopt}}};
  auto r = s->ApplyRetention(retention, 1);
  REQUIRE(r.jobs == 3);
  REQUIRE(r.returns == 5);
  REQUIRE(r.more);
  REQUIRE(partitions("ret") == "ret_default\nret_p20240102\nret_p20240103\nret_p20240104\n");
  REQUIRE(partitions("job_minion") ==
          "job_minion_default\njob_minion_p20240102\njob_minion_p20240103\njob_minion_p20240104\n");
  REQUIRE(s->GetLoad(a) == Value::EmptyMap());
  REQUIRE(s->GetJid("req").as_map().empty());
  REQUIRE(s->GetJid(b).as_map().empty());
  REQUIRE(s->GetJid(kept).as_map().size() == 1);
  REQUIRE(s->GetJid(c).as_map().size() == 1);
  // The archived event outlives its return with the payload it had.
  REQUIRE(server.Query(uri, "SELECT tag, data::jsonb ->> 'id', ret_id IS NULL, job_id IS NULL FROM event") ==
          "salt/job/" + a + "/ret/m1|m1|t|t\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM salt_returns") == "2\n");
  r = s->ApplyRetention(retention, 100);
  REQUIRE(r.jobs == 0);
  REQUIRE_FALSE(r.more);
  REQUIRE(partitions("ret") == "ret_default\nret_p20240102\nret_p20240103\nret_p20240104\n");
}

TEST_CASE("postgres: a store made before the job partitions keeps its rows, and first still wins for its jobs",
          "[postgres]") {
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  // Schema 2 as an older brine left it, with one job, its expected minions
  // m1 and m2, and m1's return.
  for (const char* name : {"0001_initial.sql", "0002_batched_returns_forensics.sql"}) {
    (void)server.Query(uri, brine::test::ReadFile(std::string(BRINE_SOURCE_DIR) + "/migrations/postgres/" + name));
  }
  const std::string old = "20240101120000000001";
  const std::string ret_m1 = brine::ToJson(Ret(old, "m1"));
  (void)server.Query(uri, "CREATE TABLE brine_schema (version integer NOT NULL); INSERT INTO brine_schema VALUES (2);"
                          " INSERT INTO minion (name) VALUES ('m1'), ('m2');"
                          " INSERT INTO job (jid, fun, load, load_kind, seen) VALUES ('" + old +
                          "', 'test.ping', '{\"fun\":\"test.ping\",\"user\":\"alice\"}', 3, now());"
                          " INSERT INTO job_minion VALUES (1, 1), (1, 2);"
                          " INSERT INTO ret (job_id, minion_id, recv, full_ret) VALUES (1, 1, now(), '" + ret_m1 + "')");
  auto s = OpenStore(uri, {.master_id = "m"});
  REQUIRE(s->SchemaVersion() == NewestPostgresSchema());
  // 0004 filled the old job's start time and user from its jid and load.
  REQUIRE(server.Query(uri, "SELECT start_time, \"user\" FROM jids") == "2024-01-01 12:00:00.000001+00|alice\n");
  REQUIRE(server.Query(uri, "SELECT count(*), count(job_day) FROM ret_default") == "1|0\n");
  // The old job's returns stay beside its first one: a repeat is a repeat,
  // and m2's return lands in the default partition too.
  REQUIRE(s->Returner(Ret(old, "m1")).kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(s->Returner(Ret(old, "m2")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(server.Query(uri, "SELECT count(*), count(job_day) FROM ret_default") == "2|0\n");
  // A new job's rows go to today's partitions, and the views (re-created on
  // the partitioned tables) show old and new alike.
  const std::string jid = brine::FormatJid(brine::SystemClock().Now());
  (void)StoreReturns(*s, jid, {"m1"});
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret_default") == "2\n");
  REQUIRE(server.Query(uri, "SELECT jid FROM salt_returns ORDER BY jid, id") == old + "\n" + old + "\n" + jid + "\n");
  REQUIRE(server.Query(uri, "SELECT minion FROM jid_missing") == "");
  REQUIRE(s->GetJid(old).as_map().size() == 2);
  // The old rows leave job by job.
  const auto r = s->CleanOldJobs(brine::FromUnixMicros(1704153600000000), std::nullopt, 100);  // 2024-01-02
  REQUIRE(r.jobs == 1);
  REQUIRE(r.returns == 2);
  REQUIRE(server.Query(uri, "SELECT count(*) FROM ret_default") == "0\n");
  REQUIRE(server.Query(uri, "SELECT count(*) FROM job_minion_default") == "0\n");
  REQUIRE(s->GetJid(jid).as_map().size() == 1);
}

TEST_CASE("postgres: a job's start time and user are columns its writer fills, by the rules of 0002's expressions",
          "[postgres]") {
  // 0004 made them columns (0002 indexed brine_start_time and
  // brine_load_field, at a PL/pgSQL call and a jsonb parse of the load each,
  // several times a job). Whatever the writer sends must equal what those
  // expressions give, for every kind of user and jid.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  auto s = OpenStore(uri);
  const std::vector<std::pair<std::string, std::string>> users = {
      {"20240101120000000001", R"("root")"},
      {"20240101120000000002", R"("j\u00fcrgen \"quoted\" \\ name")"},
      {"20240101120000000003", "5"},
      {"20240101120000000004", R"(["a", "b"])"},
      {"20240101120000000005", "null"},
      {"20240101120000000006", R"("nul \u0000 inside")"},  // text holds no NUL: the load falls back as a whole
      {"20241399120000000007", R"("bad date")"},            // month 13: the jid is no time
      {"not-a-time-jid", R"("sudo_bob")"},
  };
  for (const auto& [jid, user] : users) {
    s->SaveLoad(jid, ParseJson(R"({"fun":"test.ping","tgt":"*","user":)" + user + "}"), std::nullopt);
  }
  s->SaveLoad("20240101120000000008", ParseJson(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  // A return before its publish: the stub load takes the return's user.
  auto ret = Ret("20240101120000000009", "m1");
  ret.Set("user", "carol");
  REQUIRE(s->Returner(ret).kind == ReturnOutcome::Kind::kStored);

  REQUIRE(server.Query(uri, "SELECT count(*) FROM job WHERE start_time IS DISTINCT FROM brine_start_time(jid, seen)"
                            " OR load_user IS DISTINCT FROM brine_load_field(load, 'user')") == "0\n");
  REQUIRE(server.Query(uri, "SELECT jid, \"user\" FROM jids WHERE \"user\" IS NOT NULL ORDER BY jid") ==
          "20240101120000000001|root\n"
          "20240101120000000002|j\u00fcrgen \"quoted\" \\ name\n"
          "20240101120000000003|5\n"
          "20240101120000000004|[\"a\", \"b\"]\n"
          "20240101120000000009|carol\n"
          "20241399120000000007|bad date\n"
          "not-a-time-jid|sudo_bob\n");
  REQUIRE(server.Query(uri, "SELECT start_time FROM jids WHERE jid IN ('20240101120000000001', '20241399120000000007')"
                            " ORDER BY jid") ==
          "2024-01-01 12:00:00.000001+00\n" + server.Query(uri, "SELECT seen FROM job WHERE jid = '20241399120000000007'"));
}

TEST_CASE("postgres: the forensic windows of docs/schema.md reach the indexes of start_time, load_user and ret_failed",
          "[postgres][docs]") {
  // The data of schema_docs_test.cpp, which runs the page's queries themselves
  // through brine.sql's engine on both backends.
  BRINE_REQUIRE_POSTGRES();
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  {
    auto s = OpenStore(uri);
    brine::SystemClock clock;
    const std::string jid = brine::FormatJid(clock.Now() - std::chrono::minutes(5));
    s->SaveLoad(jid, ParseJson(R"({"fun":"cmd.run","tgt":"web*","tgt_type":"glob","arg":["uptime"],"user":"alice"})"),
                std::vector<std::string>{"web1.example.com", "web2.example.com"});
    auto ret = ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"cmd.run",)"
                         R"("return":"boom","retcode":1,"success":false})");
    ret.Set("jid", jid);
    REQUIRE(s->Returner(ret).kind == ReturnOutcome::Kind::kStored);
    const std::string state_jid = brine::FormatJid(clock.Now() - std::chrono::minutes(4));
    s->SaveLoad(state_jid, ParseJson(R"({"fun":"state.apply","tgt":"web1.example.com","arg":[],"user":"alice"})"),
                std::vector<std::string>{"web1.example.com"});
    auto state = ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"state.apply","retcode":2,)"
                           R"("success":true,"return":{"pkg_|-vim_|-vim_|-installed":{"__id__":"vim",)"
                           R"("name":"vim","result":false,"comment":"no vim here"}}})");
    state.Set("jid", state_jid);
    REQUIRE(s->Returner(state).kind == ReturnOutcome::Kind::kStored);
    std::vector<brine::store::Event> events{
        {.tag = "salt/auth", .data = ParseJson(R"({"id":"web1"})"), .received = clock.Now()}};
    s->EventReturn(events);
  }
  // The windows reach the indexes of the start_time and load_user columns
  // (0004; the planner may still prefer a scan of a tiny table: force its
  // hand to see that it can).
  const std::string plan = server.Query(
      uri, "SET enable_seqscan = off; EXPLAIN SELECT jid FROM jids WHERE start_time > now() - interval '1 day'");
  INFO(plan);
  REQUIRE(plan.find("job_start") != std::string::npos);
  const std::string user_plan =
      server.Query(uri, "SET enable_seqscan = off; EXPLAIN SELECT jid FROM user_jobs WHERE \"user\" = 'alice'");
  INFO(user_plan);
  REQUIRE(user_plan.find("job_user") != std::string::npos);
  const std::string failed_plan = server.Query(
      uri, "SET enable_seqscan = off; EXPLAIN SELECT jid FROM failed_returns WHERE recv_time > now() - interval '1 hour'");
  INFO(failed_plan);
  // Each day partition has ret_failed's index under a name of its own.
  REQUIRE(failed_plan.find("ret_default_failed") != std::string::npos);
  REQUIRE(failed_plan.find("recv_job_id_minion_id_retcode_success_idx") != std::string::npos);
  REQUIRE(failed_plan.find("Seq Scan on ret") == std::string::npos);
}
