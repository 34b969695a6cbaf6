// A return whose only copy is one the master trimmed for its bus
// (max_event_size: Salt's VALUE_TRIMMED) is marked in salt_returns.trimmed
// (issue 29): set when the trimmed copy is stored, cleared when the whole
// copy replaces it, never set by a trimmed copy that follows a whole one.
// Through store.h on both backends, and end to end with brine-master
// attached to the stand-in of tests/support/modern_bus.h.
#include <SQLiteCpp/Database.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/master_helpers.h"
#include "support/master_process.h"
#include "support/modern_bus.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::Value;
using brine::store::ReturnOutcome;
using brine::test::PostgresServer;
using brine::test::WaitUntil;

namespace {

namespace mh = brine::test::master_helpers;

// SQL on either backend's database, rows a line, fields separated by '|';
// PostgreSQL's booleans read t/f, SQLite's 1/0.
std::string Q(const std::string& database, const std::string& sql) {
  return database.starts_with("postgres") ? PostgresServer::Shared().Query(database, sql)
                                          : brine::test::Sql(database, sql);
}

// The minion's salt_returns row of `jid`: "<trimmed>|<VALUE_TRIMMED in full_ret>", one line per row.
std::string Row(const std::string& database, const std::string& jid) {
  return Q(database, "SELECT trimmed, CASE WHEN CAST(full_ret AS text) LIKE '%VALUE_TRIMMED%' THEN 'cut' ELSE 'whole' END"
                     " FROM salt_returns WHERE jid = '" + jid + "'");
}

Value Ret(const std::string& jid, Value ret) {
  Value load = Value::Map({{"jid", jid}, {"id", "m1"}, {"fun", "cmd.run"}, {"return", std::move(ret)},
                           {"retcode", 0}, {"success", true}});
  return load;
}

}  // namespace

TEST_CASE("attach: a trimmed return is marked in salt_returns, the whole copy clears the mark, on both backends",
          "[attach][store]") {
  brine::test::TempDir dir;
  for (const std::string backend : {"sqlite", "postgresql"}) {
    INFO(backend);
    const std::string database = backend == "sqlite" ? (dir / "trimmed.sqlite").string()
                                                     : PostgresServer::Shared().CreateDatabase();
    const std::string yes = backend == "sqlite" ? "1" : "t";
    const std::string no = backend == "sqlite" ? "0" : "f";
    auto s = brine::store::OpenStore(database, {.master_id = "m"});
    const Value whole = Value::Map({{"big", std::string(100, 'x')}, {"small", 1}});
    const Value cut = Value::Map({{"big", "VALUE_TRIMMED"}, {"small", 1}});

    // The trimmed copy first: marked. A second trimmed copy is a repeat.
    const std::string a = "20240101120000000001";
    REQUIRE(s->Returner(Ret(a, cut)).kind == ReturnOutcome::Kind::kStored);
    CHECK(Row(database, a) == yes + "|cut\n");
    CHECK(s->Returner(Ret(a, cut)).kind == ReturnOutcome::Kind::kRepeat);
    // The whole copy replaces it and clears the mark: still one row.
    REQUIRE(s->Returner(Ret(a, whole)).kind == ReturnOutcome::Kind::kCompleted);
    CHECK(Row(database, a) == no + "|whole\n");
    // A trimmed copy after the whole one changes nothing.
    CHECK(s->Returner(Ret(a, cut)).kind == ReturnOutcome::Kind::kTrimmedCopy);
    CHECK(Row(database, a) == no + "|whole\n");

    // The whole copy first: never marked.
    const std::string b = "20240101120000000002";
    REQUIRE(s->Returner(Ret(b, whole)).kind == ReturnOutcome::Kind::kStored);
    CHECK(s->Returner(Ret(b, cut)).kind == ReturnOutcome::Kind::kTrimmedCopy);
    CHECK(Row(database, b) == no + "|whole\n");

    // In a batch (PostgreSQL sends its returns as one array insert), deep
    // in a list; a key named VALUE_TRIMMED is no mark, nor is a longer string.
    const std::string c = "20240101120000000003", d = "20240101120000000004", e = "20240101120000000005";
    {
      brine::store::Batch batch = s->BeginBatch();
      REQUIRE(s->Returner(Ret(c, Value::List({1, Value::Map({{"x", "VALUE_TRIMMED"}})}))).kind ==
              ReturnOutcome::Kind::kStored);
      REQUIRE(s->Returner(Ret(d, Value::Map({{"VALUE_TRIMMED", 1}}))).kind == ReturnOutcome::Kind::kStored);
      REQUIRE(s->Returner(Ret(e, "VALUE_TRIMMED!")).kind == ReturnOutcome::Kind::kStored);
      batch.Commit();
    }
    CHECK(Row(database, c) == yes + "|cut\n");
    CHECK(Row(database, d) == no + "|cut\n");
    CHECK(Row(database, e) == no + "|cut\n");
    CHECK(Q(database, "SELECT count(*) FROM salt_returns") == "5\n");
  }
}

TEST_CASE("attach: a trimmed bus return fills the job cache marked trimmed, and the whole copy replaces it in place",
          "[attach][e2e]") {
  brine::test::MasterProcess master("brine.bus: attach\n");
  const std::filesystem::path salt_dir = master.dir() / "salt";
  std::filesystem::create_directories(master.conf_dir() / "master.d");
  std::ofstream(master.conf_dir() / "master.d" / "salt.conf") << "sock_dir: " << salt_dir.string() << "\n";
  brine::test::ModernBus bus(salt_dir, {});
  master.Start();
  REQUIRE(bus.WaitForReaders(1));
  const brine::Micros t = mh::Now();
  const std::string jid = mh::JidAt(t);
  const std::string stamp = mh::StampAt(t);
  const std::string db = master.database().string();
  // No plug-in as job cache: the bus copy is the job cache's, trimmed or not.
  bus.Fire("salt/job/" + jid + "/ret/web1", mh::ReturnLoad(jid, "web1", "cmd.run", Value("VALUE_TRIMMED"), stamp));
  REQUIRE(WaitUntil([&] { return Row(db, jid) == "1|cut\n"; }));
  // The whole copy (a replay of the return with a smaller payload, or the
  // plug-in's returner) replaces it: still one row, no longer marked.
  bus.Fire("salt/job/" + jid + "/ret/web1", mh::ReturnLoad(jid, "web1", "cmd.run", Value("up 3 days"), stamp));
  const bool replaced = WaitUntil([&] { return Row(db, jid) == "0|whole\n"; });
  INFO("salt_returns: " << Row(db, jid));
  CHECK(replaced);
  REQUIRE(master.Stop() == 0);
}

TEST_CASE("attach: the migration marks the trimmed returns a store held before it, by value, on both backends",
          "[attach][store]") {
  brine::test::TempDir dir;
  for (const std::string backend : {"sqlite", "postgresql"}) {
    INFO(backend);
    const bool sqlite = backend == "sqlite";
    const std::string database = sqlite ? (dir / "old.sqlite").string() : PostgresServer::Shared().CreateDatabase();
    const std::string yes = sqlite ? "1" : "t";
    const std::string no = sqlite ? "0" : "f";
    const std::string a = "20240101120000000001", b = "20240101120000000002", c = "20240101120000000003";
    {
      auto s = brine::store::OpenStore(database, {.master_id = "m"});
      REQUIRE(s->Returner(Ret(a, Value::List({1, Value::Map({{"x", "VALUE_TRIMMED"}})}))).kind ==
              ReturnOutcome::Kind::kStored);
      REQUIRE(s->Returner(Ret(b, Value::Map({{"VALUE_TRIMMED", 1}}))).kind == ReturnOutcome::Kind::kStored);
      REQUIRE(s->Returner(Ret(c, "whole")).kind == ReturnOutcome::Kind::kStored);
    }
    // Back to the schema before the migration (SQLite 0015, PostgreSQL
    // 0010): no column, the old view; and without the one after it
    // (0016_minion_records / postgres 0011), which the reopening applies again.
    if (sqlite) {
      SQLite::Database db(database, SQLite::OPEN_READWRITE);
      db.exec("DROP VIEW salt_returns; ALTER TABLE ret DROP COLUMN trimmed;"
              " CREATE VIEW salt_returns AS SELECT 1 AS one;"
              " DROP TABLE minion_hour; DROP INDEX event_auth_minion; PRAGMA user_version = 14");
    } else {
      (void)PostgresServer::Shared().Query(
          database,
          "DROP FUNCTION brine_minion_hour_pairs() CASCADE; DROP FUNCTION brine_minion_hour_return() CASCADE;"
          " DROP FUNCTION brine_minion_hour_changed() CASCADE; DROP FUNCTION brine_ret_failed(bigint, boolean);"
          " DROP TABLE minion_hour; DROP INDEX event_auth_minion;"
          " ALTER TABLE ret DROP COLUMN trimmed CASCADE; UPDATE brine_schema SET version = 9");
    }
    auto s = brine::store::OpenStore(database, {.master_id = "m"});
    CHECK(Row(database, a) == yes + "|cut\n");
    CHECK(Row(database, b) == no + "|cut\n");
    CHECK(Row(database, c) == no + "|whole\n");
  }
}
