// brine-web (web/): the HTML escaping, the CSV guard, the token file, and
// every security rule over a real socket: in-process (App + HttpServer with a
// fake clock, for session ages) and as the real brine-web process on a port
// the kernel picks, found through `brine-run brine.web_url`.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/queues.h"
#include "brine/store/store.h"
#include "brine/web/app.h"
#include "brine/web/auth.h"
#include "brine/web/csv.h"
#include "brine/web/html.h"
#include "brine/web/http_server.h"
#include "support/http_client.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/web_site.h"

namespace fs = std::filesystem;
using brine::Value;
using brine::test::Http;
using brine::test::HttpReply;
using brine::test::TempDir;
namespace web = brine::web;

namespace {

constexpr const char* kJid = "20261126090000123456";
constexpr const char* kStateJid = "20261126090100000000";
constexpr const char* kHostileMinion = "<script>alert(1)</script>";

std::string TokenOf(const fs::path& token_file) {
  std::string t = brine::test::ReadFile(token_file);
  if (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

// A store with a plain job (a hostile minion id, a <script> return), a state
// job (a failed, a changed and an unchanged state) and a queue whose item
// starts with '='.
void FillStore(const fs::path& db) {
  auto s = brine::store::OpenStore(db);
  s->SaveLoad(kJid,
              brine::ParseJson(R"({"fun":"cmd.run","arg":["echo <b>hi</b>"],"tgt":"*","tgt_type":"glob","user":"root","jid":")" +
                               std::string(kJid) + "\"}"),
              std::vector<std::string>{"web1", kHostileMinion, "absent1"});
  (void)s->Returner(Value::Map({{"id", "web1"}, {"jid", kJid}, {"fun", "cmd.run"}, {"return", "<script>alert(2)</script>"},
                                {"retcode", 0}, {"success", true}, {"_stamp", "2026-11-26T09:00:02.123456"}}));
  (void)s->Returner(Value::Map({{"id", kHostileMinion}, {"jid", kJid}, {"fun", "cmd.run"}, {"return", "boom"},
                                {"retcode", 1}, {"success", false}, {"_stamp", "2026-11-26T09:00:01.123456"}}));
  s->SaveLoad(kStateJid, brine::ParseJson(R"({"fun":"state.apply","arg":[],"tgt":"db1","user":"root"})"),
              std::vector<std::string>{"db1"});
  const Value states = brine::ParseJson(R"({
    "file_|-motd_|-/etc/motd_|-managed": {"__id__": "motd", "result": true, "comment": "File /etc/motd is in the correct state", "changes": {}, "duration": 1.5, "__run_num__": 0},
    "pkg_|-nginx_|-nginx_|-installed": {"__id__": "nginx", "result": false, "comment": "<img src=x onerror=alert(3)> failed", "changes": {}, "duration": 1000.0, "__run_num__": 1},
    "service_|-app_|-app_|-running": {"__id__": "app", "result": true, "comment": "Started", "changes": {"app": "started"}, "duration": 500.0, "__run_num__": 2}
  })");
  (void)s->Returner(Value::Map({{"id", "db1"}, {"jid", kStateJid}, {"fun", "state.apply"}, {"return", states},
                                {"retcode", 2}, {"success", false}, {"_stamp", "2026-11-26T09:01:05.000000"}}));
  s.reset();
  auto q = brine::store::OpenQueues(db);
  const std::vector<Value> items = {Value("=HYPERLINK(\"http://evil\")"), Value("<script>x</script>")};
  REQUIRE(q->Insert("salt-jobs", items).kind == brine::store::InsertOutcome::Kind::kInserted);
}

// App + HttpServer in this process, with a fake clock.
// brine-web in this process over FillStore's store, its clock at a fixed instant.
struct InProcess : brine::test::WebSite {
  // On a fresh SQLite file, or on `extra.database` (a PostgreSQL URI) when set.
  explicit InProcess(web::App::Options extra = {})
      : WebSite(brine::FromUnixMicros(1'790'000'000'000'000), FillStore, std::move(extra)) {}
};

using brine::test::WithSession;

}  // namespace

TEST_CASE("web: Escape turns every markup character into an entity and only Html::Literal is markup", "[web]") {
  CHECK(web::Escape("<script>alert('x') & \"y\"</script>").str() ==
        "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  CHECK(web::Escape("caf\xC3\xA9\t\n").str() == "caf\xC3\xA9\t\n");
  CHECK(web::Escape(std::string("a\0b\xFF", 4)).str() == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  const web::Html page = web::Html::Literal("<td>") + web::Escape("<b>") + web::Html::Literal("</td>");
  CHECK(page.str() == "<td>&lt;b&gt;</td>");
  STATIC_REQUIRE(!std::is_constructible_v<web::Html, std::string>);
  STATIC_REQUIRE(!std::is_convertible_v<std::string, web::Html>);
}

TEST_CASE("web: CSV cells are quoted as RFC 4180 says and formulas are defused", "[web]") {
  CHECK(web::CsvCell(std::nullopt).empty());
  CHECK(web::CsvCell(std::string("plain")) == "plain");
  CHECK(web::CsvCell(std::string("=1+1")) == "'=1+1");
  CHECK(web::CsvCell(std::string("+1")) == "'+1");
  CHECK(web::CsvCell(std::string("-1")) == "'-1");
  CHECK(web::CsvCell(std::string("@SUM(A1)")) == "'@SUM(A1)");
  CHECK(web::CsvCell(std::string("a,\"b\"\n")) == "\"a,\"\"b\"\"\n\"");
  CHECK(web::CsvCell(std::string("=HYPERLINK(\"x\")")) == "\"'=HYPERLINK(\"\"x\"\")\"");
  CHECK(web::CsvTable({"a", "b"}, {{std::string("1"), std::nullopt}}) == "a,b\r\n1,\r\n");
}

TEST_CASE("web: the token file is made once, 0600, 64 hex digits, and a symlink or a readable file is refused",
          "[web]") {
  TempDir dir;
  const fs::path path = dir / "brine_web.token";
  const std::string token = web::LoadOrCreateToken(path);
  CHECK(token.size() == 64);
  CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(web::LoadOrCreateToken(path) == token);
  CHECK(web::ReadToken(path) == token);
  ::chmod(path.c_str(), 0644);
  CHECK_THROWS_WITH(web::LoadOrCreateToken(path), Catch::Contains("must be mode 0600"));
  fs::remove(path);
  fs::create_symlink(dir / "elsewhere", path);
  CHECK_THROWS_WITH(web::LoadOrCreateToken(path), Catch::Contains("is a symlink"));
  CHECK(!fs::exists(dir / "elsewhere"));
  CHECK_THROWS_WITH(web::ReadToken(dir / "none"), Catch::Contains("does not exist"));
}

TEST_CASE("web: ConstantTimeEquals compares length and every byte", "[web]") {
  CHECK(web::ConstantTimeEquals("abc", "abc"));
  CHECK(!web::ConstantTimeEquals("abc", "abd"));
  CHECK(!web::ConstantTimeEquals("abc", "ab"));
  CHECK(!web::ConstantTimeEquals("", "a"));
  CHECK(web::ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK(!web::ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST_CASE("web: the Host header must be a loopback address or a listed name", "[web]") {
  CHECK(web::HostAllowed("127.0.0.1:4519", {}));
  CHECK(web::HostAllowed("127.1.2.3", {}));
  CHECK(web::HostAllowed("localhost:80", {}));
  CHECK(web::HostAllowed("[::1]:4519", {}));
  CHECK(web::HostAllowed("Salt.Example.com:443", {"salt.example.com"}));
  CHECK(!web::HostAllowed("evil.example.com:4519", {"salt.example.com"}));
  CHECK(!web::HostAllowed("", {}));
  CHECK(!web::HostAllowed("128.0.0.1", {}));
  CHECK(!web::HostAllowed("localhost.evil.com", {}));
}

TEST_CASE("web: without a session HTML redirects to the login form and JSON and CSV answer 401", "[web]") {
  InProcess w;
  HttpReply html = Http(w.port(), "GET", "/queues");
  CHECK(html.status == 303);
  CHECK(html.Header("location") == "/login");
  CHECK(Http(w.port(), "GET", "/queues?format=json").status == 401);
  CHECK(Http(w.port(), "GET", "/queues?format=csv").status == 401);
  CHECK(Http(w.port(), "GET", std::string("/jobs/") + kJid + "?format=json").status == 401);
  CHECK(Http(w.port(), "GET", "/queues", WithSession("0123")).status == 303);
}

TEST_CASE("web: a right token starts an HttpOnly SameSite=Strict session and redirects, a wrong one is refused",
          "[web]") {
  InProcess w;
  HttpReply bad = Http(w.port(), "GET", "/login?token=" + std::string(64, 'a'));
  CHECK(bad.status == 403);
  CHECK(bad.Cookie("brine_session").empty());
  HttpReply good = Http(w.port(), "GET", "/login?token=" + w.token);
  CHECK(good.status == 303);
  CHECK(good.Header("location") == "/");  // the token leaves the URL
  std::string cookie_line;
  for (auto [it, end] = good.headers.equal_range("set-cookie"); it != end; ++it) {
    if (it->second.starts_with("brine_session=")) cookie_line = it->second;
  }
  CHECK_THAT(cookie_line, Catch::Contains("HttpOnly") && Catch::Contains("SameSite=Strict") && Catch::Contains("Path=/"));
  HttpReply page = Http(w.port(), "GET", "/queues", WithSession(good.Cookie("brine_session")));
  CHECK(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("salt-jobs"));
  CHECK(w.app->failed_logins() == 1);
}

TEST_CASE("web: failed logins are rate limited, and the right token waits too until the window passes", "[web]") {
  InProcess w({.max_login_failures = 3, .login_window = std::chrono::seconds(60)});
  for (int i = 0; i < 3; ++i) CHECK(Http(w.port(), "GET", "/login?token=wrong").status == 403);
  CHECK(Http(w.port(), "GET", "/login?token=wrong").status == 429);
  CHECK(Http(w.port(), "GET", "/login?token=" + w.token).status == 429);
  w.clock.Set(w.clock.Now() + std::chrono::seconds(61));
  CHECK(Http(w.port(), "GET", "/login?token=" + w.token).status == 303);
}

TEST_CASE("web: a session ends after an hour idle and after 12 hours whatever its use", "[web]") {
  InProcess w;
  const std::string idle = w.Login();
  w.clock.Set(w.clock.Now() + std::chrono::minutes(59));
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(idle)).status == 200);
  w.clock.Set(w.clock.Now() + std::chrono::minutes(61));
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(idle)).status == 401);

  const std::string busy = w.Login();
  for (int hour = 0; hour < 11; ++hour) {
    w.clock.Set(w.clock.Now() + std::chrono::minutes(59));
    REQUIRE(Http(w.port(), "GET", "/queues?format=json", WithSession(busy)).status == 200);
  }
  w.clock.Set(w.clock.Now() + std::chrono::minutes(60));  // 11 h 49 min + 1 h
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(busy)).status == 401);
}

TEST_CASE("web: sessions are bounded in number, the least recently used ending first", "[web]") {
  InProcess w({.session_limits = {.max_count = 2}});
  const std::string a = w.Login();
  const std::string b = w.Login();
  w.clock.Set(w.clock.Now() + std::chrono::seconds(1));
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(a)).status == 200);
  const std::string c = w.Login();
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(a)).status == 200);
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(b)).status == 401);
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(c)).status == 200);
}

TEST_CASE("web: the login form's POST needs its CSRF cookie and field to match", "[web]") {
  InProcess w;
  HttpReply form = Http(w.port(), "GET", "/login");
  REQUIRE(form.status == 200);
  const std::string csrf = form.Cookie("brine_login_csrf");
  REQUIRE(csrf.size() == 32);
  CHECK_THAT(form.body, Catch::Contains("name=\"csrf\" value=\"" + csrf + "\""));
  // No cookie (a form posted from another site), or a field that differs.
  CHECK(Http(w.port(), "POST", "/login", {}, "token=" + w.token + "&csrf=" + csrf).status == 403);
  CHECK(Http(w.port(), "POST", "/login", {{"Cookie", "brine_login_csrf=" + csrf}},
             "token=" + w.token + "&csrf=" + std::string(32, '0'))
            .status == 403);
  HttpReply ok = Http(w.port(), "POST", "/login", {{"Cookie", "brine_login_csrf=" + csrf}},
                      "token=" + w.token + "&csrf=" + csrf);
  CHECK(ok.status == 303);
  CHECK(!ok.Cookie("brine_session").empty());
  CHECK(Http(w.port(), "POST", "/login", {{"Cookie", "brine_login_csrf=" + csrf}}, "token=bad&csrf=" + csrf).status ==
        403);
}

TEST_CASE("web: POST /logout needs the session's CSRF token and then ends the session", "[web]") {
  InProcess w;
  const std::string id = w.Login();
  HttpReply page = Http(w.port(), "GET", "/logout", WithSession(id));
  REQUIRE(page.status == 200);
  const std::size_t at = page.body.find("name=\"csrf\" value=\"");
  REQUIRE(at != std::string::npos);
  const std::string csrf = page.body.substr(at + 19, 64);
  CHECK(Http(w.port(), "POST", "/logout", WithSession(id), "csrf=" + std::string(64, '0')).status == 403);
  CHECK(Http(w.port(), "POST", "/logout", WithSession(id), "").status == 403);
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(id)).status == 200);
  HttpReply out = Http(w.port(), "POST", "/logout", WithSession(id), "csrf=" + csrf);
  CHECK(out.status == 303);
  CHECK(out.Header("location") == "/login");
  CHECK(Http(w.port(), "GET", "/queues?format=json", WithSession(id)).status == 401);
  CHECK(Http(w.port(), "POST", "/logout", {}, "csrf=" + csrf).status == 401);
}

TEST_CASE("web: every answer carries the CSP and the other headers, and none a CORS header", "[web]") {
  InProcess w;
  const std::string id = w.Login();
  for (const std::string& target : {std::string("/login"), std::string("/queues"), std::string("/queues?format=json"),
                                    std::string("/jobs/") + kJid, std::string("/nope")}) {
    HttpReply r = Http(w.port(), "GET", target, {{"Cookie", "brine_session=" + id}, {"Origin", "http://evil.example"}});
    INFO(target);
    CHECK(r.Header("content-security-policy") == "default-src 'self'; frame-ancestors 'none'");
    CHECK(r.Header("x-content-type-options") == "nosniff");
    CHECK(r.Header("x-frame-options") == "DENY");
    CHECK(r.Header("referrer-policy") == "no-referrer");
    for (const auto& [name, value] : r.headers) CHECK(!name.starts_with("access-control-"));
    if (r.Header("content-type").starts_with("text/html")) {
      // No inline script or style: the only <script has a src.
      CHECK(r.body.find("<script>") == std::string::npos);
      CHECK(r.body.find("<script type=\"module\">") == std::string::npos);
    }
    CHECK(r.body.find("style=") == std::string::npos);
    CHECK(r.body.find("<style") == std::string::npos);
  }
}

TEST_CASE("web: a wrong Host header is refused before anything else, a listed one is served", "[web]") {
  InProcess w({.hosts = {"brine.example.com"}});
  CHECK(Http(w.port(), "GET", "/login?token=" + w.token, {{"Host", "evil.example.com"}}).status == 403);
  CHECK(Http(w.port(), "GET", "/login", {{"Host", "brine.example.com"}}).status == 200);
  CHECK(Http(w.port(), "GET", "/login", {{"Host", "localhost:1"}}).status == 200);
}

TEST_CASE("web: under brine.web_base_path every link, redirect and cookie stays below the prefix", "[web]") {
  InProcess w({.base_path = "/brine/"});
  HttpReply login = Http(w.port(), "GET", "/brine/login?token=" + w.token);
  REQUIRE(login.status == 303);
  CHECK(login.Header("location") == "/brine/");
  bool path_set = false;
  for (auto [it, end] = login.headers.equal_range("set-cookie"); it != end; ++it) {
    path_set |= it->second.starts_with("brine_session=") && it->second.find("; Path=/brine/;") != std::string::npos;
  }
  CHECK(path_set);
  const auto s = WithSession(login.Cookie("brine_session"));
  HttpReply page = Http(w.port(), "GET", "/brine/queues", s);
  CHECK(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("href=\"/brine/static/brine.") && Catch::Contains("action=\"/brine/logout\""));
  CHECK(Http(w.port(), "GET", "/queues", s).status == 404);
  CHECK(Http(w.port(), "GET", "/brine/queues").Header("location") == "/brine/login");
  CHECK(Http(w.port(), "GET", "/").Header("location") == "/brine/");
}

TEST_CASE("web: methods other than GET, HEAD and POST are refused, and HEAD sends no body", "[web]") {
  InProcess w;
  CHECK(Http(w.port(), "DELETE", "/queues").status == 405);
  CHECK(Http(w.port(), "OPTIONS", "/queues", {{"Origin", "http://evil.example"}}).status == 405);
  HttpReply head = Http(w.port(), "HEAD", "/login");
  CHECK(head.status == 200);
  CHECK(head.body.empty());
}

TEST_CASE("web: assets are served under their content hash as immutable, and the pages link them", "[web]") {
  InProcess w;
  HttpReply login = Http(w.port(), "GET", "/login");
  const std::size_t css = login.body.find("stylesheet\" href=\"") + 18;
  REQUIRE(css != std::string::npos);
  const std::string href = login.body.substr(css, login.body.find('"', css) - css);
  CHECK(href.ends_with(".css"));
  HttpReply sheet = Http(w.port(), "GET", href);
  CHECK(sheet.status == 200);
  CHECK(sheet.Header("content-type") == "text/css; charset=utf-8");
  CHECK_THAT(sheet.Header("cache-control"), Catch::Contains("immutable"));
  CHECK_THAT(sheet.body, Catch::Contains("color-scheme: light dark"));
  const std::size_t js = login.body.find("<script type=\"module\" src=\"");
  REQUIRE(js != std::string::npos);
  const std::string src = login.body.substr(js + 27, login.body.find('"', js + 27) - js - 27);
  HttpReply module = Http(w.port(), "GET", src);
  CHECK(module.status == 200);
  CHECK(module.Header("content-type") == "text/javascript; charset=utf-8");
  CHECK(Http(w.port(), "GET", "/static/brine.0000000000000000.css").status == 404);
}

TEST_CASE("web: X-Remote-User names the user only when trusted and from a loopback peer", "[web]") {
  InProcess off;
  CHECK(Http(off.port(), "GET", "/queues?format=json", {{"X-Remote-User", "alice"}}).status == 401);
  InProcess on({.trust_remote_user = true});
  HttpReply r = Http(on.port(), "GET", "/queues", {{"X-Remote-User", "<alice>"}});
  CHECK(r.status == 200);
  CHECK_THAT(r.body, Catch::Contains("<span class=\"muted\" id=\"user\">&lt;alice&gt;</span>"));
}

TEST_CASE("web: /queues shows names, lengths and items, as JSON and as guarded CSV", "[web]") {
  InProcess w;
  const auto s = WithSession(w.Login());
  HttpReply html = Http(w.port(), "GET", "/queues", s);
  CHECK(html.status == 200);
  CHECK_THAT(html.body, Catch::Contains("<td class=\"queue-name\">salt-jobs</td><td class=\"queue-length\">2</td>"));
  // A token login names nobody: no user in the header (only a trusted proxy's user shows).
  CHECK(html.body.find("id=\"user\"") == std::string::npos);
  CHECK_THAT(html.body, Catch::Contains("&lt;script&gt;x&lt;/script&gt;"));
  CHECK(html.body.find("<script>x") == std::string::npos);
  HttpReply json = Http(w.port(), "GET", "/queues?format=json", s);
  CHECK(json.Header("content-type") == "application/json");
  const Value v = brine::ParseJson(json.body);
  CHECK(brine::ToJson(v) ==
        R"j({"queues":[{"name":"salt-jobs","length":2,"items":["=HYPERLINK(\"http://evil\")","<script>x</script>"]}]})j");
  HttpReply csv = Http(w.port(), "GET", "/queues?format=csv", s);
  CHECK(csv.Header("content-type") == "text/csv; charset=utf-8");
  CHECK(csv.body == "queue,length,item\r\nsalt-jobs,2,\"'=HYPERLINK(\"\"http://evil\"\")\"\r\nsalt-jobs,2,<script>x</script>\r\n");
}

TEST_CASE("web: /jobs/<jid> shows each minion returned, failed or missing, with hostile values as text", "[web]") {
  InProcess w;
  const auto s = WithSession(w.Login());
  HttpReply html = Http(w.port(), "GET", std::string("/jobs/") + kJid, s);
  CHECK(html.status == 200);
  CHECK(html.body.find("<script>alert") == std::string::npos);
  CHECK_THAT(html.body, Catch::Contains("<td class=\"minion-id\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"
                                        "<td class=\"state-failed\">failed</td><td>1</td><td>1.000 s</td>"));
  CHECK_THAT(html.body, Catch::Contains("<td class=\"minion-id\">web1</td><td class=\"state-returned\">returned</td>"
                                        "<td>0</td><td>2.000 s</td>"));
  CHECK_THAT(html.body, Catch::Contains("<td class=\"minion-id\">absent1</td><td class=\"state-missing\">missing</td>"));
  CHECK_THAT(html.body, Catch::Contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
  CHECK_THAT(html.body, Catch::Contains("echo &lt;b&gt;hi&lt;/b&gt;"));
  CHECK_THAT(html.body, Catch::Contains("<time datetime=\"2026-11-26T09:00:00.123456Z\">"));

  HttpReply json = Http(w.port(), "GET", std::string("/jobs/") + kJid + "?format=json", s);
  CHECK(json.status == 200);
  const Value v = brine::ParseJson(json.body);
  CHECK(*v.FindString("jid") == kJid);
  CHECK(*v.FindString("start_time") == "2026-11-26T09:00:00.123456Z");
  CHECK(*v.Find("load")->FindString("fun") == "cmd.run");
  const Value& minions = *v.Find("minions");
  CHECK(*minions.Find("web1")->FindString("state") == "returned");
  CHECK(*minions.Find("web1")->FindString("return") == "<script>alert(2)</script>");
  CHECK(minions.Find(kHostileMinion)->Find("retcode")->as_int() == 1);
  CHECK(*minions.Find(kHostileMinion)->FindString("state") == "failed");
  CHECK(*minions.Find("absent1")->FindString("state") == "missing");
  CHECK(minions.Find("absent1")->Find("return")->is_null());

  CHECK(Http(w.port(), "GET", "/jobs/20000101000000000000", s).status == 404);
  CHECK(Http(w.port(), "GET", "/jobs/20000101000000000000?format=json", s).status == 404);
}

TEST_CASE("web: a state return is a table, failed and changed first, with the highstate outputter's text", "[web]") {
  InProcess w;
  const auto s = WithSession(w.Login());
  HttpReply html = Http(w.port(), "GET", std::string("/jobs/") + kStateJid, s);
  REQUIRE(html.status == 200);
  const std::size_t nginx = html.body.find("<td class=\"state-id\">nginx");
  const std::size_t app = html.body.find("<td class=\"state-id\">app");
  const std::size_t motd = html.body.find("<td class=\"state-id\">motd");
  REQUIRE(nginx != std::string::npos);
  REQUIRE(app != std::string::npos);
  REQUIRE(motd != std::string::npos);
  CHECK(nginx < app);
  CHECK(app < motd);
  CHECK_THAT(html.body, Catch::Contains("<td class=\"minion-id\">db1</td><td class=\"state-failed\">failed</td>"
                                        "<td>2</td><td>1.502 s</td>"));  // the states' durations summed
  CHECK_THAT(html.body, Catch::Contains("&lt;img src=x onerror=alert(3)&gt; failed"));
  CHECK(html.body.find("<img") == std::string::npos);
  CHECK_THAT(html.body, Catch::Contains("<details class=\"salt-run\"><summary>As salt-run prints it</summary><pre>db1:\n"));
  CHECK_THAT(html.body, Catch::Contains("Summary for db1"));
}

TEST_CASE("web: brine-web serves on a port the kernel picks, and brine-run brine.web_url names it", "[web][e2e]") {
  TempDir dir;
  FillStore(dir / "brine.sqlite");
  auto write_config = [&](const std::string& extra) {
    std::ofstream(dir / "master") << "cachedir: " << dir.path().string() << "\nsock_dir: " << (dir / "sock").string()
                                  << "\nbrine.database: " << (dir / "brine.sqlite").string()
                                  << "\nbrine.log_file: " << (dir / "brine.log").string() << "\n"
                                  << extra;
  };
  write_config("brine.web_port: 0\n");
  const fs::path token_file = dir / "sock" / "brine_web.token";
  const fs::path port_file = dir / "sock" / "brine_web.token.port";
  brine::test::Child web({brine::test::Binary("brine-web").string(), "-c", dir.path().string()}, dir / "web.out");
  REQUIRE(brine::test::WaitForPath(port_file));
  const brine::test::RunResult url =
      brine::test::Run({brine::test::Binary("brine-run").string(), "-c", dir.path().string(), "brine.web_url"});
  INFO("brine-run: " << url.exit_code << " " << url.out << url.err);
  REQUIRE(url.exit_code == 0);
  const std::string token = TokenOf(token_file);
  const std::string port = brine::test::ReadFile(port_file).substr(0, brine::test::ReadFile(port_file).size() - 1);
  CHECK(url.out == "http://127.0.0.1:" + port + "/login?token=" + token + "\n");
  struct stat st {};
  REQUIRE(::stat(token_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  const int p = std::stoi(port);
  CHECK(Http(p, "GET", "/queues?format=json").status == 401);
  HttpReply login = Http(p, "GET", "/login?token=" + token);
  REQUIRE(login.status == 303);
  HttpReply page = Http(p, "GET", std::string("/jobs/") + kJid, WithSession(login.Cookie("brine_session")));
  CHECK(page.status == 200);
  CHECK(page.Header("content-security-policy") == "default-src 'self'; frame-ancestors 'none'");
  CHECK(Http(p, "GET", "/login", {{"Host", "rebound.example.com:" + port}}).status == 403);

  // A second brine-web on the port in use is a configuration error: exit 2.
  TempDir other;
  std::ofstream(other / "master") << "cachedir: " << other.path().string() << "\nsock_dir: " << (other / "sock").string()
                                  << "\nbrine.database: " << (dir / "brine.sqlite").string() << "\nbrine.web_port: "
                                  << port << "\n";
  const brine::test::RunResult busy =
      brine::test::Run({brine::test::Binary("brine-web").string(), "-c", other.path().string()}, std::chrono::seconds(20));
  CHECK(busy.exit_code == 2);
  CHECK_THAT(busy.err, Catch::Contains("cannot listen on 127.0.0.1 port " + port));

  web.Signal(SIGTERM);
  CHECK(web.Wait() == std::optional<int>(0));
  CHECK(!fs::exists(port_file));
  const brine::test::RunResult stopped =
      brine::test::Run({brine::test::Binary("brine-run").string(), "-c", dir.path().string(), "brine.web_url"});
  CHECK(stopped.exit_code == 1);
  CHECK_THAT(stopped.err, Catch::Contains("is brine-web running"));
  // The token survives a restart; sessions do not.
  CHECK(web::ReadToken(token_file) == token);
}

TEST_CASE("web: brine-web exits 2 on a bad key and 1 when the store is missing, and warns on a public bind",
          "[web][e2e]") {
  TempDir dir;
  const std::string base = "cachedir: " + dir.path().string() + "\nsock_dir: " + (dir / "sock").string() +
                           "\nbrine.database: " + (dir / "brine.sqlite").string() + "\n";
  const auto run = [&](const std::string& extra) {
    std::ofstream(dir / "master") << base << extra;
    return brine::test::Run({brine::test::Binary("brine-web").string(), "-c", dir.path().string()},
                            std::chrono::seconds(20));
  };
  const brine::test::RunResult bad = run("brine.web_port: -1\n");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("brine.web_port: expected a port number from 0 to 65535"));
  const brine::test::RunResult missing = run("brine.web_port: 0\n");
  CHECK(missing.exit_code == 1);
  CHECK(!fs::exists(dir / "brine.sqlite"));  // read-only: never created
  CHECK(brine::test::Run({brine::test::Binary("brine-web").string(), "--bogus"}).exit_code == 2);
  CHECK(!fs::exists(dir / "brine.sqlite"));

  FillStore(dir / "brine.sqlite");
  const brine::test::RunResult name = run("brine.web_port: 0\nbrine.web_bind: localhost\n");
  CHECK(name.exit_code == 2);
  CHECK_THAT(name.err, Catch::Contains("brine.web_bind: 'localhost' is not an IPv4 or IPv6 address"));
  std::ofstream(dir / "master") << base << "brine.web_port: 0\nbrine.web_bind: 0.0.0.0\n";
  brine::test::Child web({brine::test::Binary("brine-web").string(), "-c", dir.path().string()}, dir / "web.out");
  REQUIRE(brine::test::WaitForPath(dir / "sock" / "brine_web.token.port"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (brine::test::ReadFile(dir / "web.out").find("listening") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK_THAT(brine::test::ReadFile(dir / "web.out"), Catch::Contains("is not a loopback address"));
}

TEST_CASE("web: the systemd unit passes systemd-analyze verify and is hardened like brine-master's", "[web]") {
  const std::string unit = brine::test::ReadFile(std::string(BRINE_SOURCE_DIR) + "/contrib/systemd/brine-web.service");
  REQUIRE(!unit.empty());
  for (const char* line : {"ExecStart=/usr/bin/brine-web -c /etc/salt\n", "RestartPreventExitStatus=2\n",
                           "NoNewPrivileges=yes\n", "ProtectSystem=strict\n", "ProtectHome=yes\n", "PrivateTmp=yes\n",
                           "PrivateDevices=yes\n", "MemoryDenyWriteExecute=yes\n", "SystemCallFilter=@system-service\n",
                           "UMask=0077\n"}) {
    INFO(line);
    CHECK(unit.find(line) != std::string::npos);
  }
  if (!fs::exists("/usr/bin/systemd-analyze")) {
    WARN("SKIPPED the verify step: /usr/bin/systemd-analyze is missing (./brine.sh deps installs systemd)");
    return;
  }
  TempDir dir;
  std::string local = unit;
  const std::string exec = "/usr/bin/brine-web";
  local.replace(local.find(exec), exec.size(), brine::test::Binary("brine-web").string());
  std::ofstream(dir / "brine-web.service") << local;
  const auto r = brine::test::Run({"/usr/bin/systemd-analyze", "verify", (dir / "brine-web.service").string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.empty());
}

TEST_CASE("web: brine-web started as root makes the token and serves as the config's user",
          "[web][e2e]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: needs root to switch to the user nobody");
    return;
  }
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  fs::create_directories(dir / "cache");
  FillStore(dir / "cache" / "brine.sqlite");
  REQUIRE(brine::test::Run({"/bin/chown", "-R", "nobody", (dir / "cache").string()}).exit_code == 0);
  std::ofstream(dir / "master") << "user: nobody\ncachedir: " << (dir / "cache").string()
                                << "\nsock_dir: " << (dir / "sock").string() << "\nbrine.web_port: 0\n";
  brine::test::Child web({brine::test::Binary("brine-web").string(), "-c", dir.path().string()}, dir / "web.out");
  const fs::path port_file = dir / "sock" / "brine_web.token.port";
  REQUIRE(brine::test::WaitForPath(port_file));
  struct stat st {};
  REQUIRE(::stat((dir / "sock" / "brine_web.token").c_str(), &st) == 0);
  const std::string nobody_uid = brine::test::Run({"/usr/bin/id", "-u", "nobody"}).out;
  CHECK(std::to_string(st.st_uid) + "\n" == nobody_uid);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string status = brine::test::ReadFile("/proc/" + std::to_string(web.pid()) + "/status");
  CHECK_THAT(status, Catch::Contains("Uid:\t" + nobody_uid.substr(0, nobody_uid.size() - 1) + "\t"));
  const int port = std::stoi(brine::test::ReadFile(port_file));
  HttpReply login = Http(port, "GET", "/login?token=" + TokenOf(dir / "sock" / "brine_web.token"));
  REQUIRE(login.status == 303);
  CHECK(Http(port, "GET", std::string("/jobs/") + kJid, WithSession(login.Cookie("brine_session"))).status == 200);
}

TEST_CASE("web: idle connections cost no thread, and an oversized POST body is refused", "[web]") {
  InProcess w;
  // 100 connections that send nothing: on two polling threads the next
  // request is still answered at once.
  auto threads = [] {
    const std::string status = brine::test::ReadFile("/proc/self/status");
    const std::size_t at = status.find("Threads:");
    return std::stoi(status.substr(at + 8));
  };
  const int threads_before = threads();
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(w.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    idle.push_back(fd);
  }
  const auto started = std::chrono::steady_clock::now();
  CHECK(Http(w.port(), "GET", "/login").status == 200);
  CHECK(threads() == threads_before);  // the server's threads were all there before
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took < std::chrono::seconds(5));  // generous for a loaded machine; a blocked pool never answers
  for (int fd : idle) ::close(fd);

  const std::string big(20000, 'a');
  CHECK(Http(w.port(), "POST", "/login", {}, "token=" + big).status == 413);
  CHECK(Http(w.port(), "GET", "/login").status == 200);
}

TEST_CASE("web: /jobs/<jid> and /queues answer the same on PostgreSQL as on SQLite", "[web][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  InProcess lite;
  InProcess pg({.database = brine::test::PostgresServer::Shared().CreateDatabase()});
  const auto lite_session = WithSession(lite.Login());
  const auto pg_session = WithSession(pg.Login());
  for (const std::string& target : {std::string("/jobs/") + kJid + "?format=json",
                                    std::string("/jobs/") + kStateJid + "?format=json", std::string("/queues?format=json"),
                                    std::string("/queues?format=csv")}) {
    INFO(target);
    const HttpReply a = Http(lite.port(), "GET", target, lite_session);
    const HttpReply b = Http(pg.port(), "GET", target, pg_session);
    CHECK(a.status == 200);
    CHECK(b.status == 200);
    CHECK(a.body == b.body);
  }
  const HttpReply page = Http(pg.port(), "GET", std::string("/jobs/") + kStateJid, pg_session);
  CHECK_THAT(page.body, Catch::Contains("<td class=\"minion-id\">db1</td><td class=\"state-failed\">failed</td>"));
}
