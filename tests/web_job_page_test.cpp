// brine-web's /jobs/<jid> paged (web/src/job_page.cpp over
// Store::ListJobMinions): keyset pages of a job's minions in byte order
// that visit each one exactly once (expected ones that returned, failed or
// are missing, and minions that returned unexpected), whole-job counts on
// every page, the state filter, one minion, the Next link, hostile ids in
// the cursor, and 400 for a bad limit or state; on SQLite and PostgreSQL.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/job_listing_sql.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "brine/web/app.h"
#include "support/http_client.h"
#include "support/percent_encode.h"
#include "support/postgres_server.h"
#include "support/web_site.h"

namespace fs = std::filesystem;
using brine::Value;
using brine::test::Http;
using brine::test::HttpReply;
using brine::test::PercentEncode;

namespace {

constexpr const char* kJid = "20261126090000000000";
const brine::Micros kNow = brine::FromUnixMicros(1'795'687'200'000'000);  // 2026-11-26T10:00:00Z
// Sorts first ('"' is 0x22) and needs escaping in an attribute and as text.
constexpr const char* kHostile = "\"><script>alert(1)</script>";

// The job's minions and what the page must say of each. Names mix case and
// a non-ASCII one, so an order that is not by bytes would show.
struct Minion {
  std::string name;
  std::string state;  // returned, failed, missing
  bool expected = true;
};

std::vector<Minion> JobMinions() {
  std::vector<Minion> out = {{kHostile, "missing"},
                             {"Bupper", "returned"},
                             {"z\xC3\xA9t\xC3\xA9", "returned", false},
                             {"zz-late", "failed", false}};
  for (int i = 0; i < 24; ++i) {
    const std::string name = std::string(i < 10 ? "m0" : "m") + std::to_string(i);
    switch (i % 4) {
      case 0: out.push_back({name, "returned"}); break;
      case 1: out.push_back({name, "failed"}); break;
      case 2: out.push_back({name, "missing"}); break;
      default: out.push_back({name, "returned", false}); break;
    }
  }
  std::sort(out.begin(), out.end(), [](const Minion& a, const Minion& b) { return a.name < b.name; });
  return out;
}

void FillStore(const fs::path& db) {
  auto s = brine::store::OpenStore(db);
  std::vector<std::string> expected;
  for (const Minion& m : JobMinions()) {
    if (m.expected) expected.push_back(m.name);
  }
  s->SaveLoad(kJid, brine::ParseJson(R"({"fun":"cmd.run","arg":["id"],"tgt":"*","user":"root"})"), expected);
  bool by_success = false;  // failures alternate: retcode 1, then success false with retcode 0
  for (const Minion& m : JobMinions()) {
    if (m.state == "missing") continue;
    Value ret = Value::Map({{"id", m.name}, {"jid", kJid}, {"fun", "cmd.run"}, {"return", "out of " + m.name}});
    if (m.state == "failed") {
      ret.Set("retcode", by_success ? 0 : 1);
      ret.Set("success", !by_success ? Value(true) : Value(false));
      by_success = !by_success;
    } else {
      ret.Set("retcode", 0);
      ret.Set("success", true);
    }
    (void)s->Returner(ret);
  }
}

struct Site : brine::test::WebSite {
  std::vector<std::pair<std::string, std::string>> session;
  explicit Site(brine::web::App::Options extra = {}) : WebSite(kNow, FillStore, std::move(extra)) {
    session = brine::test::WithSession(Login());
  }
  HttpReply Get(const std::string& target) { return Http(port(), "GET", target, session); }
  Value Json(const std::string& target) {
    const HttpReply r = Get(target);
    INFO(target << " answered " << r.status << ": " << r.body);
    REQUIRE(r.status == 200);
    return brine::ParseJson(r.body);
  }
};

// Every page of `query` (e.g. "&state=failed") with `limit`, following
// "next": the names in the order seen and each one's state; checks on the
// way that each page but the last is full and that every page carries the
// whole job's counts.
std::vector<std::pair<std::string, std::string>> Walk(Site& w, const std::string& query, int limit) {
  std::vector<std::pair<std::string, std::string>> seen;
  std::string after;
  for (int page = 0; page < 100; ++page) {
    const std::string target = std::string("/jobs/") + kJid + "?format=json&limit=" + std::to_string(limit) + query +
                               (after.empty() ? "" : "&after=" + PercentEncode(after));
    const Value v = w.Json(target);
    INFO(target << ": " << brine::ToJson(v));
    const Value& counts = *v.Find("counts");
    CHECK(counts.Find("expected")->as_int() == 20);
    CHECK(counts.Find("returned")->as_int() == 21);
    CHECK(counts.Find("failed")->as_int() == 7);
    CHECK(counts.Find("missing")->as_int() == 7);
    for (const auto& [name, m] : v.Find("minions")->as_map()) seen.emplace_back(name, *m.FindString("state"));
    const Value* next = v.Find("next");
    REQUIRE(next != nullptr);
    if (next->is_null()) return seen;
    CHECK(static_cast<int>(v.Find("minions")->as_map().size()) == limit);
    REQUIRE(next->is_string());
    CHECK(next->as_string() == seen.back().first);
    after = next->as_string();
  }
  FAIL("more than 100 pages");
  return seen;
}

std::vector<std::pair<std::string, std::string>> Want(const std::string& state) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Minion& m : JobMinions()) {
    if (state.empty() || m.state == state) out.emplace_back(m.name, m.state);
  }
  return out;
}

void CheckPagingAndFilters(Site& w) {
  for (const int limit : {1, 4, 7, 100}) {
    INFO("limit " << limit);
    CHECK(Walk(w, "", limit) == Want(""));
    CHECK(Walk(w, "&state=failed", limit) == Want("failed"));
    CHECK(Walk(w, "&state=missing", limit) == Want("missing"));
    CHECK(Walk(w, "&state=returned", limit) == Want("returned"));
  }
}

// `select` with each `$N` replaced by its bind as a quoted literal, for EXPLAIN.
std::string Inlined(const brine::store::JobListingSql& select) {
  std::string sql = select.sql;
  for (std::size_t n = select.binds.size(); n >= 1; --n) {  // $10 before $1
    std::string literal = "'";
    for (const char c : select.binds[n - 1]) literal += c == '\'' ? std::string("''") : std::string(1, c);
    literal += "'";
    const std::string name = "$" + std::to_string(n);
    for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name, at + literal.size()))
      sql.replace(at, name.size(), literal);
  }
  return sql;
}

// Every query ListJobMinions runs for each state filter, a cursor and a minion.
std::vector<brine::store::JobListingSql> AllQueries(const std::string& database) {
  using State = brine::store::JobMinionQuery::State;
  std::vector<brine::store::JobListingSql> out;
  for (const State state : {State::kAny, State::kReturned, State::kFailed, State::kMissing}) {
    for (const auto& q : {brine::store::JobMinionQuery{.state = state},
                          brine::store::JobMinionQuery{.state = state, .after = "m05", .minion = "m07", .limit = 5}}) {
      for (auto& select : brine::store::JobMinionsQueries(database, kJid, q)) out.push_back(std::move(select));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("web job page: pages of a job visit every minion once, in byte order, with whole-job counts",
          "[web][web-job-page]") {
  Site w;
  REQUIRE(JobMinions().size() == 28);
  CheckPagingAndFilters(w);
  // The first page by default: 100 minions at most, so all 28, and no next.
  const Value v = w.Json(std::string("/jobs/") + kJid + "?format=json");
  CHECK(v.Find("minions")->as_map().size() == 28);
  CHECK(v.Find("next")->is_null());
  CHECK(*v.Find("load")->FindString("fun") == "cmd.run");
  CHECK(*v.FindString("jid") == kJid);
  const Value* unexpected = v.Find("minions")->Find("zz-late");
  REQUIRE(unexpected != nullptr);
  CHECK(unexpected->Find("retcode")->as_int() == 1);
  CHECK(*unexpected->FindString("state") == "failed");
  CHECK(*unexpected->FindString("return") == "out of zz-late");
  CHECK(v.Find("minions")->Find("m02")->Find("return")->is_null());
}

TEST_CASE("web job page: minion= shows that minion alone, expected or not, and nothing for a stranger",
          "[web][web-job-page]") {
  Site w;
  const Value one = w.Json(std::string("/jobs/") + kJid + "?format=json&minion=m03");
  REQUIRE(one.Find("minions")->as_map().size() == 1);
  CHECK(*one.Find("minions")->Find("m03")->FindString("state") == "returned");
  CHECK(one.Find("counts")->Find("expected")->as_int() == 20);
  CHECK(one.Find("next")->is_null());
  const Value failed = w.Json(std::string("/jobs/") + kJid + "?format=json&minion=m01&state=failed");
  CHECK(failed.Find("minions")->as_map().size() == 1);
  CHECK(w.Json(std::string("/jobs/") + kJid + "?format=json&minion=m01&state=missing").Find("minions")->as_map().empty());
  CHECK(w.Json(std::string("/jobs/") + kJid + "?format=json&minion=nobody").Find("minions")->as_map().empty());
  const HttpReply html = w.Get(std::string("/jobs/") + kJid + "?minion=nobody");
  CHECK(html.status == 200);
  CHECK_THAT(html.body, Catch::Contains("<p id=\"no-minions\">"));
}

TEST_CASE("web job page: the HTML has the whole-job counts, the state filter and a Next link that keeps the view",
          "[web][web-job-page]") {
  Site w;
  const HttpReply first = w.Get(std::string("/jobs/") + kJid + "?limit=4&state=returned");
  REQUIRE(first.status == 200);
  CHECK_THAT(first.body, Catch::Contains("<span id=\"count-expected\">20</span> expected, "
                                         "<span id=\"count-returned\">21</span> returned, "
                                         "<span id=\"count-failed\">7</span> failed, "
                                         "<span id=\"count-missing\">7</span> missing"));
  CHECK_THAT(first.body, Catch::Contains("<a id=\"show-failed\" href=\"/jobs/" + std::string(kJid) +
                                         "?limit=4&amp;state=failed\">failed (7)</a>"));
  CHECK_THAT(first.body, Catch::Contains("<a id=\"show-all\" href=\"/jobs/" + std::string(kJid) +
                                         "?limit=4\">all (28)</a>"));
  CHECK_THAT(first.body, Catch::Contains("<a id=\"show-returned\" href=\"/jobs/" + std::string(kJid) +
                                         "?limit=4&amp;state=returned\" aria-current=\"page\">returned (14)</a>"));
  // Returned (not failed) in byte order: Bupper, m00, m03, m04 | m07, ...
  CHECK_THAT(first.body, Catch::Contains("<td class=\"minion-id\">m04</td>"));
  CHECK(first.body.find("<td class=\"minion-id\">m07</td>") == std::string::npos);
  CHECK(first.body.find("<td class=\"minion-id\">m01</td>") == std::string::npos);  // failed: filtered out
  CHECK_THAT(first.body, Catch::Contains("<a id=\"next\" href=\"/jobs/" + std::string(kJid) +
                                         "?limit=4&amp;state=returned&amp;after=m04\">Next</a>"));
  CHECK(first.body.find("id=\"first\"") == std::string::npos);
  // Only this page's returns are rendered.
  CHECK_THAT(first.body, Catch::Contains("out of m04"));
  CHECK(first.body.find("out of m07") == std::string::npos);

  const HttpReply last = w.Get(std::string("/jobs/") + kJid + "?after=m20&limit=4&state=returned");
  REQUIRE(last.status == 200);
  CHECK_THAT(last.body, Catch::Contains("<td class=\"minion-id\">m23</td>"));
  CHECK(last.body.find("id=\"next\"") == std::string::npos);
  CHECK_THAT(last.body, Catch::Contains("<a id=\"first\" href=\"/jobs/" + std::string(kJid) +
                                        "?limit=4&amp;state=returned\">First</a>"));
}

TEST_CASE("web job page: a hostile minion id as the cursor and in the page stays text", "[web][web-job-page]") {
  Site w;
  const HttpReply first = w.Get(std::string("/jobs/") + kJid + "?limit=1");
  REQUIRE(first.status == 200);
  CHECK(first.body.find("<script>alert") == std::string::npos);
  CHECK_THAT(first.body, Catch::Contains("<td class=\"minion-id\">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
  CHECK_THAT(first.body, Catch::Contains("<a id=\"next\" href=\"/jobs/" + std::string(kJid) + "?limit=1&amp;after=" +
                                         PercentEncode(kHostile) + "\">Next</a>"));
  // The cursor handed back: the page goes on after it, and says it only as text.
  const HttpReply second = w.Get(std::string("/jobs/") + kJid + "?limit=1&after=" + PercentEncode(kHostile) +
                                 "&minion=" + PercentEncode(std::string("<b>") + kHostile));
  REQUIRE(second.status == 200);
  CHECK(second.body.find("<script>alert") == std::string::npos);
  CHECK(second.body.find("<b>") == std::string::npos);
  CHECK_THAT(second.body, Catch::Contains("value=\"&lt;b&gt;&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\""));
  const Value json = w.Json(std::string("/jobs/") + kJid + "?format=json&limit=1&after=" + PercentEncode(kHostile));
  REQUIRE(json.Find("minions")->as_map().size() == 1);
  CHECK(json.Find("minions")->as_map().front().first == "Bupper");
  CHECK(*json.FindString("next") == "Bupper");
  CHECK(w.Json(std::string("/jobs/") + kJid + "?format=json&limit=1").Find("minions")->Find(kHostile) != nullptr);
}

TEST_CASE("web job page: a bad limit or state answers 400 as the other pages do, and an unknown jid 404",
          "[web][web-job-page]") {
  Site w;
  for (const std::string q : {"limit=0", "limit=501", "limit=abc", "limit=5x", "limit=-1", "state=bogus",
                              "state=FAILED"}) {
    INFO(q);
    const HttpReply html = w.Get(std::string("/jobs/") + kJid + "?" + q);
    CHECK(html.status == 400);
    CHECK_THAT(html.body, Catch::Contains("<p class=\"error\" id=\"message\">"));
    const HttpReply json = w.Get(std::string("/jobs/") + kJid + "?format=json&" + q);
    CHECK(json.status == 400);
    CHECK(brine::ParseJson(json.body).FindString("error") != nullptr);
  }
  CHECK_THAT(w.Get(std::string("/jobs/") + kJid + "?limit=501").body,
             Catch::Contains("limit: expected a number from 1 to 500"));
  CHECK(w.Get(std::string("/jobs/") + kJid + "?limit=500").status == 200);
  CHECK(w.Get("/jobs/20000101000000000000?limit=5").status == 404);
  CHECK(w.Get("/jobs/20000101000000000000?format=json").status == 404);
}

TEST_CASE("web job page: PostgreSQL pages the same minions in the same byte order and gives the same JSON as SQLite",
          "[web][web-job-page][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  Site pg({.database = brine::test::PostgresServer::Shared().CreateDatabase()});
  CheckPagingAndFilters(pg);
  Site lite;
  for (const std::string q : {"?format=json", "?format=json&limit=3&after=m05", "?format=json&state=failed&limit=2",
                              "?format=json&state=missing", "?format=json&minion=zz-late"}) {
    INFO(q);
    const HttpReply a = lite.Get(std::string("/jobs/") + kJid + q);
    const HttpReply b = pg.Get(std::string("/jobs/") + kJid + q);
    CHECK(a.status == 200);
    CHECK(a.body == b.body);
  }
}

TEST_CASE("web job page: the page's queries search the job's index entries and never scan a table, on SQLite",
          "[web][web-job-page][plan]") {
  Site w;
  const std::string database = w.database;
  {
    auto s = brine::store::OpenStore(database);
    REQUIRE(s->Maintenance() != nullptr);
    s->Maintenance()->RefreshStatistics();
  }
  const auto engine = brine::store::OpenSqlEngine(database);
  for (const auto& select : AllQueries(database)) {
    std::string plan;
    engine->Run("EXPLAIN QUERY PLAN " + Inlined(select), {}, {}, [&](brine::store::SqlResult&& r) {
      for (const auto& row : r.rows) plan += row.back().as_string() + "\n";
    });
    INFO(select.sql << "\n" << plan);
    // The only scan is of `s`, the job's own minion ids; every table is searched.
    std::string scans;
    for (std::size_t at = plan.find("SCAN "); at != std::string::npos; at = plan.find("SCAN ", at + 1))
      scans += plan.substr(at, plan.find('\n', at) - at) + ";";
    CHECK((scans.empty() || scans == "SCAN s;"));
    CHECK(plan.find("SEARCH m USING") != std::string::npos);
    // A failed return is looked up in the partial index of failed returns, not in ret's rows.
    if (select.sql.find("retcode") != std::string::npos) CHECK(plan.find("ret_failed_job") != std::string::npos);
  }
}

TEST_CASE("web job page: on PostgreSQL the page's queries can reach their indexes, never only a scan of ret",
          "[web][web-job-page][plan][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  const std::string database = brine::test::PostgresServer::Shared().CreateDatabase();
  Site pg({.database = database});
  for (const auto& select : AllQueries(database)) {
    const std::string plan =
        brine::test::PostgresServer::Shared().Query(database, "SET enable_seqscan = off; EXPLAIN " + Inlined(select));
    INFO(select.sql << "\n" << plan);
    CHECK(plan.find("Seq Scan on ret") == std::string::npos);
    CHECK(plan.find("Seq Scan on job_minion") == std::string::npos);
    CHECK(plan.find("Index") != std::string::npos);
  }
}
