// The forensic queries in docs/schema.md run as written against a store the
// store API built, and find what they are meant to find.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/doc_blocks.h"
#include "support/temp_dir.h"

TEST_CASE("schema docs: every forensic query runs as written and finds its rows", "[store][docs]") {
  brine::test::TempDir dir;
  const auto path = dir / "brine.sqlite";
  {
    auto s = brine::store::OpenStore(path);
    brine::SystemClock clock;
    const std::string jid = brine::FormatJid(clock.Now() - std::chrono::minutes(5));
    s->SaveLoad(jid, brine::ParseJson(R"({"fun":"cmd.run","tgt":"web*","tgt_type":"glob","arg":["uptime"],"user":"alice"})"),
                std::vector<std::string>{"web1.example.com", "web2.example.com"});
    auto ret = brine::ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"cmd.run",)"
                                R"("return":"boom","retcode":1,"success":false})");
    ret.Set("jid", jid);
    REQUIRE(s->Returner(ret).kind == brine::store::ReturnOutcome::Kind::kStored);
    // A state.apply a minute later whose one state failed (Salt's retcode 2).
    const std::string state_jid = brine::FormatJid(clock.Now() - std::chrono::minutes(4));
    s->SaveLoad(state_jid, brine::ParseJson(R"({"fun":"state.apply","tgt":"web1.example.com","arg":[],"user":"alice"})"),
                std::vector<std::string>{"web1.example.com"});
    auto state = brine::ParseJson(R"({"cmd":"_return","id":"web1.example.com","fun":"state.apply","retcode":2,)"
                                  R"("success":true,"return":{"pkg_|-vim_|-vim_|-installed":{"__id__":"vim",)"
                                  R"("name":"vim","result":false,"comment":"no vim here"}}})");
    state.Set("jid", state_jid);
    REQUIRE(s->Returner(state).kind == brine::store::ReturnOutcome::Kind::kStored);
    std::vector<brine::store::Event> events{{.tag = "salt/auth", .data = brine::ParseJson(R"({"id":"web1"})"),
                                             .received = clock.Now()}};
    s->EventReturn(events);
  }
  std::ifstream in(std::string(BRINE_SOURCE_DIR) + "/docs/schema.md");
  std::stringstream md;
  md << in.rdbuf();
  const auto blocks = brine::test::FencedBlocks(md.str(), "sql");
  REQUIRE(blocks.size() == 11);

  // The shell's own library, no brine functions registered: what an operator has.
  SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
  for (const std::string& sql : blocks) {
    INFO(sql);
    SQLite::Statement q(db, sql);
    int rows = 0;
    std::string text;
    while (q.executeStep()) {
      ++rows;
      for (int i = 0; i < q.getColumnCount(); ++i) text += q.getColumn(i).getString() + "|";
    }
    INFO(text);
    REQUIRE(rows >= 1);
    if (sql.find("jid_missing") != std::string::npos) REQUIRE(text.find("web2.example.com") != std::string::npos);
    if (sql.find("retcode <> 0") != std::string::npos) REQUIRE(text.find("web1.example.com") != std::string::npos);
    if (sql.find("WHERE id = 'web1.example.com'") != std::string::npos) REQUIRE(text.find("boom") != std::string::npos);
    if (sql.find("salt_events") != std::string::npos) REQUIRE(text.find("salt/auth") != std::string::npos);
    if (sql.find("failed_returns") != std::string::npos) REQUIRE(text.find("|web1.example.com|2|alice|") != std::string::npos);
    if (sql.find("failed_states") != std::string::npos) REQUIRE(text == "vim|1|no vim here|");
    if (sql.find("minion_job_outcome") != std::string::npos) {
      REQUIRE(text.find("web1.example.com|2|2|0|2|") != std::string::npos);
      REQUIRE(text.find("web2.example.com|1|0|1|0|") != std::string::npos);
    }
    if (sql.find("return_times") != std::string::npos) REQUIRE(text.find("web1.example.com|") == 0);
    if (sql.find("user_jobs") != std::string::npos) REQUIRE(rows == 2);
    if (sql.find("fun = 'cmd.run' AND start_time") != std::string::npos) REQUIRE(text.find("|alice|web*|glob|") != std::string::npos);
  }
}
