// The forensic questions of bench/forensic_questions.sql use indexes: on a
// small store shaped like a fleet (many minions per job, a few per cent
// failed), with the statistics brine-master keeps, no plan scans ret or event
// beyond the lines a question declares (docs/schema.md says why). Plans are
// deterministic for given data and statistics; times are not, so the figures
// are bench/forensic_bench's.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

namespace {

using brine::Micros;
using brine::ParseJson;
using brine::Value;

struct Question {
  std::string name;
  std::string sql;
  std::vector<std::string> known_scans;
};

std::vector<Question> ReadQuestions() {
  std::ifstream in(std::string(BRINE_SOURCE_DIR) + "/bench/forensic_questions.sql");
  std::vector<Question> out;
  std::string line;
  Question* q = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("-- q: ", 0) == 0) {
      out.push_back({.name = line.substr(6), .sql = "", .known_scans = {}});
      q = &out.back();
    } else if (q != nullptr && line.rfind("-- scans: ", 0) == 0) {
      q->known_scans.push_back(line.substr(10));
    } else if (q != nullptr && line.empty()) {
      q = nullptr;
    } else if (q != nullptr) {
      q->sql += line + "\n";
    }
  }
  return out;
}

constexpr Micros kStart = Micros(std::chrono::seconds(1795000000));  // 2026-11-18 11:06:40 UTC

// 60 jobs a minute apart over 40 minions: test.ping, cmd.run and state.apply
// (whose failed returns carry a highstate dict with a failed state), every
// return also archived as its event, and auth and minion-start events.
void BuildFleet(brine::store::Store& s, std::string& state_jid);

// The fleet in a new store at `path`, with fresh statistics, as brine-master
// keeps them. Returns the jid of the job with a highstate dict.
std::string BuildPlannedFleet(const std::filesystem::path& path) {
  std::string state_jid;
  auto s = brine::store::OpenStore(path);
  BuildFleet(*s, state_jid);
  s->Maintenance()->RefreshStatistics();
  return state_jid;
}

void BuildFleet(brine::store::Store& s, std::string& state_jid) {
  for (int j = 0; j < 60; ++j) {
    const Micros start = kStart + std::chrono::minutes(j);
    const std::string jid = brine::FormatJid(start);
    const char* fun = j % 3 == 0 ? "state.apply" : j % 3 == 1 ? "test.ping" : "cmd.run";
    std::vector<std::string> minions;
    for (int m = 0; m < 40; ++m) minions.push_back("minion-" + std::to_string(m));
    Value load = ParseJson(R"({"tgt":"*","tgt_type":"glob","arg":[]})");
    load.Set("fun", fun);
    load.Set("user", j % 2 == 0 ? "alice" : "sudo_bob");
    auto batch = s.BeginBatch();
    s.SaveLoad(jid, load, minions);
    std::vector<brine::store::Event> events;
    for (int m = 0; m < 38; ++m) {  // two minions never return
      const bool failed = (j + m) % 17 == 0;
      Value ret = ParseJson(R"({"cmd":"_return"})");
      ret.Set("id", minions[m]);
      ret.Set("jid", jid);
      ret.Set("fun", fun);
      if (std::string(fun) == "state.apply") {
        ret.Set("return", ParseJson(failed ? R"({"pkg_|-vim_|-vim_|-installed":{"__id__":"vim","name":"vim","result":false,"comment":"no such package"}})"
                                           : R"({"pkg_|-vim_|-vim_|-installed":{"__id__":"vim","name":"vim","result":true,"comment":"ok"}})"));
        ret.Set("retcode", failed ? 2 : 0);
      } else {
        ret.Set("return", "ok");
        ret.Set("retcode", failed ? 1 : 0);
      }
      ret.Set("success", !failed);
      const auto outcome = s.Returner(ret);
      REQUIRE(outcome.kind == brine::store::ReturnOutcome::Kind::kStored);
      events.push_back({.tag = "salt/job/" + jid + "/ret/" + minions[m], .data = ret,
                        .received = start + std::chrono::seconds(1 + m), .same_as_return = outcome.id});
      if (failed && std::string(fun) == "state.apply") state_jid = jid;
    }
    events.push_back({.tag = "salt/auth", .data = ParseJson(R"({"id":"minion-1","act":"accept"})"),
                      .received = start + std::chrono::seconds(50)});
    events.push_back({.tag = "salt/minion/minion-1/start", .data = ParseJson(R"({"id":"minion-1"})"),
                      .received = start + std::chrono::seconds(51)});
    s.EventReturn(events);
    batch.Commit();
  }
}

// True when `sql` names the parameter `name` (":jid" is not in ":jid_since").
bool HasParam(const std::string& sql, const std::string& name) {
  for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name, at + 1)) {
    const auto end = at + name.size();
    if (end == sql.size() || !(std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_')) return true;
  }
  return false;
}

std::string Plan(SQLite::Database& db, const std::string& sql, const std::vector<std::pair<std::string, std::string>>& params) {
  SQLite::Statement q(db, "EXPLAIN QUERY PLAN " + sql);
  for (const auto& [name, value] : params) {
    if (HasParam(sql, name)) q.bind(name, value);
  }
  std::string plan;
  while (q.executeStep()) plan += q.getColumn(3).getString() + "\n";
  return plan;
}

}  // namespace

TEST_CASE("query plans: every forensic question searches indexes, never scans ret or event", "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  const std::string state_jid = BuildPlannedFleet(path);
  REQUIRE_FALSE(state_jid.empty());
  const std::vector<std::pair<std::string, std::string>> params = {
      {":since_us", std::to_string(brine::ToUnixMicros(kStart + std::chrono::minutes(50)))},
      {":since", "2026-11-18 11:56:40"},
      {":recv_since", "2026-11-18 11:56:40"},
      {":jid_since", brine::FormatJid(kStart + std::chrono::minutes(50))},
      {":jid", brine::FormatJid(kStart + std::chrono::minutes(31))},
      {":state_jid", state_jid},
      {":minion", "minion-7"},
      {":user", "alice"},
  };
  const auto questions = ReadQuestions();
  REQUIRE(questions.size() >= 15);

  // The shell's own library, no brine functions registered: what an operator has.
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  // A table scan of ret or event (by any alias), not one of the failed-only index.
  const std::regex scan(R"(^SCAN (r|e|ret|event)\b)");
  for (const Question& q : questions) {
    INFO(q.name);
    INFO(q.sql);
    const std::string plan = Plan(db, q.sql, params);
    INFO(plan);
    CHECK(plan.find("SEARCH") != std::string::npos);
    std::istringstream lines(plan);
    std::string line;
    while (std::getline(lines, line)) {
      if (!std::regex_search(line, scan)) continue;
      if (line.find("INDEX ret_failed") != std::string::npos) continue;  // failures only, a few per cent
      const bool known = std::find(q.known_scans.begin(), q.known_scans.end(), line) != q.known_scans.end();
      CHECK(known);
    }
    // And it runs as written, finding rows.
    SQLite::Statement run(db, q.sql);
    for (const auto& [name, value] : params) {
      if (HasParam(q.sql, name)) run.bind(name, value);
    }
    CHECK(run.executeStep());
  }
}

// 0006: SQLite flattens salt_events into the query only when its two branches'
// columns have the same affinities; as a co-routine it built every row's data
// (the return's JSON) even for `SELECT id, tag`. And a job's failures are read
// from the failed-only index keyed by job, not from the returns' rows.
TEST_CASE("query plans: salt_events is flattened and a job's failures come from ret_failed_job alone", "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  const std::string state_jid = BuildPlannedFleet(path);
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  const std::string events = Plan(db, "SELECT id, tag FROM salt_events WHERE id >= 0", {});
  INFO(events);
  CHECK(events.find("CO-ROUTINE") == std::string::npos);
  const std::string failures = Plan(
      db, "SELECT jid, id, retcode FROM salt_returns WHERE jid = :jid AND (retcode <> 0 OR success = 0)",
      {{":jid", state_jid}});
  INFO(failures);
  CHECK(failures.find("COVERING INDEX ret_failed_job (job_id=?)") != std::string::npos);
}

// 0007: without STAT4 the planner guessed a quarter of the jobs for a
// one-sided `jid >= X` and walked every failed return of the store instead;
// the views' own upper bound makes it a range with two ends: the jobs in the
// window first, then each one's failures.
TEST_CASE("query plans: a one-sided jid window reads the jobs in it first, through salt_returns and failed_returns",
          "[store][plan]") {
  // Shaped like the 1M-job store where the old plan showed: failures for
  // every few jobs (there 263,840 for 1,087,408 jobs, two a failed job), so
  // walking them all looked as cheap as the quarter of the jobs that the
  // planner guesses `jid >= X` keeps. Here 4,000 jobs of 4 returns, and every
  // 8th job has 2 failed.
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  int failures = 0;
  {
    auto s = brine::store::OpenStore(path);
    auto batch = s->BeginBatch();
    for (int j = 0; j < 4000; ++j) {
      const std::string jid = brine::FormatJid(kStart + std::chrono::seconds(j));
      std::vector<std::string> minions;
      for (int k = 0; k < 4; ++k) minions.push_back("minion-" + std::to_string((j * 4 + k) % 300));
      s->SaveLoad(jid, ParseJson(R"({"fun":"cmd.run","tgt":"*","tgt_type":"glob","arg":[],"user":"root"})"), minions);
      for (int k = 0; k < 4; ++k) {
        const bool failed = j % 8 == 0 && k < 2;
        failures += failed ? 1 : 0;
        Value ret = ParseJson(R"({"cmd":"_return","fun":"cmd.run","return":"x"})");
        ret.Set("id", minions[k]);
        ret.Set("jid", jid);
        ret.Set("retcode", failed ? 1 : 0);
        ret.Set("success", !failed);
        REQUIRE(s->Returner(ret).kind == brine::store::ReturnOutcome::Kind::kStored);
      }
    }
    batch.Commit();
    s->Maintenance()->RefreshStatistics();
  }
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  const std::vector<std::pair<std::string, std::string>> since = {
      {":jid_since", brine::FormatJid(kStart + std::chrono::seconds(3900))}};
  for (const std::string view : {"salt_returns", "failed_returns"}) {
    const std::string sql = "SELECT jid, retcode FROM " + view + " WHERE jid >= :jid_since AND (retcode <> 0 OR success = 0)";
    const std::string plan = Plan(db, sql, since);
    INFO(view << ":\n" << plan);
    const auto first = plan.substr(0, plan.find('\n'));
    CHECK(std::regex_search(first, std::regex(R"(^SEARCH j USING (COVERING )?INDEX sqlite_autoindex_job_1 \(jid>\? AND jid<\?\))")));
    CHECK(plan.find("ret_failed_job (job_id=?") != std::string::npos);
    SQLite::Statement run(db, "SELECT count(*) FROM (" + sql + ")");
    run.bind(":jid_since", since.front().second);
    REQUIRE(run.executeStep());
    CHECK(run.getColumn(0).getInt() == 24);  // two each of jobs 3,904, 3,912, ..., 3,992
  }
  // The bound keeps every job: the views count what the tables hold.
  SQLite::Statement all(db,
                        "SELECT (SELECT count(*) FROM salt_returns), (SELECT count(*) FROM ret),"
                        " (SELECT count(*) FROM failed_returns)");
  REQUIRE(all.executeStep());
  CHECK(all.getColumn(0).getInt() == 16000);
  CHECK(all.getColumn(1).getInt() == 16000);
  CHECK(all.getColumn(2).getInt() == failures);
}

// 0008: per-minion reliability reads index entries only: a pair's return
// from ret_job_minion (one hour's pairs side by side) and its failure from
// ret_failed_job, never ret_minion (a leaf page per minion) nor the return's
// row.
TEST_CASE("query plans: minion_job_outcome answers from ret_job_minion and ret_failed_job alone", "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  REQUIRE_FALSE(BuildPlannedFleet(path).empty());
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  const std::string plan = Plan(db,
                                "SELECT minion, count(*), sum(returned), sum(failed) FROM minion_job_outcome"
                                " WHERE start_time >= '2026-11-18 11:56:40' GROUP BY minion",
                                {});
  INFO(plan);
  CHECK(plan.find("SEARCH r USING COVERING INDEX ret_job_minion (job_id=? AND minion_id=?)") != std::string::npos);
  CHECK(plan.find("SEARCH f USING COVERING INDEX ret_failed_job (job_id=? AND minion_id=?)") != std::string::npos);
  CHECK(plan.find("ret_minion") == std::string::npos);
  // The same answers as the pairs' returns give: 10 jobs x 40 minions in the
  // window, 38 of each job's minions returned, (j + m) % 17 == 0 failed.
  SQLite::Statement q(db,
                      "SELECT count(*), sum(returned), sum(failed) FROM minion_job_outcome"
                      " WHERE start_time >= '2026-11-18 11:56:40'");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getInt() == 400);
  CHECK(q.getColumn(1).getInt() == 380);
  int failed = 0;
  for (int j = 50; j < 60; ++j) {
    for (int m = 0; m < 38; ++m) failed += (j + m) % 17 == 0 ? 1 : 0;
  }
  CHECK(q.getColumn(2).getInt() == failed);
}

// 0012: salt_events' return half rebuilds its tag from the jid and the
// minion, so no index can answer a tag predicate on it (an index covering
// every return's tag would take the store over its disk budget); its two
// halves have views of their own whose predicates are index searches: a tag or
// tag prefix on tagged_events, a jid and minion on return_events.
TEST_CASE("query plans: tagged_events and return_events answer tags, jids and minions without a scan of ret or event",
          "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  REQUIRE_FALSE(BuildPlannedFleet(path).empty());
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  const std::string jid = brine::FormatJid(kStart + std::chrono::minutes(31));
  const std::regex scan(R"((^|\n)SCAN (r|e|ret|event)\b)");
  struct Case {
    std::string sql;
    std::string plan_line;  // a line the plan must have
    std::string first_row;  // "id|tag" cut to the tag
    int rows;
  };
  const std::vector<Case> cases = {
      {"SELECT tag FROM tagged_events WHERE tag = 'salt/auth'", "USING COVERING INDEX event_tag (tag=?)", "salt/auth", 60},
      {"SELECT tag FROM tagged_events WHERE tag GLOB 'salt/auth*'", "USING COVERING INDEX event_tag (tag>? AND tag<?)",
       "salt/auth", 60},
      {"SELECT tag FROM tagged_events WHERE tag GLOB 'salt/minion/?*/start'", "USING COVERING INDEX event_tag (tag>? AND tag<?)",
       "salt/minion/minion-1/start", 60},
      {"SELECT tag FROM return_events WHERE jid = '" + jid + "' AND minion = 'minion-7'",
       "SEARCH e USING INDEX event_job (job_id=?)", "salt/job/" + jid + "/ret/minion-7", 1},
      {"SELECT tag FROM return_events WHERE jid = '" + jid + "' ORDER BY minion", "SEARCH e USING INDEX event_job (job_id=?)",
       "salt/job/" + jid + "/ret/minion-0", 38},
      {"SELECT tag FROM return_events WHERE minion = 'minion-7' ORDER BY jid", "SEARCH e USING INDEX event_job (job_id=?)",
       "salt/job/" + brine::FormatJid(kStart) + "/ret/minion-7", 60},
  };
  for (const Case& c : cases) {
    const std::string plan = Plan(db, c.sql, {});
    INFO(c.sql << "\n" << plan);
    CHECK(plan.find(c.plan_line) != std::string::npos);
    CHECK_FALSE(std::regex_search(plan, scan));
    SQLite::Statement q(db, c.sql);
    int rows = 0;
    std::string first;
    while (q.executeStep()) {
      if (rows++ == 0) first = q.getColumn(0).getString();
    }
    CHECK(rows == c.rows);
    CHECK(first == c.first_row);
  }
  // The two halves are salt_events, row for row.
  SQLite::Statement same(db,
                         "SELECT (SELECT count(*) FROM salt_events),"
                         " (SELECT count(*) FROM (SELECT id, tag, data, alter_time, master_id FROM tagged_events UNION"
                         "  SELECT id, tag, data, alter_time, master_id FROM return_events"
                         "  INTERSECT SELECT id, tag, data, alter_time, master_id FROM salt_events))");
  REQUIRE(same.executeStep());
  CHECK(same.getColumn(0).getInt() == 60 * (38 + 2));
  CHECK(same.getColumn(1).getInt() == 60 * (38 + 2));
}

TEST_CASE("query plans: on PostgreSQL tagged_events and return_events reach their rows through indexes",
          "[store][plan][postgres]") {
  // A tiny table is cheaper to scan, so the planner is told not to, to see
  // that an index path exists (as manage_test.cpp's presence plans).
  using brine::test::PostgresServer;
  if (auto why = PostgresServer::Unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  const std::string database = PostgresServer::Shared().CreateDatabase();
  std::string state_jid;
  {
    auto s = brine::store::OpenStore(database);
    BuildFleet(*s, state_jid);
  }
  const std::string jid = brine::FormatJid(kStart + std::chrono::minutes(31));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SELECT tag FROM tagged_events WHERE tag = 'salt/auth'", "salt/auth\n"},
      {"SELECT tag FROM tagged_events WHERE tag LIKE 'salt/minion/%'",
       "salt/minion/minion-1/start\n"},
      {"SELECT tag FROM return_events WHERE jid = '" + jid + "' AND minion = 'minion-7'",
       "salt/job/" + jid + "/ret/minion-7\n"},
  };
  for (const auto& [sql, first] : cases) {
    const std::string plan = PostgresServer::Shared().Query(database, "SET enable_seqscan = off; EXPLAIN " + sql);
    INFO(sql << "\n" << plan);
    CHECK(plan.find("Seq Scan on ret") == std::string::npos);
    CHECK(plan.find("Seq Scan on event") == std::string::npos);
    CHECK(plan.find("Index") != std::string::npos);
    const std::string rows = PostgresServer::Shared().Query(database, sql + " LIMIT 1");
    CHECK(rows.find(first) != std::string::npos);
  }
  const std::string count = PostgresServer::Shared().Query(
      database, "SELECT (SELECT count(*) FROM tagged_events) + (SELECT count(*) FROM return_events), count(*) FROM salt_events");
  CHECK(count.find(std::to_string(60 * 40) + "|" + std::to_string(60 * 40)) != std::string::npos);
}

TEST_CASE("query plans: refreshing statistics records the new indexes in sqlite_stat1", "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  const std::string state_jid = BuildPlannedFleet(path);
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  SQLite::Statement stats(db, "SELECT count(*) FROM sqlite_stat1 WHERE idx IN ('ret_job_minion', 'job_start', 'ret_failed')");
  REQUIRE(stats.executeStep());
  CHECK(stats.getColumn(0).getInt() == 3);
}

TEST_CASE("query plans: a store made before 0004 migrates and shows the new columns for its old rows", "[store][plan]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  {
    // Migrations 0001-0003 as they landed, then rows in that layout.
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    for (const char* name : {"0001_initial.sql", "0002_queue.sql", "0003_salt_api.sql"}) {
      std::ifstream in(std::string(BRINE_SOURCE_DIR) + "/migrations/" + name);
      std::stringstream sql;
      sql << in.rdbuf();
      db.exec(sql.str());
    }
    db.exec("PRAGMA user_version = 3");
    db.exec(R"(INSERT INTO master (name) VALUES ('m');
               INSERT INTO minion (name) VALUES ('web1');
               INSERT INTO job (jid, fun, load, load_kind, seen_us) VALUES ('20261118110640123456', 'cmd.run',
                 '{"fun":"cmd.run","user":"alice","tgt":["web1","web2"],"tgt_type":"list"}', 2, 1795000000123456);
               INSERT INTO job_minion VALUES (1, 1);
               INSERT INTO ret (job_id, minion_id, recv_us, success, retcode, full_ret)
                 VALUES (1, 1, 1795000002623456, 0, 1, '{"fun":"cmd.run","return":"boom","retcode":1}');
               INSERT INTO event (id, master_id, job_id, tag, data, ret_id) VALUES (1795000002623456, 1, 1, NULL, NULL, 1);)");
  }
  { auto s = brine::store::OpenStore(path); REQUIRE(s->SchemaVersion() == brine::store::LatestSchemaVersion()); }
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  const auto one = [&](const std::string& sql) {
    SQLite::Statement q(db, sql);
    REQUIRE(q.executeStep());
    std::string row;
    for (int i = 0; i < q.getColumnCount(); ++i) row += q.getColumn(i).getString() + "|";
    return row;
  };
  CHECK(one("SELECT start_time, user, tgt, tgt_type FROM jids") ==
        R"(2026-11-18 11:06:40.123|alice|["web1","web2"]|list|)");
  CHECK(one("SELECT recv_time, alter_time, seconds_after_start FROM salt_returns") ==
        "2026-11-18 11:06:42.623|2026-11-18 11:06:42.623|2.5|");
  CHECK(one("SELECT minion, retcode FROM failed_returns WHERE recv_time >= '2026-11-18 11:00'") == "web1|1|");
  CHECK(one("SELECT tag FROM salt_events") == "salt/job/20261118110640123456/ret/web1|");
  CHECK(one("SELECT minion, targeted, returned, missing, failed FROM minion_reliability") == "web1|1|1|0|1|");
  // The migration refreshed the planner's statistics of the store it found.
  CHECK(one("SELECT count(*) > 0 FROM sqlite_stat1 WHERE idx = 'job_start'") == "1|");
}
