// The minions' hourly rollups (minion_hour, migration 0016 / postgres 0011):
// whatever writes or deletes the rows (returns before or after their job, a
// stub's minions replaced, a trimmed return replaced by the whole one with
// another retcode, a batch's array insert, several masters, retention and the
// size cap), the store's triggers keep each (minion, hour) sum equal to a
// recount of the rows, on both backends; and retention forgets the hours
// that hold no job.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/minion_report.h"
#include "brine/store/store.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

using brine::Value;
using brine::test::PostgresServer;

namespace {

std::string Q(const std::string& database, const std::string& sql) {
  return database.starts_with("postgres") ? PostgresServer::Shared().Query(database, sql)
                                          : brine::test::Sql(database, sql);
}

// The rollups, summed over PostgreSQL's writers: "minion|hour|targeted|returned|failed" lines.
std::string Rollups(const std::string& database) {
  return Q(database,
           "SELECT m.name, h.hour, CAST(sum(h.targeted) AS bigint), CAST(sum(h.returned) AS bigint),"
           " CAST(sum(h.failed) AS bigint) FROM minion_hour AS h JOIN minion AS m ON m.id = h.minion_id"
           " GROUP BY m.name, h.hour"
           " HAVING sum(h.targeted) <> 0 OR sum(h.returned) <> 0 OR sum(h.failed) <> 0 ORDER BY 1, 2");
}

// The same sums counted from the rows, as the minion report did before the rollups.
std::string Recount(const std::string& database) {
  return Q(database,
           "SELECT m.name, substr(j.jid, 1, 10), CAST(count(*) AS bigint), CAST(count(r.id) AS bigint),"
           " CAST(sum(CASE WHEN r.retcode <> 0 OR NOT r.success THEN 1 ELSE 0 END) AS bigint)"
           " FROM job_minion AS jm JOIN job AS j ON j.id = jm.job_id JOIN minion AS m ON m.id = jm.minion_id"
           " LEFT JOIN ret AS r ON r.job_id = jm.job_id AND r.minion_id = jm.minion_id"
           " GROUP BY m.name, substr(j.jid, 1, 10) ORDER BY 1, 2");
}

Value Ret(const std::string& jid, const std::string& minion, Value ret, int retcode) {
  return Value::Map({{"jid", jid}, {"id", minion}, {"fun", "cmd.run"}, {"return", std::move(ret)},
                     {"retcode", retcode}, {"success", retcode == 0}});
}

Value Load(const std::string& tgt) { return Value::Map({{"fun", "cmd.run"}, {"arg", Value::List({"x"})}, {"tgt", tgt}}); }

std::vector<std::string> Databases(brine::test::TempDir& dir) {
  std::vector<std::string> out{(dir / "hours.sqlite").string()};
  if (auto why = PostgresServer::Unavailable()) {
    WARN("PostgreSQL half SKIPPED: " << *why);
  } else {
    out.push_back(PostgresServer::Shared().CreateDatabase());
  }
  return out;
}

}  // namespace

TEST_CASE("minion hours: the rollups equal a recount of the rows after every kind of write and delete, on both backends",
          "[store][minion-hours]") {
  brine::test::TempDir dir;
  for (const std::string& database : Databases(dir)) {
    INFO(database);
    auto s = brine::store::OpenStore(database, {.master_id = "m1"});
    auto check = [&](const char* step) {
      INFO(step);
      const std::string rollups = Rollups(database);
      CHECK(rollups == Recount(database));
      return rollups;
    };
    // 12:00: a job of three minions; a returns, b fails, d was not expected.
    const std::string j1 = "20240101120000000001";
    s->SaveLoad(j1, Load("*"), std::vector<std::string>{"a", "b", "c"});
    REQUIRE(s->Returner(Ret(j1, "a", "ok", 0)).kind == brine::store::ReturnOutcome::Kind::kStored);
    (void)s->Returner(Ret(j1, "b", "no", 1));
    (void)s->Returner(Ret(j1, "d", "ok", 0));
    CHECK(check("publish, returns, a failure, an unexpected minion") ==
          Q(database, "SELECT 'a', '2024010112', 1, 1, 0 UNION ALL SELECT 'b', '2024010112', 1, 1, 1"
                      " UNION ALL SELECT 'c', '2024010112', 1, 0, 0"));
    // 12:30: a return before its job's publication (a stub), then the publication.
    const std::string j2 = "20240101123000000001";
    (void)s->Returner(Ret(j2, "a", "early", 3));
    check("a stub's minions");
    s->SaveLoad(j2, Load("a,b"), std::vector<std::string>{"a", "b"});
    check("the publication replaces the stub's minions");
    // 13:00: a trimmed copy that succeeded, replaced by the whole one that failed.
    const std::string j3 = "20240101130000000001";
    s->SaveLoad(j3, Load("c"), std::vector<std::string>{"c"});
    (void)s->Returner(Ret(j3, "c", Value::Map({{"big", "VALUE_TRIMMED"}}), 0));
    check("a trimmed copy");
    REQUIRE(s->Returner(Ret(j3, "c", Value::Map({{"big", std::string(100, 'x')}}), 2)).kind ==
            brine::store::ReturnOutcome::Kind::kCompleted);
    const std::string after_whole = check("the whole copy replaces it, failed");
    CHECK_THAT(after_whole, Catch::Contains("c|2024010113|1|1|1"));
    // 13:10: 150 minions in one batch (more than one multi-row upsert) (PostgreSQL's array insert), every third failing,
    // their returns filed before the expected minions.
    const std::string j4 = "20240101131000000001";
    {
      brine::store::Batch batch = s->BeginBatch();
      std::vector<std::string> minions;
      for (int i = 0; i < 150; ++i) {
        const std::string id = "n" + std::to_string(100 + i);
        minions.push_back(id);
        (void)s->Returner(Ret(j4, id, i, i % 3 == 0 ? 1 : 0));
      }
      s->SaveLoad(j4, Load("n*"), minions);
      batch.Commit();
    }
    check("a batch");
    // A batch rolled back leaves no count behind; and within one batch a
    // trimmed copy replaced by the whole one before the commit counts once.
    {
      brine::store::Batch batch = s->BeginBatch();
      s->SaveLoad("20240101131100000001", Load("gone"), std::vector<std::string>{"gone"});
      (void)s->Returner(Ret("20240101131100000001", "gone", "x", 1));
    }
    check("a batch rolled back");
    {
      brine::store::Batch batch = s->BeginBatch();
      const std::string j = "20240101131200000001";
      s->SaveLoad(j, Load("t"), std::vector<std::string>{"t"});
      (void)s->Returner(Ret(j, "t", Value::Map({{"big", "VALUE_TRIMMED"}}), 0));
      (void)s->Returner(Ret(j, "t", Value::Map({{"big", std::string(100, 'y')}}), 4));
      batch.Commit();
    }
    CHECK_THAT(check("a replacement inside one batch"), Catch::Contains("t|2024010113|1|1|1"));
    // A second master files returns of the same job (PostgreSQL: its own writer rows).
    {
      auto s2 = brine::store::OpenStore(database, {.master_id = "m2"});
      const std::string j5 = "20240101131500000001";
      s2->SaveLoad(j5, Load("a"), std::vector<std::string>{"a", "b"});
      (void)s2->Returner(Ret(j5, "a", "two", 0));
      (void)s->Returner(Ret(j5, "b", "one", 5));
      check("two masters");
      // The first master names one more minion of the second's job, which it
      // did not create: its pair is counted by reading the rows.
      (void)s->Returner(Ret(j5, "e", "early", 0));
      s->SaveLoad(j5, Load("a"), std::vector<std::string>{"a", "b", "e"});
      check("a pair of another master's job");
    }
    // Retention: the jobs of 12:xx go; the rollups of that hour with them.
    const auto cut = brine::FromUnixMicros(1704114000000000);  // 13:00
    const brine::store::CleanResult cleaned = s->CleanOldJobs(cut, std::nullopt, 100000);
    CHECK(cleaned.jobs == 2);
    check("retention");
    s->ForgetHoursBefore(cut);
    CHECK(Q(database, "SELECT count(*) FROM minion_hour WHERE hour < '2024010113'") == "0\n");
    CHECK(Q(database, "SELECT count(*) FROM minion_hour WHERE hour = '2024010113'") != "0\n");
    // The size cap deletes the rest, oldest first.
    (void)s->PruneOldest(1 << 30, 100000);
    CHECK(check("the size cap").empty());
  }
}

TEST_CASE("minion hours: the minion report's counts come from the rollups, paged by name, on both backends",
          "[store][minion-hours]") {
  brine::test::TempDir dir;
  for (const std::string& database : Databases(dir)) {
    INFO(database);
    {
      auto s = brine::store::OpenStore(database, {.master_id = "m1"});
      s->SaveLoad("20240101120000000001", Load("*"), std::vector<std::string>{"a", "b", "c"});
      (void)s->Returner(Ret("20240101120000000001", "b", "no", 1));
      s->SaveLoad("20240101140000000001", Load("*"), std::vector<std::string>{"a", "c"});
      (void)s->Returner(Ret("20240101140000000001", "a", "ok", 0));
    }
    brine::store::MinionReportOptions o{.since = brine::FromUnixMicros(1704110400000000),  // 12:00
                                        .limit = 2};
    const brine::store::MinionRecords first = brine::store::ReadMinionRecords(database, o);
    REQUIRE(first.minions.size() == 2);
    CHECK(first.minions[0].minion == "a");
    CHECK(first.minions[0].targeted == 2);
    CHECK(first.minions[0].returned == 1);
    CHECK(first.minions[0].missing == 1);
    CHECK(first.minions[1].minion == "b");
    CHECK(first.minions[1].failed == 1);
    o.after = "b";
    const brine::store::MinionRecords rest = brine::store::ReadMinionRecords(database, o);
    REQUIRE(rest.minions.size() == 1);
    CHECK(rest.minions[0].minion == "c");
    CHECK(rest.minions[0].targeted == 2);
    // 13:30 to 14:10 counts the hours 13:00 and 14:00 whole: the second job only.
    o = {.since = brine::FromUnixMicros(1704115800000000), .until = brine::FromUnixMicros(1704118200000000)};
    const brine::store::MinionRecords window = brine::store::ReadMinionRecords(database, o);
    CHECK(window.counted_since == brine::FromUnixMicros(1704114000000000));
    REQUIRE(window.counted_until);
    CHECK(*window.counted_until == brine::FromUnixMicros(1704121200000000 - 1));
    REQUIRE(window.minions.size() == 2);
    CHECK(window.minions[0].minion == "a");
    CHECK(window.minions[0].targeted == 1);
    CHECK(window.minions[1].minion == "c");
    o.only = "c";
    const brine::store::MinionRecords only = brine::store::ReadMinionRecords(database, o);
    REQUIRE(only.minions.size() == 1);
    CHECK(only.minions[0].missing == 1);
  }
}
