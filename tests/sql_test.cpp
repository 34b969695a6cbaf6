// brine.sql (issue 27 item 2): the read-only, time-bounded SQL console of
// store/sql.h and its command line, on SQLite and on the tests' private
// PostgreSQL server (each case runs on both unless tagged [sqlite]; without
// Debian's postgresql the PostgreSQL half WARNs and is skipped).
#include <SQLiteCpp/Database.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <csignal>
#include <unistd.h>

#include "brine/args/arguments.h"
#include "brine/core/json.h"
#include "brine/output/rows.h"
#include "brine/runner/cli.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "support/golden.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::Value;
using brine::ValueMap;
using brine::store::SqlOptions;
using brine::store::SqlResult;
using brine::test::PostgresServer;
using brine::test::TempDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// A brine store with two queue rows, on one backend.
struct Db {
  std::string backend;   // "sqlite" or "postgresql"
  std::string database;  // what OpenStore takes
  [[nodiscard]] bool pg() const { return backend == "postgresql"; }
  // Reads with the test's own connection.
  [[nodiscard]] std::string Q(const std::string& sql) const {
    return pg() ? PostgresServer::Shared().Query(database, sql) : brine::test::Sql(database, sql);
  }
  // Writes with the test's own connection.
  void Exec(const std::string& sql) const {
    if (pg()) {
      (void)PostgresServer::Shared().Query(database, sql);
    } else {
      SQLite::Database(database, SQLite::OPEN_READWRITE).exec(sql);
    }
  }
};

Db MakeDb(const std::string& backend, const TempDir& dir) {
  Db db{backend, backend == "postgresql" ? PostgresServer::Shared().CreateDatabase() : (dir / "brine.sqlite").string()};
  { auto store = brine::store::OpenStore(db.database, {}); }
  db.Exec("INSERT INTO queue(name) VALUES ('first'), ('second')");
  return db;
}

// The backends a case runs on: SQLite, and PostgreSQL when it can start here.
std::vector<std::string> Backends() {
  std::vector<std::string> out = {"sqlite"};
  if (auto why = PostgresServer::Unavailable()) {
    WARN("PostgreSQL half skipped: " << *why);
  } else {
    out.emplace_back("postgresql");
  }
  return out;
}

// What one Run gave: its results, or the kind of failure and its message.
struct Outcome {
  std::vector<SqlResult> results;
  std::string failure;  // "", "sql", "timeout", "cancelled", "store"
  std::string message;
  int line = 0;
  int column = 0;
  double seconds = 0;
};

Outcome Run(const Db& db, const std::string& sql, const ValueMap& params = {}, SqlOptions options = {},
            const brine::store::SqlCancel* cancel = nullptr) {
  Outcome o;
  const auto started = Clock::now();
  try {
    brine::store::OpenSqlEngine(db.database)
        ->Run(sql, params, options, [&](SqlResult&& r) { o.results.push_back(std::move(r)); }, cancel);
  } catch (const brine::store::SqlError& e) {
    o.failure = "sql";
    o.message = e.what();
    o.line = e.line();
    o.column = e.column();
  } catch (const brine::store::SqlTimeoutError& e) {
    o.failure = "timeout";
    o.message = e.what();
  } catch (const brine::store::SqlCancelledError& e) {
    o.failure = "cancelled";
    o.message = e.what();
  } catch (const brine::store::StoreError& e) {
    o.failure = "store";
    o.message = e.what();
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return o;
}

SqlOptions Many() { return {.statements = SqlOptions::Statements::kMany}; }

std::string QueueNames(const Db& db) { return db.Q("SELECT name FROM queue ORDER BY id"); }

// A query that never ends on its own (a recursive CTE without a bound).
constexpr const char* kForever =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// A master config folder whose brine.database is `db`.
fs::path Conf(const TempDir& dir, const Db& db) {
  const fs::path conf = dir / ("conf-" + db.backend);
  fs::create_directories(conf);
  std::ofstream(conf / "master") << "cachedir: " << (dir / "cache").string() << "\nbrine.database: " << db.database
                                 << "\n";
  return conf;
}

CliResult Cli(const fs::path& conf, const std::vector<std::string>& args,
              brine::runner::Terminal terminal = brine::runner::Terminal::kNotTty) {
  std::vector<std::string> words = {"brine-run", "-c", conf.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  const int code = brine::runner::Main(static_cast<int>(words.size()), argv.data(), out, err, terminal);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("sql: INSERT, UPDATE, DELETE, CREATE and DROP are refused by the database and change nothing",
          "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const std::string before = QueueNames(db);
    for (const std::string sql :
         {"INSERT INTO queue(name) VALUES ('x')", "UPDATE queue SET name = 'x'", "DELETE FROM queue",
          "CREATE TABLE t(x INTEGER)", "DROP TABLE queue_item", "CREATE INDEX qi ON queue(name)",
          "WITH d AS (SELECT 1 AS x) INSERT INTO queue(name) SELECT 'cte' FROM d"}) {
      const Outcome o = Run(db, sql);
      INFO(sql << " -> " << o.failure << ": " << o.message);
      CHECK(o.failure == "sql");
      CHECK(o.message.find("read-only") != std::string::npos);
    }
    if (db.pg()) {
      for (const std::string copy : {"COPY queue TO STDOUT", "COPY queue FROM STDIN"}) {
        const Outcome o = Run(db, copy, {}, {.timeout = std::chrono::seconds(10)});
        INFO(copy << " -> " << o.failure << ": " << o.message);
        CHECK(o.failure == "sql");
        CHECK(o.seconds < 5);
      }
      // A data-modifying CTE inside a SELECT.
      const Outcome o = Run(db, "WITH d AS (DELETE FROM queue RETURNING id) SELECT count(*) FROM d");
      INFO(o.message);
      CHECK(o.failure == "sql");
    }
    CHECK(QueueNames(db) == before);
  }
}

TEST_CASE("sql: ATTACH, VACUUM INTO and state-changing PRAGMAs are refused; reading PRAGMAs answer",
          "[sql][sqlite]") {
  TempDir dir;
  const Db db = MakeDb("sqlite", dir);
  for (const std::string& sql : std::vector<std::string>{"ATTACH '" + (dir / "other.db").string() + "' AS other", "DETACH main", "VACUUM",
        "VACUUM INTO '" + (dir / "copy.db").string() + "'", "PRAGMA writable_schema = 1", "PRAGMA journal_mode = delete",
        "PRAGMA query_only = 0", "PRAGMA user_version = 7", "PRAGMA wal_checkpoint(TRUNCATE)", "REINDEX", "ANALYZE",
        "CREATE TEMP TABLE t(x)", "CREATE VIRTUAL TABLE v USING fts5(x)"}) {
    const Outcome o = Run(db, sql);
    INFO(sql << " -> " << o.failure << ": " << o.message);
    CHECK(o.failure == "sql");
  }
  CHECK(!fs::exists(dir / "copy.db"));
  CHECK(!fs::exists(dir / "other.db"));
  CHECK(db.Q("PRAGMA journal_mode") == "wal\n");
  for (const std::string sql : {"PRAGMA table_info(queue)", "PRAGMA index_list(queue_item)", "PRAGMA database_list",
                                "PRAGMA user_version", "PRAGMA page_count"}) {
    const Outcome o = Run(db, sql);
    INFO(sql << " -> " << o.failure << ": " << o.message);
    CHECK(o.failure.empty());
    REQUIRE(o.results.size() == 1);
    CHECK(!o.results[0].rows.empty());
  }
}

TEST_CASE("sql: BEGIN, SAVEPOINT and COMMIT in the text are harmless: a write after them is still refused",
          "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const Outcome begin = Run(db, "BEGIN; SELECT count(*) AS n FROM queue; COMMIT; INSERT INTO queue(name) VALUES ('x')",
                              {}, Many());
    INFO(begin.message);
    CHECK(begin.failure == "sql");
    CHECK(begin.line == 1);
    CHECK(begin.column == 49);
    REQUIRE(begin.results.size() >= 2);
    const Outcome savepoint = Run(db, "SAVEPOINT s; DELETE FROM queue; RELEASE s", {}, Many());
    CHECK(savepoint.failure == "sql");
    if (db.pg()) {
      // READ ONLY cannot be switched off: a query ran first in its transaction.
      const Outcome rw = Run(db, "SET TRANSACTION READ WRITE");
      INFO(rw.message);
      CHECK(rw.failure == "sql");
      const Outcome script = Run(db, "BEGIN; SET TRANSACTION READ WRITE; INSERT INTO queue(name) VALUES ('x')", {}, Many());
      CHECK(script.failure == "sql");
    }
    CHECK(QueueNames(db) == "first\nsecond\n");
  }
}

TEST_CASE("sql: a query that would run for ever stops within its budget, and says it ran out of time", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const Outcome o = Run(db, kForever, {}, {.timeout = std::chrono::milliseconds(500)});
    INFO(o.failure << ": " << o.message << " after " << o.seconds << " s");
    CHECK(o.failure == "timeout");
    CHECK(o.message.find("ran out of time") != std::string::npos);
    CHECK(o.seconds < 10);  // 0.5 s asked; generous for a loaded 2-core machine
  }
}

TEST_CASE("sql: SET statement_timeout in the text cannot lift the PostgreSQL budget", "[sql]") {
  if (auto why = PostgresServer::Unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir dir;
  const Db db = MakeDb("postgresql", dir);
  const Outcome set = Run(db, "SET statement_timeout = 0; SELECT pg_sleep(30)", {},
                          {.timeout = std::chrono::milliseconds(500), .statements = SqlOptions::Statements::kMany});
  INFO(set.failure << ": " << set.message << " after " << set.seconds << " s");
  CHECK(set.failure == "timeout");
  CHECK(set.seconds < 10);
  const Outcome in_one =
      Run(db, "SELECT set_config('statement_timeout', '0', false), pg_sleep(30)", {}, {.timeout = std::chrono::milliseconds(500)});
  INFO(in_one.failure << ": " << in_one.message << " after " << in_one.seconds << " s");
  CHECK(in_one.failure == "timeout");
  CHECK(in_one.seconds < 10);
}

TEST_CASE("sql: the row limit cuts the rows and says there were more", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const std::string five = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x FROM c";
    const Outcome cut = Run(db, five, {}, {.row_limit = 3});
    REQUIRE(cut.results.size() == 1);
    CHECK(cut.results[0].rows.size() == 3);
    CHECK(cut.results[0].truncated);
    const Outcome whole = Run(db, five, {}, {.row_limit = 5});
    REQUIRE(whole.results.size() == 1);
    CHECK(whole.results[0].rows.size() == 5);
    CHECK(!whole.results[0].truncated);
    // A huge answer is cut without reading it all (the budget would stop it).
    const Outcome huge = Run(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", {},
                             {.timeout = std::chrono::seconds(20), .row_limit = 10});
    INFO(huge.failure << ": " << huge.message);
    REQUIRE(huge.results.size() == 1);
    CHECK(huge.results[0].truncated);
    CHECK(huge.results[0].rows.size() == 10);
  }
}

TEST_CASE("sql: named parameters are bound, never spliced; a missing one is named", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const std::string evil = "it's \"x\"; DROP TABLE queue; --";
    const Outcome o = Run(db,
                          "SELECT :v AS v, ':v' AS literal, /* :v */ name FROM queue -- :nothing\n"
                          "WHERE name = :name",
                          {{"v", evil}, {"name", "second"}, {"unused", 1}});
    INFO(o.failure << ": " << o.message);
    REQUIRE(o.results.size() == 1);
    REQUIRE(o.results[0].rows.size() == 1);
    CHECK(o.results[0].rows[0][0] == Value(evil));
    CHECK(o.results[0].rows[0][1] == Value(":v"));
    CHECK(o.results[0].rows[0][2] == Value("second"));
    const Outcome missing = Run(db, "SELECT name FROM queue\nWHERE name = :who");
    CHECK(missing.failure == "sql");
    CHECK(missing.message.find(":who") != std::string::npos);
    const Outcome positional = Run(db, db.pg() ? "SELECT $1 AS a" : "SELECT ?1 AS a");
    CHECK(positional.failure == "sql");
    CHECK(positional.message.find("positional") != std::string::npos);
    if (db.pg()) {
      const Outcome cast = Run(db, "SELECT :n::int + 1 AS m, $$:x$$ AS d", {{"n", 41}});
      INFO(cast.message);
      REQUIRE(cast.results.size() == 1);
      CHECK(cast.results[0].rows[0][0] == Value(42));
      CHECK(cast.results[0].rows[0][1] == Value(":x"));
    }
    CHECK(QueueNames(db) == "first\nsecond\n");
  }
}

TEST_CASE("sql: an error carries the database's message and its line and column", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const Outcome column = Run(db, "SELECT id,\n  nocol FROM queue");
    INFO(column.message);
    CHECK(column.failure == "sql");
    CHECK(column.message.find("nocol") != std::string::npos);
    CHECK(column.line == 2);
    CHECK(column.column == 3);
    CHECK(column.message.starts_with("line 2, column 3: "));
    // In a script, the position counts in the whole file.
    const Outcome script = Run(db, "SELECT 1 AS a;\n\nSELECT id,\n     nocol FROM queue;\nSELECT 3", {}, Many());
    INFO(script.message);
    CHECK(script.results.size() == 1);
    CHECK(script.line == 4);
    CHECK(script.column == 6);
    // Semicolons inside quotes, comments and dollar quotes do not split a script.
    const std::string quoted = db.pg() ? "SELECT $$a;b$$ AS x" : "SELECT 'a;b' AS x";
    const Outcome split =
        Run(db, quoted + "; SELECT 'c;d' AS \"y;\" -- e;f\n; SELECT /* g; */ 1 AS z;\n-- only a comment;\n", {}, Many());
    INFO(split.message);
    REQUIRE(split.results.size() == 3);
    CHECK(split.results[0].rows[0][0] == Value("a;b"));
    CHECK(split.results[1].columns[0] == "y;");
    CHECK(split.results[2].rows[0][0] == Value(1));
    const Outcome two = Run(db, "SELECT 1; SELECT 2");
    CHECK(two.failure == "sql");
    CHECK(two.results.empty());
  }
}

TEST_CASE("sql: values come back typed, BLOBs as hex, repeated column names kept in order", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const std::string blob = db.pg() ? "'\\x00ff'::bytea" : "x'00ff'";
    const Outcome o = Run(db, "SELECT 1 AS jid, 'a' AS jid, NULL AS n, 1.5 AS f, " + blob + " AS b");
    INFO(o.message);
    REQUIRE(o.results.size() == 1);
    const SqlResult& r = o.results[0];
    CHECK(r.columns == std::vector<std::string>{"jid", "jid", "n", "f", "b"});
    REQUIRE(r.rows.size() == 1);
    CHECK(r.rows[0][0] == Value(1));
    CHECK(r.rows[0][1] == Value("a"));
    CHECK(r.rows[0][2].is_null());
    CHECK(r.rows[0][4] == Value("00ff"));
    CHECK(brine::ToJson(brine::output::RowObjects(r.columns, r.rows)).starts_with(R"([{"jid":1,"jid_2":"a","n":null,)"));
  }
}

TEST_CASE("sql: a query is cancelled from another thread", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    brine::store::SqlCancel cancel;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel.Cancel();
    });
    const Outcome o = Run(db, kForever, {}, {.timeout = std::chrono::seconds(120)}, &cancel);
    canceller.join();
    INFO(o.failure << ": " << o.message << " after " << o.seconds << " s");
    CHECK(o.failure == "cancelled");
    CHECK(o.seconds < 20);
  }
}

TEST_CASE("sql: several threads query one engine at once", "[sql]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const auto engine = brine::store::OpenSqlEngine(db.database);
    std::atomic<int> right{0};
    std::atomic<int> wrong{0};
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 10; ++i) {
          try {
            std::vector<SqlResult> got;
            engine->Run("SELECT CAST(:t AS integer) + CAST(:i AS integer) AS s, count(*) AS n FROM queue", {{"t", t}, {"i", i}}, {},
                        [&](SqlResult&& r) { got.push_back(std::move(r)); });
            const bool ok = got.size() == 1 && got[0].rows.size() == 1 && got[0].rows[0][0] == Value(t + i) &&
                            got[0].rows[0][1] == Value(2);
            (ok ? right : wrong)++;
          } catch (const std::exception&) {
            wrong++;
          }
        }
      });
    }
    threads.clear();
    CHECK(right == 40);
    CHECK(wrong == 0);
  }
}

TEST_CASE("sql: a long query never holds up brine-master's commits on a WAL store", "[sql][sqlite]") {
  TempDir dir;
  const Db db = MakeDb("sqlite", dir);
  std::atomic<bool> started{false};
  Outcome read;
  std::jthread reader([&] {
    started = true;
    read = Run(db, kForever, {}, {.timeout = std::chrono::seconds(3)});
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto writer = brine::store::OpenStore(db.database, {});
  double slowest = 0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto batch = writer->BeginBatch();
    writer->SaveLoad("2024010112000000000" + std::to_string(i), Value::Map({{"fun", "test.ping"}, {"jid", "x"}}), std::nullopt);
    batch.Commit();
    slowest = std::max(slowest, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  reader.join();
  INFO("slowest commit " << slowest << " s; the read: " << read.failure << " after " << read.seconds << " s");
  CHECK(slowest < 1.0);  // the read runs 3 s; a blocked writer would wait for it
  CHECK(read.failure == "timeout");
  // Nothing is left holding a snapshot: a full checkpoint completes.
  SQLite::Database check(db.database, SQLite::OPEN_READWRITE);
  CHECK(check.execAndGet("PRAGMA wal_checkpoint(TRUNCATE)").getInt() == 0);
}

TEST_CASE("sql: brine.sql_views lists every documented view with its columns, and the list is docs/schema.md's",
          "[sql]") {
  std::ifstream f(fs::path(BRINE_SOURCE_DIR) / "docs" / "schema.md");
  const std::string schema{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  for (const std::string& view : brine::store::DocumentedViews()) {
    INFO(view);
    CHECK(schema.find("`" + view) != std::string::npos);
  }
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const auto views = brine::store::OpenSqlEngine(db.database)->Views();
    std::vector<std::string> names;
    for (const auto& v : views) names.push_back(v.name);
    CHECK(names == brine::store::DocumentedViews());
    for (const auto& v : views) {
      if (v.name == "failed_returns") {
        CHECK(v.columns == std::vector<std::string>{"jid", "fun", "minion", "retcode", "success", "recv_time",
                                                    "start_time", "user", "return"});
      }
    }
    const CliResult cli = Cli(Conf(dir, db), {"--out", "json", "brine.sql_views"});
    CHECK(cli.code == 0);
    CHECK(brine::ParseJson(cli.out).Find("salt_returns") != nullptr);
  }
}

TEST_CASE("sql: CSV is RFC 4180 and neutralizes formulas", "[sql][output]") {
  const std::string csv = brine::output::CsvTable(
      {"a", "=b"}, {{Value("x,y"), Value("say \"hi\"")}, {Value(), Value("=1+2")}, {Value(-5), Value("@sum\nx")},
                    {Value("+1"), Value("-2")}});
  CHECK(csv ==
        "a,'=b\r\n"
        "\"x,y\",\"say \"\"hi\"\"\"\r\n"
        ",'=1+2\r\n"
        "-5,\"'@sum\nx\"\r\n"
        "'+1,'-2\r\n");
}

TEST_CASE("sql: **params collects the keywords no parameter takes", "[sql][args]") {
  const std::vector<brine::args::Param> params = {
      {"query", std::nullopt}, {"limit", Value(10)}, {"**params", std::nullopt}};
  const auto bound = brine::args::BindArgs("brine.sql", params, brine::args::ParseInput({"SELECT :jid", "jid=7", "limit=3"}));
  CHECK(bound["limit"] == Value(3));
  CHECK(bound["**params"] == Value(ValueMap{{"jid", Value(7)}}));
  CHECK_THROWS_AS(brine::args::BindArgs("brine.sql", params, brine::args::ParseInput({"a", "1", "2"})),
                  brine::args::UsageError);
  const auto none = brine::args::BindArgs("brine.sql", params, brine::args::ParseInput({"q"}));
  CHECK(none["**params"] == Value(ValueMap{}));
}

TEST_CASE("sql: brine.sql's forms match their golden files", "[sql][golden][runner]") {
  TempDir dir;
  const Db db = MakeDb("sqlite", dir);
  const fs::path conf = Conf(dir, db);
  const std::string query =
      "SELECT 1 AS jid, 'a,b' AS jid, NULL AS n, x'00ff' AS b, 1.5 AS f, '=1+2' AS formula, 'say \"hi\"' AS q "
      "UNION ALL SELECT 22, 'c', 'x', NULL, -2.25, '-', 'multi\nline'";
  for (const std::string out : {"json", "yaml", "nested", "txt", "csv"}) {
    const CliResult r = Cli(conf, {"--out", out, "brine.sql", query});
    INFO(out << ": " << r.err);
    CHECK(r.code == 0);
    CHECK(brine::test::CheckGolden("runner/sql_" + out + ".txt", r.out) == "");
  }
  const CliResult table = Cli(conf, {"brine.sql", query}, brine::runner::Terminal::kTty);
  CHECK(table.code == 0);
  CHECK(brine::test::CheckGolden("runner/sql_table.txt", table.out) == "");
  // The messages: rows cut, an SQL error with its position, the budget, a write.
  const std::string five = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x FROM c";
  const CliResult cut = Cli(conf, {"--out", "csv", "brine.sql", five, "limit=2"});
  CHECK(cut.code == 0);
  const CliResult error = Cli(conf, {"brine.sql", "SELECT id,\n  nocol FROM queue"});
  CHECK(error.code == 1);
  const CliResult slow = Cli(conf, {"brine.sql", kForever, "timeout=0.2"});
  CHECK(slow.code == 1);
  const CliResult write = Cli(conf, {"brine.sql", "DELETE FROM queue"});
  CHECK(write.code == 1);
  const CliResult missing = Cli(conf, {"brine.sql", "SELECT :jid AS j"});
  CHECK(missing.code == 1);
  const CliResult option = Cli(conf, {"brine.sql", kForever, "--timeout", "0.2", "--limit=3"});
  CHECK(option.code == 1);
  CHECK(option.err.find("budget of 200 ms") != std::string::npos);
  const CliResult bound = Cli(conf, {"--out", "json", "--out-indent", "-1", "brine.sql", "SELECT :jid AS j, :who AS w",
                                     "jid=20240101120000123456", "who=it's"});
  CHECK(bound.code == 0);
  fs::path file = dir / "two.sql";
  std::ofstream(file) << "SELECT 1 AS a;\n-- a comment; not a statement\nSELECT 'x;y' AS b;\nSELECT nocol\n  FROM queue;\n";
  const CliResult script = Cli(conf, {"--out", "json", "--out-indent", "-1", "brine.sql_file", file.string()});
  CHECK(script.code == 1);
  const std::string messages = "limit=2 (csv):\n" + cut.out + cut.err + "\nerror:\n" + error.err + "\ntimeout=0.2:\n" +
                               slow.err + "\nwrite:\n" + write.err + "\nmissing parameter:\n" + missing.err +
                               "\nbound:\n" + bound.out + bound.err + "\nsql_file:\n" + script.out +
                               script.err.substr(script.err.find(": line")) + "\n";
  CHECK(brine::test::CheckGolden("runner/sql_messages.txt", messages) == "");
}

TEST_CASE("sql: brine.sql runs on PostgreSQL through the command line, on brine.read_database when set", "[sql]") {
  if (auto why = PostgresServer::Unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir dir;
  const Db db = MakeDb("postgresql", dir);
  const Db replica = MakeDb("postgresql", dir);
  replica.Exec("UPDATE queue SET name = 'replica' WHERE name = 'first'");
  const fs::path conf = Conf(dir, db);
  std::ofstream(conf / "master", std::ios::app) << "brine.read_database: " << replica.database << "\n";
  const CliResult r = Cli(conf, {"--out", "csv", "brine.sql", "SELECT name FROM queue WHERE name <> :skip ORDER BY id",
                                 "skip=second"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "name\r\nreplica\r\n");
  const CliResult error = Cli(conf, {"brine.sql", "SELECT id,\n  nocol FROM queue"});
  CHECK(error.code == 1);
  CHECK(error.err == "brine-run: line 2, column 3: column \"nocol\" does not exist\n");
}

TEST_CASE("sql: an account that can only read the store and its folder still queries it", "[sql][sqlite][e2e]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to run brine-run as nobody");
    return;
  }
  TempDir dir;
  const Db db = MakeDb("sqlite", dir);
  const fs::path conf = Conf(dir, db);
  {
    SQLite::Database checkpoint(db.database, SQLite::OPEN_READWRITE);
    checkpoint.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  fs::remove(db.database + "-wal");
  fs::remove(db.database + "-shm");
  for (const fs::path& p : {dir.path(), conf}) fs::permissions(p, fs::perms(0755));
  for (const fs::path& p : {fs::path(db.database), conf / "master"}) fs::permissions(p, fs::perms(0644));
  const std::string command = "su nobody -s /bin/sh -c '" + std::string(BRINE_BIN_DIR) + "/brine-run -c " +
                              conf.string() + " --out csv brine.sql \"SELECT name FROM queue ORDER BY id\"' 2>&1";
  std::string output;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p) != nullptr) output += buf;
    ::pclose(p);
  }
  CHECK(output == "name\r\nfirst\r\nsecond\r\n");
}

TEST_CASE("sql: Ctrl-C stops brine.sql's query on the server too, not only the client", "[sql][e2e]") {
  for (const std::string& backend : Backends()) {
    TempDir dir;
    const Db db = MakeDb(backend, dir);
    INFO(backend);
    const fs::path conf = Conf(dir, db);
    // A query text no other case runs, to find it in pg_stat_activity.
    const std::string query = std::string(kForever) + " -- interrupt me";
    brine::test::Child child({brine::test::Binary("brine-run").string(), "-c", conf.string(), "brine.sql", query,
                              "timeout=120"},
                             dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    const auto t0 = Clock::now();
    child.Signal(SIGINT);
    const std::optional<int> code = child.Wait(std::chrono::seconds(20));
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    INFO("exit " << (code ? std::to_string(*code) : "none") << " after " << seconds << " s: "
                 << brine::test::ReadFile(dir / "run.log"));
    CHECK(code == std::optional<int>(1));
    CHECK(brine::test::ReadFile(dir / "run.log").find("interrupted") != std::string::npos);
    if (db.pg()) {
      CHECK(db.Q("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%interrupt me' AND state = 'active' "
                 "AND pid <> pg_backend_pid()") == "0\n");
    }
  }
}
