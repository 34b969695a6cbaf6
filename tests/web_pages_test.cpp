// brine-web's pages over a filled store (web/src/*_page.cpp): the overview,
// /jobs with every filter, format and paging step, /active and /failures;
// hostile minion ids and returns stay text, CSV cells are guarded; and the
// same JSON from SQLite and PostgreSQL.
#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/job_listing_sql.h"
#include "brine/store/minion_report.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "brine/web/app.h"
#include "brine/web/auth.h"
#include "brine/web/http_server.h"
#include "support/http_client.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"
#include "support/web_site.h"

namespace fs = std::filesystem;
using brine::Value;
using brine::test::Http;
using brine::test::HttpReply;
using brine::test::TempDir;
namespace web = brine::web;

namespace {

constexpr const char* kHostileMinion = "<script>alert(1)</script>";
// The fake clock stands at 2026-11-26T10:00:00Z; every job is of that morning.
const brine::Micros kNow = brine::FromUnixMicros(1'795'687'200'000'000);

std::string JidAt(int minutes_before_now, int extra_us = 0) {
  return brine::FormatJid(kNow - std::chrono::minutes(minutes_before_now) +
                          std::chrono::microseconds(extra_us));
}

// The store: 12 cmd.run jobs a minute apart (09:00..09:11; the one of 09:00
// has a failed return from the hostile minion and a missing minion, and its
// user starts with '='), 3 test.ping jobs (hidden by default), a state.apply
// with a failed state on db1, a job with metadata, one running job (started
// a minute ago, a minion not returned) and the hourly rollups of one master.
void FillStore(const fs::path& db) {
  auto s = brine::store::OpenStore(db, {.master_id = "master1"});
  const std::string first = JidAt(60);
  s->SaveLoad(
      first,
      brine::ParseJson(
          R"({"fun":"cmd.run","arg":["echo <b>hi</b>"],"tgt":"*","tgt_type":"glob","user":"=cmd|' /C calc'!A0"})"),
      std::vector<std::string>{"web1", kHostileMinion, "absent1"});
  (void)s->Returner(Value::Map({{"id", "web1"},
                                {"jid", first},
                                {"fun", "cmd.run"},
                                {"return", "<script>alert(2)</script>"},
                                {"retcode", 0},
                                {"success", true}}));
  (void)s->Returner(Value::Map({{"id", kHostileMinion},
                                {"jid", first},
                                {"fun", "cmd.run"},
                                {"return", "boom"},
                                {"retcode", 1},
                                {"success", false}}));
  for (int i = 1; i < 12; ++i) {
    const std::string jid = JidAt(60 - i);
    s->SaveLoad(
        jid,
        brine::ParseJson(
            R"({"fun":"cmd.run","arg":["uptime"],"tgt":"web*","tgt_type":"glob","user":"alice"})"),
        std::vector<std::string>{"web1"});
    (void)s->Returner(Value::Map(
        {{"id", "web1"}, {"jid", jid}, {"fun", "cmd.run"}, {"return", "up"}, {"retcode", 0}}));
  }
  for (int i = 0; i < 3; ++i) {
    s->SaveLoad(JidAt(40 - i),
                brine::ParseJson(R"({"fun":"test.ping","arg":[],"tgt":"*","user":"root"})"),
                std::vector<std::string>{"web1"});
  }
  const std::string state_jid = JidAt(30);
  s->SaveLoad(state_jid,
              brine::ParseJson(R"({"fun":"state.apply","arg":[],"tgt":"db1","user":"root"})"),
              std::vector<std::string>{"db1"});
  const Value states = brine::ParseJson(R"({
    "pkg_|-nginx_|-nginx_|-installed": {"__id__": "nginx", "result": false, "comment": "<img src=x onerror=alert(3)>", "changes": {}, "duration": 10.0, "__run_num__": 0},
    "file_|-motd_|-/etc/motd_|-managed": {"__id__": "motd", "result": true, "comment": "ok", "changes": {}, "duration": 1.0, "__run_num__": 1}
  })");
  (void)s->Returner(Value::Map({{"id", "db1"},
                                {"jid", state_jid},
                                {"fun", "state.apply"},
                                {"return", states},
                                {"retcode", 2},
                                {"success", false}}));
  s->SaveLoad(
      JidAt(20),
      brine::ParseJson(
          R"({"fun":"cmd.run","arg":["ls"],"tgt":"web1","user":"bob","metadata":{"ticket":"OPS-1"}})"),
      std::vector<std::string>{"web1"});
  s->SaveLoad(JidAt(1),
              brine::ParseJson(R"({"fun":"state.highstate","arg":[],"tgt":"*","user":"root"})"),
              std::vector<std::string>{"web1", "web2"});
  (void)s->Returner(Value::Map({{"id", "web1"},
                                {"jid", JidAt(1)},
                                {"fun", "state.highstate"},
                                {"return", "done"},
                                {"retcode", 0}}));
  const std::vector<brine::store::HourCounts> hours = {{.hour = kNow - std::chrono::hours(1),
                                                        .jobs = 17,
                                                        .returns = 15,
                                                        .failures = 2,
                                                        .events = 7200},
                                                       {.hour = kNow - std::chrono::hours(30),
                                                        .jobs = 5,
                                                        .returns = 5,
                                                        .failures = 0,
                                                        .events = 100}};
  auto batch = s->BeginBatch();
  s->AddHourlyCounts(hours);
  s->PutMasterInfo({.version = "test",
                    .host = "<b>host</b>",
                    .pid = 42,
                    .started_us = brine::ToUnixMicros(kNow) - 3'600'000'000});
  s->PutCounters({{"received", 36000},
                  {"started_us", brine::ToUnixMicros(kNow) - 3'600'000'000},
                  {"heartbeat_us", brine::ToUnixMicros(kNow)},
                  {"commit_lag_us", 250000}});
  batch.Commit();
}

// brine-web in this process over FillStore's store, its clock at kNow,
// logged in; noisy functions test.ping and saltutil.find_job by default.
struct Site : brine::test::WebSite {
  std::vector<std::pair<std::string, std::string>> session;
  explicit Site(web::App::Options extra = {})
      : WebSite(kNow, FillStore, WithHidden(std::move(extra))) {
    session = brine::test::WithSession(Login());
  }
  static web::App::Options WithHidden(web::App::Options o) {
    if (o.hide_functions.empty()) o.hide_functions = {"test.ping", "saltutil.find_job"};
    return o;
  }
  HttpReply Get(const std::string& target) { return Http(port(), "GET", target, session); }
  Value Json(const std::string& target) {
    const HttpReply r = Get(target);
    INFO(target << " answered " << r.status << ": " << r.body);
    REQUIRE(r.status == 200);
    REQUIRE(r.Header("content-type") == "application/json");
    return brine::ParseJson(r.body);
  }
};

std::vector<std::string> Jids(const Value& page) {
  std::vector<std::string> out;
  for (const Value& j : page.Find("jobs")->as_list()) out.push_back(*j.FindString("jid"));
  return out;
}

}  // namespace

TEST_CASE("web pages: login lands on the overview, and the pages need a session",
          "[web][web-pages]") {
  Site w;
  CHECK(Http(w.port(), "GET", "/login?token=" + w.token).Header("location") == "/");
  for (const char* target :
       {"/?format=json", "/jobs?format=json", "/jobs?format=csv", "/active?format=json",
        "/failures?format=csv", "/minions?format=json", "/minions/db1?format=json"}) {
    INFO(target);
    CHECK(Http(w.port(), "GET", target).status == 401);
  }
  CHECK(Http(w.port(), "GET", "/jobs").Header("location") == "/login");
}

TEST_CASE(
    "web pages: /jobs lists newest first, hides noisy functions behind a toggle, and counts "
    "minions",
    "[web][web-pages]") {
  Site w;
  const Value page = w.Json("/jobs?format=json");
  const std::vector<std::string> jids = Jids(page);
  REQUIRE(jids.size() ==
          15);  // 12 cmd.run, the state.apply, the metadata job, the running job; no test.ping
  CHECK(jids.front() == JidAt(1));
  CHECK(std::is_sorted(jids.rbegin(), jids.rend()));
  CHECK(page.Find("next")->is_null());
  const Value& first = page.Find("jobs")->as_list().back();
  CHECK(*first.FindString("jid") == JidAt(60));
  CHECK(*first.FindString("start_time") == "2026-11-26T09:00:00.000000Z");
  CHECK(*first.FindString("function") == "cmd.run");
  CHECK(brine::ToJson(*first.Find("arguments")) == R"(["echo <b>hi</b>"])");
  CHECK(first.Find("expected")->as_int() == 3);
  CHECK(first.Find("returned")->as_int() == 2);
  CHECK(first.Find("failed")->as_int() == 1);
  CHECK(first.Find("missing")->as_int() == 1);

  CHECK(Jids(w.Json("/jobs?format=json&hidden=show")).size() == 18);
  const HttpReply html = w.Get("/jobs");
  REQUIRE(html.status == 200);
  CHECK_THAT(html.body,
             Catch::Contains(
                 "<a id=\"hidden-toggle\" href=\"/jobs?hidden=show\">Show hidden functions</a>"));
  CHECK_THAT(html.body, Catch::Contains("test.ping, saltutil.find_job"));
  CHECK(html.body.find(">test.ping<") == std::string::npos);
  const HttpReply shown = w.Get("/jobs?hidden=show");
  CHECK_THAT(shown.body, Catch::Contains("<td class=\"fun\">test.ping</td>"));
  CHECK_THAT(shown.body, Catch::Contains("Hide noisy functions"));
  CHECK_THAT(html.body, Catch::Contains("<td class=\"jid\"><a href=\"/jobs/" + JidAt(60) + "\">" +
                                        JidAt(60) + "</a>"));
}

TEST_CASE("web pages: under brine.web_base_path every page's links stay below the prefix",
          "[web][web-pages]") {
  Site w({.base_path = "/brine/"});
  CHECK(Http(w.port(), "GET", "/brine/login?token=" + w.token).Header("location") == "/brine/");
  for (const char* page : {"/brine/", "/brine/jobs?limit=2", "/brine/minions?limit=2",
                           "/brine/failures", "/brine/active"}) {
    const HttpReply r = w.Get(page);
    INFO(page << ": " << r.body);
    REQUIRE(r.status == 200);
    // Every link and form of the page: the prefix, or a static asset under it.
    for (std::size_t at = r.body.find("href=\""); at != std::string::npos;
         at = r.body.find("href=\"", at + 1)) {
      CHECK(r.body.compare(at + 6, 7, "/brine/") == 0);
    }
    for (std::size_t at = r.body.find("action=\""); at != std::string::npos;
         at = r.body.find("action=\"", at + 1)) {
      CHECK(r.body.compare(at + 8, 7, "/brine/") == 0);
    }
  }
  CHECK_THAT(w.Get("/brine/").body, Catch::Contains("data-chart-src=\"/brine/static/chart.min."));
  CHECK(w.Get("/brine/jobs?jid=" + JidAt(30)).Header("location") == "/brine/jobs/" + JidAt(30));
  CHECK(w.Get("/jobs").status == 404);
}

TEST_CASE("web pages: /jobs pages by jid with before= until the oldest job, never repeating one",
          "[web][web-pages]") {
  Site w;
  std::vector<std::string> all;
  std::string target = "/jobs?format=json&limit=4";
  int pages = 0;
  while (true) {
    const Value page = w.Json(target);
    for (const std::string& j : Jids(page)) all.push_back(j);
    ++pages;
    if (page.Find("next")->is_null()) break;
    REQUIRE(pages < 10);
    target = "/jobs?format=json&limit=4&before=" + page.Find("next")->as_string();
  }
  CHECK(pages == 4);  // 15 jobs: 4 + 4 + 4 + 3
  CHECK(all.size() == 15);
  CHECK(std::is_sorted(all.rbegin(), all.rend()));
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  // The HTML page's links carry the whole view.
  const HttpReply html = w.Get("/jobs?limit=4&search_function=cmd.run");
  CHECK_THAT(
      html.body,
      Catch::Contains("id=\"older\" href=\"/jobs?limit=4&amp;search_function=cmd.run&amp;before="));
  const HttpReply second = w.Get("/jobs?limit=4&search_function=cmd.run&before=" + JidAt(50));
  CHECK_THAT(second.body,
             Catch::Contains("id=\"newest\" href=\"/jobs?limit=4&amp;search_function=cmd.run\""));
  CHECK(w.Get("/jobs?limit=0").status == 400);
  CHECK(w.Get("/jobs?limit=abc&format=json").status == 400);
}

TEST_CASE("web pages: /jobs filters with salt-run's names and brine's", "[web][web-pages]") {
  Site w;
  CHECK(Jids(w.Json("/jobs?format=json&search_function=state.*")) ==
        std::vector<std::string>{JidAt(1), JidAt(30)});
  CHECK(Jids(w.Json("/jobs?format=json&search_function=state.apply,state.highstate")).size() == 2);
  CHECK(Jids(w.Json("/jobs?format=json&search_target=db*")) == std::vector<std::string>{JidAt(30)});
  CHECK(Jids(w.Json("/jobs?format=json&start_time=2026-11-26%2009:55&end_time=2026-11-26T09:58:00"))
            .empty());
  CHECK(Jids(w.Json(
            "/jobs?format=json&start_time=2026-11-26%2009:10&end_time=Nov%2026%202026%2009:30")) ==
        std::vector<std::string>{JidAt(30), JidAt(49), JidAt(50)});
  CHECK(Jids(w.Json("/jobs?format=json&search_metadata.ticket=OPS-1")) ==
        std::vector<std::string>{JidAt(20)});
  CHECK(Jids(w.Json("/jobs?format=json&search_metadata.ticket=OPS-2")).empty());
  CHECK(Jids(w.Json("/jobs?format=json&failed=yes")) ==
        std::vector<std::string>{JidAt(30), JidAt(60)});
  CHECK(Jids(w.Json("/jobs?format=json&returned=no")) == std::vector<std::string>{JidAt(20)});
  CHECK(Jids(w.Json("/jobs?format=json&user=bob")) == std::vector<std::string>{JidAt(20)});
  CHECK(Jids(w.Json("/jobs?format=json&minion=db1")) == std::vector<std::string>{JidAt(30)});
  CHECK(Jids(w.Json("/jobs?format=json&minion=" +
                    std::string("%3Cscript%3Ealert(1)%3C/script%3E"))) ==
        std::vector<std::string>{JidAt(60)});
  const HttpReply bad_time = w.Get("/jobs?start_time=yesterday-ish");
  CHECK(bad_time.status == 400);
  CHECK_THAT(bad_time.body,
             Catch::Contains("start_time: not a time salt-run reads: &#39;yesterday-ish&#39;"));
  CHECK(w.Get("/jobs?format=json&failed=maybe").status == 400);
  // The form shows the view it was given, escaped.
  const HttpReply form = w.Get("/jobs?search_target=%22%3E%3Cscript%3E");
  CHECK_THAT(form.body,
             Catch::Contains("name=\"search_target\" value=\"&quot;&gt;&lt;script&gt;\""));
  // The jump box answers with the job's page.
  CHECK(w.Get("/jobs?jid=" + JidAt(30)).Header("location") == "/jobs/" + JidAt(30));
}

TEST_CASE(
    "web pages: /jobs under a spent time budget answers a partial page with a link that resumes",
    "[web][web-pages]") {
  Site w({.page_budget = std::chrono::milliseconds(0)});
  const Value page = w.Json("/jobs?format=json&search_metadata.ticket=OPS-1");
  CHECK(!page.Find("complete")->as_bool());
  const HttpReply html = w.Get("/jobs?search_metadata.ticket=OPS-1");
  CHECK_THAT(
      html.body,
      Catch::Contains(
          "<p class=\"partial\" id=\"partial\">The time budget ran out: searched back to jid"));
  CHECK_THAT(html.body,
             Catch::Contains("<a id=\"continue\" href=\"/jobs?search_metadata.ticket=OPS-1"));
}

TEST_CASE(
    "web pages: /jobs as CSV has a header row, guards formulas and keeps hostile text as data",
    "[web][web-pages]") {
  Site w;
  const HttpReply csv = w.Get(
      "/jobs?format=csv&search_function=cmd.run&start_time=2026-11-26%2009:00&end_time=2026-11-26%"
      "2009:00");
  REQUIRE(csv.status == 200);
  CHECK(csv.Header("content-type") == "text/csv; charset=utf-8");
  CHECK(csv.body ==
        "jid,start_time,function,arguments,target,user,expected,returned,failed,missing\r\n" +
            JidAt(60) +
            ",2026-11-26T09:00:00.000000Z,cmd.run,\"[\"\"echo <b>hi</b>\"\"]\",*,'=cmd|' /C "
            "calc'!A0,3,2,1,1\r\n");
}

TEST_CASE("web pages: hostile minion ids, returns, comments and hosts are text on every page",
          "[web][web-pages]") {
  Site w;
  for (const char* target :
       {"/", "/jobs", "/jobs?hidden=show", "/failures", "/active", "/minions"}) {
    const HttpReply r = w.Get(target);
    INFO(target << ": " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.body.find("<script>") == std::string::npos);
    CHECK(r.body.find("<img") == std::string::npos);
    CHECK(r.body.find("<b>") == std::string::npos);
    CHECK(r.body.find("style=") == std::string::npos);
  }
  CHECK_THAT(w.Get("/failures").body,
             Catch::Contains("<td class=\"minion-id\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
  CHECK_THAT(w.Get("/").body, Catch::Contains("&lt;b&gt;host&lt;/b&gt;"));
}

TEST_CASE(
    "web pages: the overview shows hourly series, ingest, commit lag, size and the latest failures",
    "[web][web-pages]") {
  Site w;
  const Value v = w.Json("/?format=json");
  const Value& day = *v.Find("hours_24h");
  REQUIRE(day.as_list().size() == 24);
  CHECK(*day.as_list().back().FindString("hour") == "2026-11-26T10:00:00.000000Z");
  const Value& last = day.as_list()[22];
  CHECK(*last.FindString("hour") == "2026-11-26T09:00:00.000000Z");
  CHECK(last.Find("jobs")->as_int() == 17);
  CHECK(last.Find("events")->as_int() == 7200);
  REQUIRE(v.Find("hours_7d")->as_list().size() == 168);
  std::int64_t week_jobs = 0;
  for (const Value& h : v.Find("hours_7d")->as_list()) week_jobs += h.Find("jobs")->as_int();
  CHECK(week_jobs == 22);
  CHECK(v.Find("last_hour")->Find("events_per_s")->as_float() == Approx(2.0));
  const Value& master = v.Find("masters")->as_list().at(0);
  CHECK(*master.FindString("master_id") == "master1");
  CHECK(master.Find("commit_lag_s")->as_float() == Approx(0.25));
  CHECK(master.Find("ingest_per_s")->as_float() == Approx(10.0));
  CHECK(v.Find("store")->Find("bytes")->as_int() > 0);
  CHECK(Jids(Value::Map({{"jobs", *v.Find("latest_failures")}})) ==
        std::vector<std::string>{JidAt(30), JidAt(60)});

  const HttpReply html = w.Get("/");
  REQUIRE(html.status == 200);
  CHECK_THAT(html.body,
             Catch::Contains("<canvas id=\"chart-24h\" data-chart-src=\"/static/chart.min."));
  CHECK_THAT(html.body, Catch::Contains("<td class=\"commit-lag\">0.250 s</td>"));
  CHECK_THAT(html.body, Catch::Contains("<table class=\"jobs\" id=\"latest-failures\">"));
  CHECK(html.body.find("master-filter") == std::string::npos);  // one master: no filter
  // The chart library is served from the binary under its content hash.
  const std::size_t at = html.body.find("data-chart-src=\"") + 16;
  const HttpReply chart = w.Get(html.body.substr(at, html.body.find('"', at) - at));
  CHECK(chart.status == 200);
  CHECK(chart.Header("content-type") == "text/javascript; charset=utf-8");
  CHECK_THAT(chart.Header("cache-control"), Catch::Contains("immutable"));
  CHECK_THAT(chart.body, Catch::Contains("Chart.js v3"));
  // A master filter narrows the series; a master that wrote nothing has zeros.
  const Value other = w.Json("/?format=json&master=other");
  CHECK(other.Find("hours_24h")->as_list()[22].Find("jobs")->as_int() == 0);
  CHECK(other.Find("masters")->as_list().empty());
  CHECK_THAT(w.Get("/?master=other").body, Catch::Contains("id=\"master-filter\""));
}

TEST_CASE(
    "web pages: with several masters the overview offers a filter and each master's series alone",
    "[web][web-pages]") {
  Site w;
  {
    auto s = brine::store::OpenStore(w.dir / "brine.sqlite", {.master_id = "master2"});
    const std::vector<brine::store::HourCounts> hours = {{.hour = kNow - std::chrono::hours(1),
                                                          .jobs = 3,
                                                          .returns = 0,
                                                          .failures = 0,
                                                          .events = 36}};
    auto batch = s->BeginBatch();
    s->AddHourlyCounts(hours);
    s->PutCounters({{"received", 5}, {"commit_lag_us", 1500000}});
    batch.Commit();
  }
  const Value all = w.Json("/?format=json");
  CHECK(all.Find("hours_24h")->as_list()[22].Find("jobs")->as_int() == 20);
  CHECK(all.Find("masters")->as_list().size() == 2);
  const Value second = w.Json("/?format=json&master=master2");
  CHECK(*second.FindString("master") == "master2");
  CHECK(second.Find("hours_24h")->as_list()[22].Find("jobs")->as_int() == 3);
  REQUIRE(second.Find("masters")->as_list().size() == 1);
  CHECK(second.Find("masters")->as_list()[0].Find("commit_lag_s")->as_float() == Approx(1.5));
  const HttpReply html = w.Get("/?master=master2");
  CHECK_THAT(html.body, Catch::Contains("<form class=\"filters\" id=\"master-filter\""));
  CHECK_THAT(html.body, Catch::Contains("<option value=\"master2\" selected>master2</option>"));
  CHECK_THAT(w.Get("/").body, Catch::Contains("<option value=\"master1\">master1</option>"));
}

TEST_CASE("web pages: the overview lists the bus gaps of the last 7 days, an open one as open, by master",
          "[web][web-pages]") {
  Site w;
  CHECK_THAT(w.Get("/").body, Catch::Contains("id=\"no-gaps\""));
  using brine::store::GapReason;
  {
    auto s = brine::store::OpenStore(w.dir / "brine.sqlite", {.master_id = "master1"});
    auto batch = s->BeginBatch();
    // Older than 7 days: not listed.
    s->OpenBusGap(GapReason::kMasterWentAway, kNow - std::chrono::hours(24 * 8), std::nullopt);
    s->CloseBusGap(kNow - std::chrono::hours(24 * 8) + std::chrono::seconds(5));
    s->OpenBusGap(GapReason::kSocketReplaced, kNow - std::chrono::hours(3), kNow - std::chrono::hours(3));
    s->CloseBusGap(kNow - std::chrono::hours(3) + std::chrono::seconds(2));
    batch.Commit();
  }
  {
    auto s = brine::store::OpenStore(w.dir / "brine.sqlite", {.master_id = "master2"});
    auto batch = s->BeginBatch();
    s->OpenBusGap(GapReason::kPermissionDenied, kNow - std::chrono::minutes(10), std::nullopt);
    batch.Commit();
  }
  const Value v = w.Json("/?format=json");
  const auto& gaps = v.Find("bus_gaps")->as_list();
  REQUIRE(gaps.size() == 2);
  // The newest first; the open one has no end.
  CHECK(*gaps[0].FindString("master_id") == "master2");
  CHECK(*gaps[0].FindString("reason") == "permission denied");
  CHECK(gaps[0].Find("gap_end")->is_null());
  CHECK(*gaps[1].FindString("reason") == "socket replaced");
  CHECK(*gaps[1].FindString("gap_end") == "2026-11-26T07:00:02.000000Z");
  CHECK(*gaps[1].FindString("last_frame_time") == "2026-11-26T07:00:00.000000Z");
  const HttpReply html = w.Get("/");
  CHECK_THAT(html.body, Catch::Contains("<table id=\"bus-gaps\">"));
  CHECK_THAT(html.body, Catch::Contains("<strong class=\"partial\">open</strong>"));
  CHECK_THAT(html.body, Catch::Contains("<td class=\"gap-reason\">socket replaced</td>"));
  const Value one = w.Json("/?format=json&master=master1");
  REQUIRE(one.Find("bus_gaps")->as_list().size() == 1);
  CHECK(*one.Find("bus_gaps")->as_list()[0].FindString("master_id") == "master1");
}

TEST_CASE(
    "web pages: /active shows the running job's unreturned minions, as brine-run jobs.active does",
    "[web][web-pages]") {
  Site w;
  const Value v = w.Json("/active?format=json");
  REQUIRE(v.Find("active")->as_list().size() == 1);
  const Value& job = v.Find("active")->as_list()[0];
  CHECK(*job.FindString("jid") == JidAt(1));
  CHECK(brine::ToJson(*job.Find("running")) == R"({"web2":null})");
  CHECK(brine::ToJson(*job.Find("returned")) == R"(["web1"])");
  const HttpReply html = w.Get("/active");
  CHECK_THAT(html.body,
             Catch::Contains("<li><span class=\"minion-id\">web2</span> (no reply yet)</li>"));
  CHECK(w.Get("/active?format=csv").body ==
        "jid,function,target,minion,pid\r\n" + JidAt(1) + ",state.highstate,*,web2,\r\n");
  // Past the window the job no longer counts as running.
  w.clock.Set(kNow + std::chrono::minutes(10));
  CHECK(w.Json("/active?format=json").Find("active")->as_list().empty());
  CHECK_THAT(w.Get("/active").body, Catch::Contains("id=\"no-active\""));
}

TEST_CASE("web pages: /failures groups failed returns by state ID and by minion in a window",
          "[web][web-pages]") {
  Site w;
  const Value v = w.Json("/failures?format=json");
  CHECK(v.Find("jobs")->as_int() == 2);
  REQUIRE(v.Find("by_state")->as_list().size() == 1);
  const Value& nginx = v.Find("by_state")->as_list()[0];
  CHECK(*nginx.FindString("state_id") == "nginx");
  CHECK(nginx.Find("failures")->as_int() == 1);
  CHECK(brine::ToJson(*nginx.Find("minions")) == R"(["db1"])");
  CHECK(*nginx.FindString("comment") == "<img src=x onerror=alert(3)>");
  const Value& by_minion = *v.Find("by_minion");
  REQUIRE(by_minion.as_list().size() == 2);
  CHECK(
      brine::ToJson(*v.Find("returns")) ==
      "[{\"jid\":\"" + JidAt(30) +
          R"(","minion":"db1","function":"state.apply","retcode":2,"failed_states":["nginx"]},)" +
          "{\"jid\":\"" + JidAt(60) +
          R"(","minion":"<script>alert(1)</script>","function":"cmd.run","retcode":1,"failed_states":[]}])");
  // A window after both failures holds none.
  const Value later = w.Json("/failures?format=json&since=2026-11-26%2009:45");
  CHECK(later.Find("returns")->as_list().empty());
  CHECK(
      w.Json("/failures?format=json&until=2026-11-26%2009:15").Find("returns")->as_list().size() ==
      1);
  CHECK(w.Get("/failures?since=never").status == 400);
  const HttpReply csv = w.Get("/failures?format=csv");
  CHECK(csv.body == "jid,minion,function,retcode,failed_states\r\n" + JidAt(30) +
                        ",db1,state.apply,2,nginx\r\n" + JidAt(60) +
                        ",<script>alert(1)</script>,cmd.run,1,\r\n");
  const HttpReply html = w.Get("/failures");
  CHECK_THAT(html.body, Catch::Contains("<td class=\"state-id\">nginx</td><td "
                                        "class=\"num\">1</td><td class=\"minions\">db1</td>"));
}

TEST_CASE("web pages: every page answers the same JSON and CSV on PostgreSQL as on SQLite",
          "[web][web-pages][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  Site lite;
  Site pg({.database = brine::test::PostgresServer::Shared().CreateDatabase()});
  for (const std::string& target :
       {std::string("/jobs?format=json"), std::string("/jobs?format=json&hidden=show&limit=5"),
        "/jobs?format=json&limit=5&before=" + JidAt(45), std::string("/jobs?format=csv"),
        std::string("/jobs?format=json&search_metadata.ticket=OPS-1"),
        std::string("/jobs?format=json&failed=yes"),
        std::string("/jobs?format=json&minion=db1&user=root"),
        std::string("/jobs?format=json&search_target=web*"),
        std::string("/jobs?format=json&start_time=2026-11-26%2009:10&end_time=2026-11-26%2009:30"),
        std::string("/jobs?format=json&returned=no&hidden=show"),
        std::string("/jobs?format=json&search_function=state.*,test.*"),
        std::string("/jobs?format=json&failed=no&limit=3&before=" + JidAt(30)),
        std::string("/failures?format=json&since=2026-11-26%2009:15"),
        std::string("/active?format=json"), std::string("/failures?format=json"),
        std::string("/failures?format=csv")}) {
    INFO(target);
    const HttpReply a = lite.Get(target);
    const HttpReply b = pg.Get(target);
    CHECK(a.status == 200);
    CHECK(b.status == 200);
    CHECK(a.body == b.body);
  }
  // The overview differs only in where the store lives.
  Value a = lite.Json("/?format=json");
  Value b = pg.Json("/?format=json");
  CHECK(*b.Find("store")->FindString("location") == "server");
  CHECK(b.Find("store")->Find("bytes")->is_null());
  a.Erase("store");
  b.Erase("store");
  CHECK(brine::ToJson(a) == brine::ToJson(b));
  for (const char* page : {"/", "/jobs", "/jobs?hidden=show&limit=3", "/minions", "/minions/db1",
                           "/active", "/failures"}) {
    INFO(page);
    CHECK(pg.Get(page).status == 200);
  }
  // The minions' records alike; their last_seen is each store's arrival time.
  for (const std::string& target :
       {std::string("/minions?format=json"), std::string("/minions?format=csv"),
        std::string("/minions?format=json&limit=2&after=absent1"),
        std::string("/minions/db1?format=json")}) {
    INFO(target);
    std::string a_body = lite.Get(target).body;
    std::string b_body = pg.Get(target).body;
    const std::regex stamp("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z");
    CHECK(std::regex_replace(a_body, stamp, "T") == std::regex_replace(b_body, stamp, "T"));
  }
}

TEST_CASE(
    "web pages: /minions gives each minion's record in a window, its last return and last "
    "highstate",
    "[web][web-pages]") {
  Site w;
  const Value v = w.Json("/minions?format=json");
  std::vector<std::string> names;
  for (const Value& m : v.Find("minions")->as_list()) names.push_back(*m.FindString("minion"));
  CHECK(names == std::vector<std::string>{kHostileMinion, "absent1", "db1", "web1", "web2"});
  auto record = [&](std::size_t i) {
    const Value& m = v.Find("minions")->as_list().at(i);
    return std::to_string(m.Find("targeted")->as_int()) + "/" +
           std::to_string(m.Find("returned")->as_int()) + "/" +
           std::to_string(m.Find("failed")->as_int()) + "/" +
           std::to_string(m.Find("missing")->as_int());
  };
  CHECK(record(0) == "1/1/1/0");
  CHECK(record(1) == "1/0/0/1");
  CHECK(record(2) == "1/1/1/0");
  CHECK(record(3) == "17/13/0/4");  // 12 cmd.run, 3 test.ping, the metadata job and the highstate
  CHECK(record(4) == "1/0/0/1");
  const Value& absent = v.Find("minions")->as_list()[1];
  CHECK(absent.Find("last_seen")->is_null());
  CHECK(absent.Find("last_highstate")->is_null());
  const Value& db1 = v.Find("minions")->as_list()[2];
  CHECK(db1.Find("last_seen")->is_string());
  CHECK(brine::ToJson(*db1.Find("last_highstate")).find("\"function\":\"state.apply\"") !=
        std::string::npos);
  CHECK(db1.Find("last_highstate")->Find("succeeded")->as_int() == 1);
  CHECK(db1.Find("last_highstate")->Find("changed")->as_int() == 0);
  CHECK(db1.Find("last_highstate")->Find("failed")->as_int() == 1);
  CHECK(brine::ToJson(*db1.Find("last_highstate")->Find("failed_states")) == R"(["nginx"])");
  const Value& web1 = v.Find("minions")->as_list()[3];
  CHECK(*web1.Find("last_highstate")->FindString("jid") == JidAt(1));
  CHECK(web1.Find("last_highstate")
            ->Find("not_states")
            ->as_bool());  // it returned "done", not states

  // A window of the last 30 minutes counts the whole hour of 09:00 (the
  // rollups' hours); one from 10:00 holds no job.
  const Value recent = w.Json("/minions?format=json&since=2026-11-26%2009:30:30");
  CHECK(*recent.FindString("counted_since") == "2026-11-26T09:00:00.000000Z");
  REQUIRE(recent.Find("minions")->as_list().size() == 5);
  CHECK(recent.Find("minions")->as_list()[3].Find("targeted")->as_int() == 17);  // web1
  CHECK(w.Json("/minions?format=json&since=2026-11-26%2010:00:00").Find("minions")->as_list().empty());
  CHECK(w.Get("/minions?since=soon").status == 400);

  // Keyset paging on the name.
  const Value first = w.Json("/minions?format=json&limit=2");
  CHECK(first.Find("minions")->as_list().size() == 2);
  CHECK(*first.FindString("next") == "absent1");
  const Value second = w.Json("/minions?format=json&limit=2&after=absent1");
  CHECK(*second.Find("minions")->as_list()[0].FindString("minion") == "db1");
  CHECK(*second.FindString("next") == "web1");
  const Value last = w.Json("/minions?format=json&limit=2&after=web1");
  CHECK(last.Find("minions")->as_list().size() == 1);
  CHECK(last.Find("next")->is_null());
  CHECK_THAT(w.Get("/minions?limit=2").body,
             Catch::Contains("<a id=\"next\" href=\"/minions?limit=2&amp;after=absent1\">"));

  const HttpReply html = w.Get("/minions");
  REQUIRE(html.status == 200);
  CHECK(html.body.find("<script>alert") == std::string::npos);
  CHECK_THAT(
      html.body,
      Catch::Contains(
          "<td class=\"minion-id\"><a href=\"/minions/%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">"
          "&lt;script&gt;alert(1)&lt;/script&gt;</a>"));
  CHECK_THAT(html.body, Catch::Contains("1 ok, <span class=\"result-changed\">0 changed</span>, "
                                        "<span class=\"state-failed\">1 failed</span>"));
  const HttpReply csv = w.Get("/minions?format=csv&limit=3");
  CHECK_THAT(csv.body, Catch::StartsWith(
                           "minion,targeted,returned,failed,missing,last_seen,last_highstate_jid,"
                           "states_succeeded,states_changed,states_failed,failed_states\r\n"
                           "<script>alert(1)</script>,1,1,1,0,"));
  CHECK_THAT(csv.body, Catch::Contains("\r\nabsent1,1,0,0,1,,,,,,\r\n"));
}

TEST_CASE(
    "web pages: /minions/<id> shows one minion, a hostile id as text, and an unknown one as zeros",
    "[web][web-pages]") {
  Site w;
  const Value db1 = w.Json("/minions/db1?format=json");
  CHECK(*db1.FindString("minion") == "db1");
  CHECK(db1.Find("targeted")->as_int() == 1);
  CHECK(db1.Find("failed")->as_int() == 1);
  CHECK(*db1.Find("last_highstate")->FindString("jid") == JidAt(30));
  const HttpReply html = w.Get("/minions/db1");
  CHECK_THAT(html.body,
             Catch::Contains("<ul id=\"failed-states\"><li class=\"state-id\">nginx</li></ul>"));
  CHECK_THAT(html.body,
             Catch::Contains("<a id=\"its-jobs\" href=\"/jobs?hidden=show&amp;minion=db1\">"));
  const HttpReply hostile = w.Get("/minions/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
  REQUIRE(hostile.status == 200);
  CHECK(hostile.body.find("<script>alert") == std::string::npos);
  CHECK_THAT(hostile.body,
             Catch::Contains("<span id=\"minion\">&lt;script&gt;alert(1)&lt;/script&gt;</span>"));
  const Value nobody = w.Json("/minions/nobody?format=json");
  CHECK(nobody.Find("targeted")->as_int() == 0);
  CHECK(nobody.Find("last_seen")->is_null());
  CHECK(nobody.Find("last_highstate")->is_null());
}

TEST_CASE(
    "web pages: a last highstate is state.highstate or state.apply with keyword arguments only",
    "[web][web-pages]") {
  Site w;
  {
    auto s = brine::store::OpenStore(w.dir / "brine.sqlite");
    const Value ok_state = brine::ParseJson(
        R"({"file_|-motd_|-/etc/motd_|-managed": {"__id__": "motd", "result": true, "comment": "",
            "changes": {"diff": "new"}, "__run_num__": 0}})");
    // Newer than the highstate of 09:30, but naming a state: not a highstate.
    s->SaveLoad(JidAt(10), brine::ParseJson(R"({"fun":"state.apply","arg":["nginx"],"tgt":"db1"})"),
                std::vector<std::string>{"db1"});
    (void)s->Returner(Value::Map({{"id", "db1"},
                                  {"jid", JidAt(10)},
                                  {"fun", "state.apply"},
                                  {"return", ok_state},
                                  {"retcode", 0}}));
    CHECK(*w.Json("/minions/db1?format=json").Find("last_highstate")->FindString("jid") ==
          JidAt(30));
    // test=True only: a highstate, with one changed state.
    s->SaveLoad(JidAt(5),
                brine::ParseJson(
                    R"({"fun":"state.apply","arg":[{"test":true,"__kwarg__":true}],"tgt":"db1"})"),
                std::vector<std::string>{"db1"});
    (void)s->Returner(Value::Map({{"id", "db1"},
                                  {"jid", JidAt(5)},
                                  {"fun", "state.apply"},
                                  {"return", ok_state},
                                  {"retcode", 0}}));
  }
  const Value run = *w.Json("/minions/db1?format=json").Find("last_highstate");
  CHECK(*run.FindString("jid") == JidAt(5));
  CHECK(run.Find("succeeded")->as_int() == 1);
  CHECK(run.Find("changed")->as_int() == 1);
  CHECK(run.Find("failed")->as_int() == 0);
  CHECK(!run.Find("not_states")->as_bool());
}

TEST_CASE("web pages: the minion report's queries search indexes and never scan ret, on SQLite",
          "[web][web-pages][plan]") {
  Site w;
  const std::string database = (w.dir / "brine.sqlite").string();
  {
    auto s = brine::store::OpenStore(database);
    REQUIRE(s->Maintenance() != nullptr);
    s->Maintenance()->RefreshStatistics();
  }
  for (const std::string& sql : brine::store::MinionReportQueries(database)) {
    std::string plan;
    brine::store::OpenSqlEngine(database)->Run("EXPLAIN QUERY PLAN " + sql,
                                               {{"hour_min", Value("0")},
                                                {"hour_end", Value("~")},
                                                {"after", Value("")},
                                                {"limit", Value(10)},
                                                {"minion", Value("web1")},
                                                {"look_back", Value(5)},
                                                {"cut", Value(0)},
                                                {"jid", Value(JidAt(1))}},
                                               {}, [&](brine::store::SqlResult&& r) {
                                                 for (const auto& row : r.rows)
                                                   plan += row.back().as_string() + "\n";
                                               });
    INFO(sql << "\n" << plan);
    CHECK(plan.find("SCAN ret") == std::string::npos);
    CHECK(plan.find("SCAN r\n") == std::string::npos);
    CHECK(plan.find("SCAN l\n") == std::string::npos);
    CHECK(plan.find("SCAN event") == std::string::npos);
    CHECK(plan.find("SEARCH") != std::string::npos);
  }
}

TEST_CASE(
    "web pages: on PostgreSQL the minion report's queries can reach their indexes, never only a "
    "scan of ret",
    "[web][web-pages][plan][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  const std::string database = brine::test::PostgresServer::Shared().CreateDatabase();
  Site pg({.database = database});
  for (std::string sql : brine::store::MinionReportQueries(database)) {
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{":hour_min", "'0'"},
                                                          {":hour_end", "'~'"},
                                                          {":after", "''"},
                                                          {":limit", "10"},
                                                          {":minion", "'web1'"},
                                                          {":look_back", "5"},
                                                          {":cut", "0"},
                                                          {":jid", "'" + JidAt(1) + "'"}}) {
      for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name))
        sql.replace(at, name.size(), value);
    }
    const std::string plan = brine::test::PostgresServer::Shared().Query(
        database, "SET enable_seqscan = off; EXPLAIN " + sql);
    INFO(sql << "\n" << plan);
    CHECK(plan.find("Seq Scan on ret") == std::string::npos);
    CHECK(plan.find("Index") != std::string::npos);
  }
}

namespace {

// A second master's jobs in `db`: a failed cmd.run (09:50), a test.ping and a
// job it knows only from a return (a stub: its publishing master unknown).
void FillSecondMaster(const std::string& db) {
  auto s = brine::store::OpenStore(db, {.master_id = "master2"});
  s->SaveLoad(JidAt(10, 7),
              brine::ParseJson(R"({"fun":"cmd.run","arg":["false"],"tgt":"db2","user":"carol"})"),
              std::vector<std::string>{"db2"});
  (void)s->Returner(Value::Map({{"id", "db2"},
                                {"jid", JidAt(10, 7)},
                                {"fun", "cmd.run"},
                                {"return", "no"},
                                {"retcode", 1}}));
  s->SaveLoad(JidAt(9, 7), brine::ParseJson(R"({"fun":"test.ping","arg":[],"tgt":"db2"})"),
              std::vector<std::string>{"db2"});
  (void)s->Returner(Value::Map({{"id", "db2"},
                                {"jid", JidAt(8, 7)},
                                {"fun", "cmd.run"},
                                {"return", "stub"},
                                {"retcode", 1}}));
}

// A Site on SQLite, and one on PostgreSQL when a server can run here.
std::vector<std::unique_ptr<Site>> OnBothBackends() {
  std::vector<std::unique_ptr<Site>> sites;
  sites.push_back(std::make_unique<Site>());
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("PostgreSQL half SKIPPED: " << *why);
  } else {
    sites.push_back(std::make_unique<Site>(
        web::App::Options{.database = brine::test::PostgresServer::Shared().CreateDatabase()}));
  }
  return sites;
}

// `sql` with each `$N` replaced by its bind as a quoted SQL literal, highest N first.
std::string Inline(const brine::store::JobListingSql& q) {
  std::string sql = q.sql;
  for (std::size_t n = q.binds.size(); n >= 1; --n) {
    const std::string name = "$" + std::to_string(n);
    std::string literal = "'";
    for (const char c : q.binds[n - 1])
      literal += c == '\'' ? std::string("''") : std::string(1, c);
    literal += "'";
    for (auto at = sql.find(name); at != std::string::npos;
         at = sql.find(name, at + literal.size()))
      sql.replace(at, name.size(), literal);
  }
  return sql;
}

// The filters brine-web's master filter reads with: /jobs's default page of a
// window, and the overview's latest failures of a day.
std::vector<brine::store::JobFilter> MasterFilters() {
  return {{.jid_min = JidAt(120),
           .jid_max = JidAt(0) + "~",
           .exclude_functions = {"test.ping", "saltutil.find_job"},
           .limit = 50,
           .master = "master2",
           .with_counts = true},
          {.jid_min = JidAt(24 * 60),
           .has_failures = true,
           .limit = 10,
           .master = "master2",
           .with_counts = true}};
}

}  // namespace

TEST_CASE(
    "web pages: /jobs?master= and the overview's latest failures keep the jobs that master "
    "published, on both backends",
    "[web][web-pages][master]") {
  std::vector<std::unique_ptr<Site>> sites = OnBothBackends();
  std::vector<std::string> bodies;
  for (auto& site : sites) {
    Site& w = *site;
    FillSecondMaster(w.database);
    const std::vector<std::string> second = Jids(w.Json("/jobs?format=json&master=master2"));
    CHECK(second == std::vector<std::string>{JidAt(10, 7)});  // test.ping hidden, the stub unknown
    CHECK(Jids(w.Json("/jobs?format=json&master=master2&hidden=show")) ==
          std::vector<std::string>{JidAt(9, 7), JidAt(10, 7)});
    const std::vector<std::string> first =
        Jids(w.Json("/jobs?format=json&master=master1&limit=500"));
    CHECK(first.size() == 15);  // every job of FillStore but the 3 hidden test.ping
    CHECK(std::find(first.begin(), first.end(), JidAt(10, 7)) == first.end());
    CHECK(std::find(first.begin(), first.end(), JidAt(8, 7)) == first.end());
    // Without the filter the stub is listed: it is only its master that is unknown.
    const std::vector<std::string> all = Jids(w.Json("/jobs?format=json&limit=500"));
    CHECK(std::find(all.begin(), all.end(), JidAt(8, 7)) != all.end());
    CHECK(Jids(w.Json("/jobs?format=json&master=nobody")).empty());
    // The overview's latest failures follow its master filter, and link to that master's.
    const Value overview = w.Json("/?format=json&master=master2");
    CHECK(Jids(Value::Map({{"jobs", *overview.Find("latest_failures")}})) ==
          std::vector<std::string>{JidAt(10, 7)});
    const Value overview1 = w.Json("/?format=json&master=master1");
    CHECK(Jids(Value::Map({{"jobs", *overview1.Find("latest_failures")}})) ==
          std::vector<std::string>{JidAt(30), JidAt(60)});
    CHECK_THAT(w.Get("/?master=master2").body,
               Catch::Contains("href=\"/jobs?failed=yes&amp;hidden=show&amp;master=master2\""));
    const HttpReply html = w.Get("/jobs?master=master2");
    REQUIRE(html.status == 200);
    CHECK_THAT(html.body, Catch::Contains("<input name=\"master\" value=\"master2\""));
    bodies.push_back(w.Get("/jobs?format=json&master=master2&hidden=show").body + "\n" +
                     w.Get("/jobs?format=csv&master=master1").body);
  }
  if (bodies.size() == 2) CHECK(bodies[0] == bodies[1]);
}

TEST_CASE(
    "web pages: a master filter reads job along its jid range and looks its master up by name, "
    "on SQLite",
    "[web][web-pages][master][plan]") {
  Site w;
  const std::string database = (w.dir / "brine.sqlite").string();
  FillSecondMaster(database);
  {
    auto s = brine::store::OpenStore(database);
    REQUIRE(s->Maintenance() != nullptr);
    s->Maintenance()->RefreshStatistics();
  }
  for (const brine::store::JobFilter& f : MasterFilters()) {
    const brine::store::JobListingSql q = brine::store::JobListingQuery(database, f);
    std::string plan;
    brine::store::OpenSqlEngine(database)->Run("EXPLAIN QUERY PLAN " + Inline(q), {}, {},
                                               [&](brine::store::SqlResult&& r) {
                                                 for (const auto& row : r.rows)
                                                   plan += row.back().as_string() + "\n";
                                               });
    INFO(Inline(q) << "\n" << plan);
    CHECK_THAT(q.sql, Catch::Contains("master_id = (SELECT id FROM master WHERE name = $"));
    CHECK(plan.find("SCAN job") == std::string::npos);
    CHECK_THAT(plan,
               Catch::Contains("SEARCH job USING INDEX sqlite_autoindex_job_1 (jid>? AND jid<?)") ||
                   Catch::Contains("SEARCH job USING INDEX sqlite_autoindex_job_1 (jid>?)"));
    CHECK_THAT(plan, Catch::Contains(
                         "SEARCH master USING COVERING INDEX sqlite_autoindex_master_1 (name=?)"));
    CHECK(plan.find("SCAN ret") == std::string::npos);
  }
}

TEST_CASE(
    "web pages: on PostgreSQL a master filter reads job through its jid index, never a scan of "
    "job",
    "[web][web-pages][master][plan][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  const std::string database = brine::test::PostgresServer::Shared().CreateDatabase();
  Site pg({.database = database});
  FillSecondMaster(database);
  for (const brine::store::JobFilter& f : MasterFilters()) {
    const std::string sql = Inline(brine::store::JobListingQuery(database, f));
    const std::string plan = brine::test::PostgresServer::Shared().Query(
        database, "SET enable_seqscan = off; EXPLAIN " + sql);
    INFO(sql << "\n" << plan);
    CHECK(plan.find("Seq Scan on job") == std::string::npos);
    // Walked backward under the LIMIT, or as a bitmap of the range: job's rows
    // come from the jid index only, and master_id is a filter on them.
    CHECK_THAT(plan, Catch::Contains("Index Scan Backward using job_jid_key on job") ||
                         Catch::Contains("Bitmap Index Scan on job_jid_key"));
    CHECK_THAT(plan, Catch::Contains("(master_id = $"));
    CHECK_THAT(plan, Catch::Contains("using master_name_key on master"));
  }
}

TEST_CASE(
    "web pages: a minion's last seen is its latest event of any kind, a salt/auth or start event "
    "after its last return included, on both backends",
    "[web][web-pages][last-seen]") {
  std::vector<std::unique_ptr<Site>> sites = OnBothBackends();
  for (auto& site : sites) {
    Site& w = *site;
    INFO(w.database);
    {
      auto s = brine::store::OpenStore(w.database);
      // absent1 never returned (targeted at 09:00): its only recent event is a
      // salt/auth at 09:55; a rejected one at 09:58 is no sign of life. web2
      // never returned either: its minion start at 09:57. ghost was never
      // targeted: an accepted salt/auth at 09:56.
      using brine::ParseJson;
      using std::chrono::minutes;
      std::vector<brine::store::Event> events{
          {.tag = "salt/auth",
           .data = ParseJson(R"({"id":"absent1","act":"accept","result":true})"),
           .received = kNow - minutes(5)},
          {.tag = "salt/auth",
           .data = ParseJson(R"({"id":"ghost","act":"accept","result":true})"),
           .received = kNow - minutes(4)},
          {.tag = "salt/minion/web2/start",
           .data = ParseJson(R"({"cmd":"_minion_event"})"),
           .received = kNow - minutes(3)},
          {.tag = "salt/auth",
           .data = ParseJson(R"({"id":"absent1","act":"reject","result":false})"),
           .received = kNow - minutes(2)},
      };
      s->EventReturn(events);
    }
    const Value v = w.Json("/minions?format=json");
    auto seen = [&](const std::string& name) -> std::string {
      for (const Value& m : v.Find("minions")->as_list()) {
        if (*m.FindString("minion") == name)
          return m.Find("last_seen")->is_null() ? "null" : *m.FindString("last_seen");
      }
      return "not listed";
    };
    CHECK(seen("absent1") == "2026-11-26T09:55:00.000000Z");
    CHECK(seen("web2") == "2026-11-26T09:57:00.000000Z");
    CHECK(seen("ghost") == "not listed");  // no job of the window expected it
    CHECK(*w.Json("/minions/absent1?format=json").FindString("last_seen") ==
          "2026-11-26T09:55:00.000000Z");
    const Value ghost = w.Json("/minions/ghost?format=json");
    CHECK(ghost.Find("targeted")->as_int() == 0);
    CHECK(*ghost.FindString("last_seen") == "2026-11-26T09:56:00.000000Z");
    // A salt/auth before the window's start is not read: ghost's of 09:56 is
    // before a window from 09:56:30.
    const Value later = w.Json("/minions/ghost?format=json&since=2026-11-26%2009:56:30");
    CHECK(later.Find("last_seen")->is_null());
    CHECK_THAT(w.Get("/minions/absent1").body, Catch::Contains("2026-11-26T09:55:00"));
  }
}

TEST_CASE(
    "web pages: /minions counts whole hours of the jobs' start, from the store's rollups, and "
    "says which",
    "[web][web-pages][minions-hours]") {
  Site w;
  {
    // A job three hours before the others (07:00), and one at 07:59.
    auto s = brine::store::OpenStore(w.database);
    s->SaveLoad(JidAt(180), brine::ParseJson(R"({"fun":"cmd.run","arg":["w"],"tgt":"web1"})"),
                std::vector<std::string>{"web1"});
    s->SaveLoad(JidAt(121), brine::ParseJson(R"({"fun":"cmd.run","arg":["w"],"tgt":"web1"})"),
                std::vector<std::string>{"web1"});
  }
  auto web1 = [](const Value& page) {
    for (const Value& m : page.Find("minions")->as_list()) {
      if (*m.FindString("minion") == "web1") return m.Find("targeted")->as_int();
    }
    return std::int64_t{-1};
  };
  const Value all = w.Json("/minions?format=json&since=2026-11-26T00:00:00.000000Z");
  CHECK(*all.FindString("counted_since") == "2026-11-26T00:00:00.000000Z");
  CHECK(all.Find("counted_until")->is_null());
  CHECK(web1(all) == 19);  // the 17 jobs of 09:00..09:59, 07:00 and 07:59
  // A window from 09:30 counts the whole hour of 09:00; one to 07:30 the whole hour of 07:00.
  const Value late = w.Json("/minions?format=json&since=2026-11-26T09:30:00.000000Z");
  CHECK(*late.FindString("counted_since") == "2026-11-26T09:00:00.000000Z");
  CHECK(web1(late) == 17);
  const Value early = w.Json(
      "/minions?format=json&since=2026-11-26T07:10:00.000000Z&until=2026-11-26T07:30:00.000000Z");
  CHECK(*early.FindString("counted_since") == "2026-11-26T07:00:00.000000Z");
  CHECK(*early.FindString("counted_until") == "2026-11-26T07:59:59.999999Z");
  CHECK(web1(early) == 2);
  const Value none = w.Json(
      "/minions?format=json&since=2026-11-26T08:00:00.000000Z&until=2026-11-26T08:59:00.000000Z");
  CHECK(web1(none) == -1);
  const Value one = w.Json("/minions/web1?format=json&since=2026-11-26T07:10:00.000000Z");
  CHECK(one.Find("targeted")->as_int() == 19);
  CHECK(*one.FindString("counted_since") == "2026-11-26T07:00:00.000000Z");
  const HttpReply html = w.Get("/minions?since=2026-11-26T09:30:00.000000Z");
  REQUIRE(html.status == 200);
  CHECK_THAT(html.body, Catch::Contains("<p class=\"muted\" id=\"counted\">Counted by the hour of "
                                        "each job's start: the jobs from "));
  CHECK_THAT(html.body, Catch::Contains("2026-11-26T09:00:00"));
}

TEST_CASE(
    "web pages: /minions whose last highstates run out of their budget still shows the counts, "
    "and says the highstates were not looked up",
    "[web][web-pages][minions-hours]") {
  Site w({.highstate_budget = std::chrono::milliseconds(0)});
  const Value v = w.Json("/minions?format=json");
  CHECK_FALSE(v.Find("highstates_looked_up")->as_bool());
  REQUIRE(v.Find("minions")->as_list().size() == 5);
  const Value& web1 = v.Find("minions")->as_list()[3];
  CHECK(web1.Find("targeted")->as_int() == 17);
  CHECK(web1.Find("last_highstate")->is_null());
  const HttpReply html = w.Get("/minions");
  REQUIRE(html.status == 200);
  CHECK_THAT(html.body, Catch::Contains("<p class=\"partial\" id=\"highstates-partial\">The last "
                                        "highstates were not looked up: "));
  CHECK_THAT(html.body, Catch::Contains("<span class=\"muted\">not looked up</span>"));
  const Value one = w.Json("/minions/db1?format=json");
  CHECK_FALSE(one.Find("highstates_looked_up")->as_bool());
  CHECK(one.Find("targeted")->as_int() == 1);
  // With the default budget they are looked up.
  Site whole;
  const Value all = whole.Json("/minions?format=json");
  CHECK(all.Find("highstates_looked_up")->as_bool());
  CHECK_FALSE(all.Find("minions")->as_list()[2].Find("last_highstate")->is_null());  // db1's
}
