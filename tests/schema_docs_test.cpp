// The worked queries of docs/schema.md, in both dialects, run as written
// through brine.sql's engine (store/sql.h, read-only and time-bounded) against
// a store the store API built, on their own backend: each runs, finds what
// it is meant to find, and returns the columns the page claims. The `sql`
// blocks are SQLite's, the `pgsql` blocks PostgreSQL's; question N of one
// dialect returns the same columns as question N of the other.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "support/doc_blocks.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

namespace {

std::string SchemaMd() {
  std::ifstream in(std::string(BRINE_SOURCE_DIR) + "/docs/schema.md");
  std::stringstream md;
  md << in.rdbuf();
  return md.str();
}

// The data every query finds something in: a cmd.run that failed on one of
// its two minions, a state.apply a minute later whose one state failed
// (Salt's retcode 2), and a salt/auth event.
void Fill(const std::string& database) {
  auto s = brine::store::OpenStore(database);
  brine::SystemClock clock;
  const std::string jid = brine::FormatJid(clock.Now() - std::chrono::minutes(5));
  s->SaveLoad(jid, brine::ParseJson(R"({"fun":"cmd.run","tgt":"web*","tgt_type":"glob","arg":["uptime"],"user":"alice"})"),
              std::vector<std::string>{"web1.example.com", "web2.example.com"});
  auto ret = brine::ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"cmd.run",)"
                              R"("return":"boom","retcode":1,"success":false})");
  ret.Set("jid", jid);
  REQUIRE(s->Returner(ret).kind == brine::store::ReturnOutcome::Kind::kStored);
  const std::string state_jid = brine::FormatJid(clock.Now() - std::chrono::minutes(4));
  s->SaveLoad(state_jid, brine::ParseJson(R"({"fun":"state.apply","tgt":"web1.example.com","arg":[],"user":"alice"})"),
              std::vector<std::string>{"web1.example.com"});
  auto state = brine::ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"state.apply","retcode":2,)"
                                R"("success":true,"return":{"pkg_|-vim_|-vim_|-installed":{"__id__":"vim",)"
                                R"("name":"vim","result":false,"comment":"no vim here"}}})");
  state.Set("jid", state_jid);
  REQUIRE(s->Returner(state).kind == brine::store::ReturnOutcome::Kind::kStored);
  std::vector<brine::store::Event> events{
      {.tag = "salt/auth", .data = brine::ParseJson(R"({"id":"web1"})"), .received = clock.Now()}};
  s->EventReturn(events);
}

// One answer as text: each row's values joined by "|" (NULL empty), a "\n"
// after each row.
struct Answer {
  std::vector<std::string> columns;
  std::string text;
  int rows = 0;
};

Answer RunQuery(const std::string& database, const std::string& sql) {
  Answer a;
  brine::store::OpenSqlEngine(database)->Run(sql, {}, {.timeout = std::chrono::seconds(30)},
                                             [&](brine::store::SqlResult&& r) {
                                               a.columns = r.columns;
                                               for (const auto& row : r.rows) {
                                                 ++a.rows;
                                                 for (std::size_t i = 0; i < row.size(); ++i) {
                                                   if (i > 0) a.text += "|";
                                                   const brine::Value& v = row[i];
                                                   if (v.is_string()) {
                                                     a.text += v.as_string();
                                                   } else if (!v.is_null()) {
                                                     a.text += brine::ToJson(v);
                                                   }
                                                 }
                                                 a.text += "\n";
                                               }
                                             });
  return a;
}

// What each question is meant to find, the same on both backends.
void CheckFinds(const std::string& sql, const Answer& a) {
  INFO(sql);
  INFO(a.text);
  REQUIRE(a.rows >= 1);
  if (sql.find("jid_missing") != std::string::npos) CHECK(a.text.find("web2.example.com") != std::string::npos);
  if (sql.find("retcode <> 0") != std::string::npos) CHECK(a.text.find("web1.example.com") != std::string::npos);
  if (sql.find("WHERE id = 'web1.example.com'") != std::string::npos) CHECK(a.text.find("boom") != std::string::npos);
  if (sql.find("salt_events") != std::string::npos || sql.find("tagged_events") != std::string::npos) {
    CHECK(a.text.find("salt/auth") != std::string::npos);
  }
  if (sql.find("FROM failed_returns") != std::string::npos && sql.find("state.apply") != std::string::npos) {
    CHECK(a.text.find("|web1.example.com|2|alice") != std::string::npos);
  }
  if (sql.find("failed_states") != std::string::npos) CHECK(a.text == "vim|1|no vim here\n");
  if (sql.find("minion_job_outcome") != std::string::npos) {
    CHECK(a.text.find("web1.example.com|2|2|0|2\n") != std::string::npos);
    CHECK(a.text.find("web2.example.com|1|0|1|0\n") != std::string::npos);
  }
  if (sql.find("return_times") != std::string::npos) CHECK(a.text.find("web1.example.com|") == 0);
  if (sql.find("user_jobs") != std::string::npos) CHECK(a.rows == 2);
  if (sql.find("fun = 'cmd.run' AND start_time") != std::string::npos) {
    CHECK(a.text.find("|alice|web*|glob\n") != std::string::npos);
  }
}

// The forensic views' table of docs/schema.md ("| view | columns | one row
// per |"): view name -> the columns it lists, in order.
std::map<std::string, std::vector<std::string>> DocumentedColumns(const std::string& md) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(md);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("| view | columns |", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("|", 0) != 0) {
      inside = false;
      continue;
    }
    if (line.rfind("|---", 0) == 0) continue;
    // | `name` | `a`, `b` (note), `c` | ...
    const auto name_start = line.find('`');
    const auto name_end = line.find('`', name_start + 1);
    const auto cells = line.find(" | ", name_end);
    const auto cells_end = line.find(" | ", cells + 3);
    if (name_start == std::string::npos || name_end == std::string::npos || cells == std::string::npos) continue;
    const std::string name = line.substr(name_start + 1, name_end - name_start - 1);
    const std::string cell = line.substr(cells + 3, cells_end == std::string::npos ? std::string::npos : cells_end - cells - 3);
    // A column is a backquoted word at the start of the cell or after ", ".
    std::vector<std::string> columns;
    std::size_t i = 0;
    while (i < cell.size()) {
      if (cell[i] == '`' && (i == 0 || cell.compare(i - 2, 2, ", ") == 0)) {
        const auto end = cell.find('`', i + 1);
        if (end == std::string::npos) break;
        columns.push_back(cell.substr(i + 1, end - i - 1));
        i = end + 1;
      } else {
        ++i;
      }
    }
    out[name] = columns;
  }
  return out;
}

void CheckColumns(const std::string& database, const std::map<std::string, std::vector<std::string>>& documented) {
  const auto views = brine::store::OpenSqlEngine(database)->Views();
  for (const auto& [name, columns] : documented) {
    INFO("docs/schema.md says " << name << " has these columns, in order");
    bool found = false;
    for (const auto& v : views) {
      if (v.name != name) continue;
      found = true;
      CHECK(v.columns == columns);
    }
    CHECK(found);
  }
}

}  // namespace

TEST_CASE("schema docs: every SQLite query runs as written through brine.sql's engine and finds its rows",
          "[store][docs][sqlite]") {
  brine::test::TempDir dir;
  const std::string database = (dir / "brine.sqlite").string();
  Fill(database);
  const std::string md = SchemaMd();
  const auto blocks = brine::test::FencedBlocks(md, "sql");
  REQUIRE(blocks.size() == 11);
  for (const std::string& sql : blocks) CheckFinds(sql, RunQuery(database, sql));
  const auto documented = DocumentedColumns(md);
  REQUIRE(documented.size() == 14);  // the forensic and tag views and the Salt plug-in's brine_api_v1_* views
  CheckColumns(database, documented);
}

TEST_CASE("schema docs: every PostgreSQL query runs as written through brine.sql's engine, with its SQLite twin's columns",
          "[store][docs][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  brine::test::TempDir dir;
  const std::string sqlite = (dir / "brine.sqlite").string();
  const std::string pg = brine::test::PostgresServer::Shared().CreateDatabase();
  Fill(sqlite);
  Fill(pg);
  const std::string md = SchemaMd();
  const auto sqlite_blocks = brine::test::FencedBlocks(md, "sql");
  const auto pg_blocks = brine::test::FencedBlocks(md, "pgsql");
  REQUIRE(pg_blocks.size() == 12);  // the 11 questions and pgjsonb's failed returns
  REQUIRE(sqlite_blocks.size() == 11);
  for (std::size_t i = 0; i < pg_blocks.size(); ++i) {
    const Answer a = RunQuery(pg, pg_blocks[i]);
    CheckFinds(pg_blocks[i], a);
    if (i < sqlite_blocks.size()) {
      INFO("question " << i + 1 << " in both dialects:\n" << sqlite_blocks[i] << pg_blocks[i]);
      CHECK(a.columns == RunQuery(sqlite, sqlite_blocks[i]).columns);
    }
  }
  CheckColumns(pg, DocumentedColumns(md));
}
