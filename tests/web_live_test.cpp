// brine-web's live pages (web/): /events (tag glob, keyset pages, JSON and
// CSV, hostile tags as text), the live tail (/events/stream: events arrive,
// Last-Event-ID resumes with no gap and no duplicate, two PostgreSQL writers
// committing out of id order, a client that never reads), the store's tail
// cursor, /sql's refusals and budget, brine-web's metrics, and /queues read-only.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "brine/web/metrics.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/queues.h"
#include "brine/store/store.h"
#include "brine/web/app.h"
#include "brine/web/auth.h"
#include "brine/web/http_server.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using brine::Value;
using brine::test::TempDir;
using namespace std::chrono_literals;
namespace web = brine::web;
namespace store = brine::store;

namespace {

constexpr const char* kHostileTag = "salt/<script>alert(1)</script>";

// One HTTP/1.1 connection to 127.0.0.1:port: a request, then its head, then
// its body read as it comes (chunked or not), so a stream can be followed.
class Conn {
 public:
  Conn(int port, const std::string& target, const std::vector<std::pair<std::string, std::string>>& headers,
       int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
    req += "\r\n";
    REQUIRE(::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  }
  ~Conn() { ::close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Reads until `done(body so far)` or `timeout` or EOF; returns whether done held.
  bool ReadUntil(const std::function<bool(const std::string&)>& done, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      Decode();
      if (head_done_ && done(body_)) return true;
      if (eof_) return false;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
      } else {
        raw_.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  void ReadAll(std::chrono::milliseconds timeout = 20s) { (void)ReadUntil([](const std::string&) { return false; }, timeout); }

  int status() const { return status_; }
  std::string Header(const std::string& lower) const {
    auto it = headers_.find(lower);
    return it == headers_.end() ? "" : it->second;
  }
  const std::string& body() const { return body_; }

 private:
  void Decode() {
    if (!head_done_) {
      const std::size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      std::string head = raw_.substr(0, end);
      raw_.erase(0, end + 4);
      status_ = std::stoi(head.substr(9, 3));
      std::size_t at = head.find("\r\n");
      while (at != std::string::npos) {
        const std::size_t next = head.find("\r\n", at + 2);
        const std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
        std::string name = line.substr(0, line.find(':'));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        headers_.emplace(name, line.substr(std::min(line.size(), line.find(':') + 2)));
        at = next;
      }
      chunked_ = Header("transfer-encoding") == "chunked";
      head_done_ = true;
    }
    if (!chunked_) {
      body_ += raw_;
      raw_.clear();
      return;
    }
    for (;;) {
      const std::size_t line = raw_.find("\r\n");
      if (line == std::string::npos) return;
      const std::size_t size = std::stoul(raw_.substr(0, line), nullptr, 16);
      if (raw_.size() < line + 2 + size + 2) return;
      body_ += raw_.substr(line + 2, size);
      raw_.erase(0, line + 2 + size + 2);
      if (size == 0) return;
    }
  }
  int fd_ = -1;
  std::string raw_;
  std::string body_;
  bool head_done_ = false;
  bool chunked_ = false;
  bool eof_ = false;
  int status_ = 0;
  std::map<std::string, std::string> headers_;
};

struct Reply {
  int status;
  std::string content_type;
  std::string body;
};

Reply Get(int port, const std::string& target, const std::string& session) {
  Conn c(port, target, {{"Cookie", "brine_session=" + session}});
  c.ReadAll();
  return {c.status(), c.Header("content-type"), c.body()};
}

// The Server-Sent Events in `body`: each block's id and data lines.
struct Sse {
  std::string id;
  std::string event;
  std::string data;
};
std::vector<Sse> ParseSse(const std::string& body) {
  std::vector<Sse> out;
  std::size_t at = 0;
  for (std::size_t end; (end = body.find("\n\n", at)) != std::string::npos; at = end + 2) {
    Sse e;
    std::size_t line_at = at;
    while (line_at < end) {
      std::size_t nl = body.find('\n', line_at);
      if (nl == std::string::npos || nl > end) nl = end;
      const std::string line = body.substr(line_at, nl - line_at);
      if (line.starts_with("id: ")) e.id = line.substr(4);
      if (line.starts_with("event: ")) e.event = line.substr(7);
      if (line.starts_with("data: ")) e.data = line.substr(6);
      line_at = nl + 1;
    }
    if (!e.data.empty() || !e.event.empty()) out.push_back(e);
  }
  return out;
}
// The `n` fields of the plain events (no event: line) in `body`.
std::vector<std::int64_t> EventNumbers(const std::string& body) {
  std::vector<std::int64_t> out;
  for (const Sse& e : ParseSse(body)) {
    if (!e.event.empty()) continue;
    const Value v = brine::ParseJson(e.data);
    out.push_back(v.Find("data")->Find("n")->as_int());
  }
  return out;
}

void AddEvents(store::Store& s, const std::string& tag, int from, int count, std::size_t pad = 0) {
  std::vector<store::Event> events;
  for (int i = from; i < from + count; ++i) {
    Value data = Value::Map({{"n", i}});
    if (pad > 0) data.as_map().emplace_back("pad", std::string(pad, 'x'));
    events.push_back({.tag = tag, .data = std::move(data), .received = brine::SystemClock().Now()});
  }
  s.EventReturn(events);
}

// App + HttpServer in this process over a store with a few events.
struct Live {
  TempDir dir;
  std::string database;
  std::string token = web::RandomHex(32);
  std::unique_ptr<web::App> app;
  std::unique_ptr<web::HttpServer> server;
  std::string session;
  explicit Live(web::App::Options extra = {}, std::string db = "") : database(std::move(db)) {
    if (database.empty()) database = (dir / "brine.sqlite").string();
    {
      auto s = store::OpenStore(database);
      AddEvents(*s, "salt/auth", 0, 3);
      AddEvents(*s, "salt/minion/web1/start", 3, 2);
      s->EventReturn(std::vector<store::Event>{
          {.tag = kHostileTag, .data = Value::Map({{"n", 5}, {"cmd", "=cmd|' /C calc'!A0"}}), .received = brine::SystemClock().Now()}});
    }
    extra.database = database;
    extra.token = token;
    extra.tail_poll = 20ms;
    app = std::make_unique<web::App>(extra);
    server = std::make_unique<web::HttpServer>(web::HttpServer::Options{.port = 0, .timeout_s = 5},
                                               [this](const web::Request& r) { return app->Handle(r); });
    Conn login(port(), "/login?token=" + token, {});
    login.ReadAll();
    REQUIRE(login.status() == 303);
    const std::string cookie = login.Header("set-cookie");
    session = cookie.substr(cookie.find('=') + 1, cookie.find(';') - cookie.find('=') - 1);
  }
  ~Live() {
    server.reset();  // before the App its handler calls
  }
  int port() const { return server->port(); }
  std::vector<std::pair<std::string, std::string>> Cookie() const { return {{"Cookie", "brine_session=" + session}}; }
  std::unique_ptr<store::Store> Writer() const { return store::OpenStore(database); }
};

// A raw libpq connection for writing rows the way a second master would.
class PgConn {
 public:
  explicit PgConn(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
  }
  ~PgConn() { PQfinish(conn_); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;
  void Exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    INFO(sql << ": " << PQerrorMessage(conn_));
    PQclear(r);
    REQUIRE((st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK));
  }

 private:
  PGconn* conn_;
};

}  // namespace

// ---------------------------------------------------------------- /events

TEST_CASE("web live: /events lists newest first, filters by tag glob and pages by id", "[web][live]") {
  Live live;
  const Reply all = Get(live.port(), "/events?format=json", live.session);
  REQUIRE(all.status == 200);
  const Value v = brine::ParseJson(all.body);
  const auto& events = v.Find("events")->as_list();
  REQUIRE(events.size() == 6);
  CHECK(events[0].Find("tag")->as_string() == kHostileTag);  // newest first
  CHECK(events[5].Find("data")->Find("n")->as_int() == 0);
  CHECK(v.Find("next")->is_null());
  CHECK(v.Find("complete")->as_bool());

  const Value auth = brine::ParseJson(Get(live.port(), "/events?format=json&tag=salt/auth*", live.session).body);
  CHECK(auth.Find("events")->as_list().size() == 3);
  const Value glob = brine::ParseJson(Get(live.port(), "/events?format=json&tag=salt/*/web?/start", live.session).body);
  REQUIRE(glob.Find("events")->as_list().size() == 2);
  CHECK(glob.Find("events")->as_list()[0].Find("tag")->as_string() == "salt/minion/web1/start");
  const Value none = brine::ParseJson(Get(live.port(), "/events?format=json&tag=nothing*", live.session).body);
  CHECK(none.Find("events")->as_list().empty());

  // Pages of 2, each going on below the last: every event once, in order.
  std::vector<std::int64_t> seen;
  std::string target = "/events?format=json&limit=2";
  for (int page = 0; page < 5; ++page) {
    const Value p = brine::ParseJson(Get(live.port(), target, live.session).body);
    for (const Value& e : p.Find("events")->as_list()) seen.push_back(e.Find("data")->Find("n")->as_int());
    if (p.Find("next")->is_null()) break;
    target = "/events?format=json&limit=2&before=" + p.Find("next")->as_string();
  }
  CHECK(seen == std::vector<std::int64_t>{5, 4, 3, 2, 1, 0});
  CHECK(Get(live.port(), "/events?before=x&format=json", live.session).status == 400);
}

TEST_CASE("web live: /events shows a <script> tag as text, and its CSV is guarded", "[web][live]") {
  Live live;
  const Reply page = Get(live.port(), "/events", live.session);
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, !Catch::Contains("<script>alert(1)"));
  CHECK_THAT(page.body, Catch::Contains("salt/&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(page.body, Catch::Contains("id=\"live\" data-stream=\"/events/stream\""));
  const Reply filtered = Get(live.port(), "/events?tag=%22%3E%3Cscript%3E*", live.session);
  CHECK_THAT(filtered.body, !Catch::Contains("\"><script>"));
  CHECK_THAT(filtered.body, Catch::Contains("data-stream=\"/events/stream?tag=%22%3E%3Cscript%3E*\""));

  const Reply csv = Get(live.port(), "/events?format=csv&tag=salt/<script>*", live.session);
  REQUIRE(csv.status == 200);
  CHECK_THAT(csv.content_type, Catch::StartsWith("text/csv"));
  CHECK_THAT(csv.body, Catch::StartsWith("id,time,master,tag,data\r\n"));
  CHECK_THAT(csv.body, Catch::Contains("salt/<script>alert(1)</script>"));
  CHECK_THAT(csv.body, Catch::Contains("=cmd|"));  // inside the JSON cell, which starts with {
  const Reply bad = Get(live.port(), "/sql?format=csv&q=SELECT%20%27%3D1%2B1%27%20AS%20f", live.session);
  CHECK_THAT(bad.body, Catch::Contains("'=1+1"));
}

// ---------------------------------------------------------------- the tail cursor

TEST_CASE("web live: the PostgreSQL tail cursor keeps holes, folds ranges into the floor and round-trips",
          "[web][live]") {
  // Through the store's public face on SQLite: a cursor of another backend is refused.
  TempDir dir;
  auto s = store::OpenStore(dir / "brine.sqlite");
  CHECK_THROWS_AS(s->TailEvents("p5,7-9", "", 10), std::invalid_argument);
  CHECK_THROWS_AS(s->TailEvents("s12x", "", 10), std::invalid_argument);
  CHECK_THROWS_AS(s->TailEvents("", "", 10), std::invalid_argument);
  const std::string start = s->TailStart();
  AddEvents(*s, "a/b", 0, 3);
  store::TailBatch b = s->TailEvents(start, "", 2);
  REQUIRE(b.events.size() == 2);
  CHECK(b.more);
  store::TailBatch rest = s->TailEvents(b.cursor, "", 2);
  REQUIRE(rest.events.size() == 1);
  CHECK(!rest.more);
  CHECK(s->TailEvents(rest.cursor, "", 2).events.empty());
  // Resuming from the first event's own cursor gives the two after it.
  CHECK(s->TailEvents(b.events[0].cursor, "", 10).events.size() == 2);
}

TEST_CASE("web live: two PostgreSQL writers committing out of id order: the tail skips nothing and repeats nothing",
          "[web][live][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  const std::string uri = brine::test::PostgresServer::Shared().CreateDatabase();
  auto master = store::OpenStore(uri);
  AddEvents(*master, "salt/start", 0, 1);
  auto reader = store::OpenStore(uri, {.access = store::OpenOptions::Access::kReadOnly});
  std::string cursor = reader->TailStart();
  std::vector<std::int64_t> got;
  std::vector<std::string> cursors;
  auto poll = [&] {
    for (int i = 0; i < 3; ++i) {
      store::TailBatch b = reader->TailEvents(cursor, "salt/*", 100);
      for (const auto& e : b.events) {
        got.push_back(brine::ParseJson(e.event.event.data_json).Find("n")->as_int());
        cursors.push_back(e.cursor);
      }
      cursor = b.cursor;
    }
  };
  // A second master's transaction takes ids 2-4 and stays open...
  PgConn late(uri);
  late.Exec("BEGIN");
  late.Exec(
      "INSERT INTO event (received, master_id, tag, data) SELECT now(), (SELECT min(id) FROM master), 'salt/late',"
      " '{\"n\":' || g || '}' FROM generate_series(100, 102) AS g");
  // ...while the first commits ids 5-6, which the tail gives at once.
  AddEvents(*master, "salt/early", 1, 2);
  poll();
  CHECK(got == std::vector<std::int64_t>{1, 2});
  const std::string before_late_commit = cursor;
  INFO("cursor before the late commit: " << before_late_commit);
  late.Exec("COMMIT");
  AddEvents(*master, "salt/after", 3, 1);
  poll();
  poll();  // the mark settles over a few polls; nothing comes twice meanwhile
  std::multiset<std::int64_t> bag(got.begin(), got.end());
  CHECK(bag == std::multiset<std::int64_t>{1, 2, 3, 100, 101, 102});
  CHECK(got.size() == 6);

  // A fresh reader resuming from the cursor taken before the late commit (a
  // browser's Last-Event-ID) gets exactly the rest.
  auto other = store::OpenStore(uri, {.access = store::OpenOptions::Access::kReadOnly});
  std::vector<std::int64_t> resumed;
  std::string c = before_late_commit;
  for (int i = 0; i < 4; ++i) {
    store::TailBatch b = other->TailEvents(c, "", 100);
    for (const auto& e : b.events) resumed.push_back(brine::ParseJson(e.event.event.data_json).Find("n")->as_int());
    c = b.cursor;
  }
  std::sort(resumed.begin(), resumed.end());
  CHECK(resumed == std::vector<std::int64_t>{3, 100, 101, 102});
  // The cursor never grew past its bound: a few ranges.
  for (const std::string& k : cursors) CHECK(k.size() < 200);
}

// ---------------------------------------------------------------- the stream

TEST_CASE("web live: the stream sends events committed after it opened, and Last-Event-ID resumes exactly",
          "[web][live]") {
  Live live;
  Conn stream(live.port(), "/events/stream?tag=salt/auth*", live.Cookie());
  REQUIRE(stream.ReadUntil([](const std::string& b) { return b.find("event: cursor") != std::string::npos; }, 10s));
  CHECK(stream.status() == 200);
  CHECK_THAT(stream.Header("content-type"), Catch::StartsWith("text/event-stream"));
  CHECK(stream.Header("content-security-policy") == "default-src 'self'; frame-ancestors 'none'");
  auto writer = live.Writer();
  AddEvents(*writer, "salt/auth", 10, 3);
  AddEvents(*writer, "salt/other", 13, 2);  // not matched by the glob
  AddEvents(*writer, "salt/auth", 15, 2);
  const bool five = stream.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 5; }, 10s);
  INFO("stream so far: " << stream.body());
  REQUIRE(five);
  CHECK(EventNumbers(stream.body()) == std::vector<std::int64_t>{10, 11, 12, 15, 16});

  // A reconnect with the id of the second event gets the three after it.
  std::string second_id;
  int plain = 0;
  for (const Sse& e : ParseSse(stream.body())) {
    if (e.event.empty() && ++plain == 2) second_id = e.id;
  }
  REQUIRE(!second_id.empty());
  auto headers = live.Cookie();
  headers.emplace_back("Last-Event-ID", second_id);
  Conn resumed(live.port(), "/events/stream?tag=salt/auth*", headers);
  REQUIRE(resumed.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 3; }, 10s));
  AddEvents(*writer, "salt/auth", 17, 1);
  REQUIRE(resumed.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 4; }, 10s));
  CHECK(EventNumbers(resumed.body()) == std::vector<std::int64_t>{12, 15, 16, 17});
  // ?after= (the page's resume after Pause) works the same.
  Conn after(live.port(), "/events/stream?tag=salt/auth*&after=" + second_id, live.Cookie());
  REQUIRE(after.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 4; }, 10s));
  CHECK(EventNumbers(after.body()) == std::vector<std::int64_t>{12, 15, 16, 17});

  // Without a session: 401; a cursor of another kind: 400.
  Conn anonymous(live.port(), "/events/stream", {});
  anonymous.ReadAll();
  CHECK(anonymous.status() == 401);
  auto bad = live.Cookie();
  bad.emplace_back("Last-Event-ID", "p1,2-3");
  Conn refused(live.port(), "/events/stream", bad);
  refused.ReadAll();
  CHECK(refused.status() == 400);
  CHECK(live.app->open_streams() >= 3);
}

namespace {

long RssKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("web live: a client that never reads neither grows memory nor stalls the others", "[web][live]") {
  Live live({.stream_buffer_bytes = 64 * 1024, .stream_stall_limit = 2s});
  // The stalled client: a tiny receive buffer, and it never reads.
  Conn stalled(live.port(), "/events/stream", live.Cookie(), 4096);
  Conn reader(live.port(), "/events/stream?tag=salt/ping", live.Cookie());
  REQUIRE(reader.ReadUntil([](const std::string& b) { return b.find("event: cursor") != std::string::npos; }, 10s));
  auto writer = live.Writer();
  const long rss_before = RssKib();
  // 12 MB of events the stalled client would have to take, a little at a
  // time, so the kernel's socket buffers fill first and then the stream's.
  for (int i = 0; i < 200; ++i) {
    AddEvents(*writer, "salt/big", i * 3, 3, 20000);
    std::this_thread::sleep_for(20ms);
  }
  AddEvents(*writer, "salt/ping", 1, 1);
  // The other stream still gets its event promptly, and a page still answers.
  const bool arrived = reader.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 1; }, 15s);
  INFO("reader saw: " << reader.body());
  CHECK(arrived);
  CHECK(Get(live.port(), "/events?format=json&limit=1", live.session).status == 200);
  // The stalled stream's events were counted as skipped, not kept.
  const bool skipped = [&] {
    for (int i = 0; i < 100 && live.app->MetricsText().find("brine_web_events_skipped_total 0\n") != std::string::npos;
         ++i) {
      std::this_thread::sleep_for(50ms);
    }
    return live.app->MetricsText().find("brine_web_events_skipped_total 0\n") == std::string::npos;
  }();
  CHECK(skipped);
  // What the server holds for the streams stays within their buffers (two
  // streams of 64 KiB, each at most twice that while a read is half done),
  // far below the 12 MB the stalled one was offered.
  const std::string text = live.app->MetricsText();
  const std::size_t at = text.find("\nbrine_web_stream_buffered_bytes ");
  REQUIRE(at != std::string::npos);
  const long buffered = std::stol(text.substr(at + 33));
  INFO(text);
  CHECK(buffered <= 2 * 2 * 64 * 1024);
  // Having read nothing for its stall limit (2 s here), the stalled client
  // is dropped and counted.
  bool dropped = false;
  for (int i = 0; i < 400 && !dropped; ++i) {
    dropped = live.app->MetricsText().find("brine_web_dropped_slow_clients_total 1\n") != std::string::npos;
    if (!dropped) std::this_thread::sleep_for(50ms);
  }
  CHECK(dropped);
  CHECK(live.app->open_streams() == 1);  // the reader's stays open
  const long rss_after = RssKib();
  // RSS also counts this process's own SQLite writer; a backlog kept per
  // stream would be 12 MB more than that.
  INFO("RSS before " << rss_before << " KiB, after " << rss_after << " KiB");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's quarantine keeps freed buffers resident (seen: 406 MiB
  // more); the buffered-bytes bound above still holds in that build.
  WARN("AddressSanitizer build: RSS grew " << (rss_after - rss_before) / 1024 << " MiB; the bound is not checked");
#else
  CHECK(rss_after - rss_before < 100 * 1024);
#endif
}

TEST_CASE("web live: a slow client gets one skipped line instead of the backlog once it reads again",
          "[web][live]") {
  Live live({.stream_buffer_bytes = 16 * 1024});
  Conn slow(live.port(), "/events/stream?tag=salt/flood", live.Cookie(), 4096);
  REQUIRE(slow.ReadUntil([](const std::string& b) { return b.find("event: cursor") != std::string::npos; }, 10s));
  auto writer = live.Writer();
  for (int i = 0; i < 20; ++i) AddEvents(*writer, "salt/flood", i * 50, 50, 2000);  // ~2 MB
  std::this_thread::sleep_for(500ms);
  AddEvents(*writer, "salt/flood", 5000, 1);
  const bool summary = slow.ReadUntil(
      [](const std::string& b) {
        const auto n = EventNumbers(b);
        return b.find("event: skipped") != std::string::npos && !n.empty() && n.back() == 5000;
      },
      20s);
  INFO("slow client read " << slow.body().size() << " bytes");
  REQUIRE(summary);
  int skipped = 0;
  for (const Sse& e : ParseSse(slow.body())) {
    if (e.event == "skipped") skipped += static_cast<int>(brine::ParseJson(e.data).Find("skipped")->as_int());
  }
  const auto got = EventNumbers(slow.body());
  CHECK(skipped > 0);
  CHECK(static_cast<int>(got.size()) + skipped == 1001);  // every event either sent or counted
  CHECK(std::set<std::int64_t>(got.begin(), got.end()).size() == got.size());  // none twice
}

// ---------------------------------------------------------------- /sql

TEST_CASE("web live: /sql runs a read-only query as HTML, JSON and CSV, beside the documented views", "[web][live]") {
  Live live;
  const Reply json =
      Get(live.port(), "/sql?format=json&q=SELECT%20tag%20FROM%20salt_events%20ORDER%20BY%20id%20LIMIT%202",
          live.session);
  REQUIRE(json.status == 200);
  const Value v = brine::ParseJson(json.body);
  CHECK(ToJson(*v.Find("columns")) == R"(["tag"])");
  CHECK(ToJson(*v.Find("rows")) == R"([["salt/auth"],["salt/auth"]])");
  CHECK(!v.Find("truncated")->as_bool());
  const Reply page = Get(live.port(), "/sql?q=SELECT%20tag%20FROM%20salt_events%20WHERE%20tag%20LIKE%20%27%25script%25%27",
                         live.session);
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("<td>salt/&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
  CHECK_THAT(page.body, Catch::Contains("<summary class=\"view-name\">salt_events</summary>"));
  CHECK_THAT(page.body, Catch::Contains("<li>alter_time</li>"));
  CHECK_THAT(Get(live.port(), "/sql", live.session).body, Catch::Contains("<textarea name=\"q\""));
}

TEST_CASE("web live: /sql refuses writes, ATTACH and state-changing PRAGMAs, and stops a runaway query",
          "[web][live]") {
  Live live({.sql_timeout = 300ms, .sql_row_limit = 5});
  for (const std::string q : {"DELETE%20FROM%20event", "INSERT%20INTO%20master%20(name)%20VALUES%20(%27x%27)",
                              "DROP%20TABLE%20event", "ATTACH%20DATABASE%20%27%2Ftmp%2Fx.db%27%20AS%20x",
                              "PRAGMA%20journal_mode%3DDELETE", "PRAGMA%20user_version%3D7",
                              "CREATE%20TABLE%20t%20(x)"}) {
    INFO(q);
    const Reply r = Get(live.port(), "/sql?format=json&q=" + q, live.session);
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Catch::Contains("\"error\""));
  }
  auto s = live.Writer();
  CHECK(s->CountRows().events == 6);  // nothing was deleted
  const auto started = std::chrono::steady_clock::now();
  const Reply runaway = Get(live.port(),
                            "/sql?format=json&q=WITH%20RECURSIVE%20c(x)%20AS%20(SELECT%201%20UNION%20ALL%20SELECT%20x%2B1"
                            "%20FROM%20c)%20SELECT%20count(*)%20FROM%20c",
                            live.session);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(runaway.status == 408);
  CHECK_THAT(runaway.body, Catch::Contains("brine.web_sql_timeout_s"));
  CHECK(took < 10s);  // stopped by its budget, not run to the end (it never ends)
  const Value limited = brine::ParseJson(
      Get(live.port(), "/sql?format=json&q=SELECT%20id%20FROM%20event", live.session).body);
  CHECK(limited.Find("rows")->as_list().size() == 5);
  CHECK(limited.Find("truncated")->as_bool());
}

// ---------------------------------------------------------------- metrics

TEST_CASE("web live: the metrics count open streams, failed logins and page time per route, written atomically",
          "[web][live]") {
  Live live;
  Conn bad(live.port(), "/login?token=wrong", {});
  bad.ReadAll();
  (void)Get(live.port(), "/events", live.session);
  (void)Get(live.port(), "/jobs/20261126090000123456", live.session);
  Conn stream(live.port(), "/events/stream", live.Cookie());
  REQUIRE(stream.ReadUntil([](const std::string& b) { return !b.empty(); }, 10s));
  const std::string text = live.app->MetricsText();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("brine_web_open_streams 1\n"));
  CHECK_THAT(text, Catch::Contains("brine_web_failed_logins_total 1\n"));
  CHECK_THAT(text, Catch::Contains("brine_web_dropped_slow_clients_total 0\n"));
  CHECK_THAT(text, Catch::Contains("brine_web_page_seconds_count{route=\"events\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("brine_web_page_seconds_count{route=\"jobs/jid\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("brine_web_page_seconds_bucket{route=\"events\",le=\"+Inf\"} 1\n"));
  CHECK(web::RouteLabel("minions/<script>") == "minions/id");
  CHECK(web::RouteLabel("nope/x") == "other");
  CHECK(web::RouteLabel("") == "overview");

  const fs::path file = live.dir / "metrics" / "brine-web.prom";
  fs::create_directories(file.parent_path());
  {
    web::MetricsWriter writer(file, 20ms, [] { return std::string("brine_web_open_streams 3\n"); });
    std::this_thread::sleep_for(60ms);
  }
  std::ifstream in(file);
  std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(written == "brine_web_open_streams 3\n");
  CHECK((fs::status(file).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write |
                                                              fs::perms::group_read | fs::perms::others_read));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(file.parent_path())) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);  // no temp file left behind
}

// ---------------------------------------------------------------- /queues, read-only

namespace {

void CheckReadOnlyQueues(const std::string& database) {
  {
    auto rw = store::OpenQueues(database);
    std::vector<Value> items;
    for (int i = 0; i < 1500; ++i) items.emplace_back(i);
    REQUIRE(rw->Insert("long", items).kind == store::InsertOutcome::Kind::kInserted);
  }
  auto ro = store::OpenQueues(database, {.access = store::OpenOptions::Access::kReadOnly});
  CHECK(ro->ListQueues() == std::vector<std::string>{"long"});
  CHECK(ro->Length("long") == 1500);
  const std::vector<Value> head = ro->Items("long", 3);
  CHECK(brine::ToJson(Value(brine::ValueList(head.begin(), head.end()))) == "[0,1,2]");
  CHECK(ro->Items("long").size() == 1500);
  CHECK_THROWS_AS(ro->Items("long", -2), std::invalid_argument);
  // An unknown name is answered without being recorded, and writes are refused.
  CHECK(ro->Length("never") == 0);
  CHECK(ro->Items("never", 10).empty());
  CHECK(ro->ListQueues() == std::vector<std::string>{"long"});
  CHECK_THROWS_AS(ro->Insert("long", std::vector<Value>{Value("x")}), store::StoreError);
  CHECK_THROWS_AS(ro->Pop("long", 1), store::StoreError);
  CHECK_THROWS_AS(ro->Delete("long", std::vector<Value>{Value(1)}), store::StoreError);
  CHECK(ro->Length("long") == 1500);
}

}  // namespace

TEST_CASE("web live: queues open read-only record nothing, refuse writes and read a bounded head", "[web][live]") {
  TempDir dir;
  const fs::path db = dir / "brine.sqlite";
  CHECK_THROWS_AS(store::OpenQueues(db, {.access = store::OpenOptions::Access::kReadOnly}), store::StoreError);
  CHECK(!fs::exists(db));  // a missing store is an error, never created
  (void)store::OpenStore(db);
  CheckReadOnlyQueues(db.string());
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED on PostgreSQL: " << *why);
    return;
  }
  CheckReadOnlyQueues(brine::test::PostgresServer::Shared().CreateDatabase());
}

TEST_CASE("web live: /queues lists at most 1000 items of a queue and says how many more", "[web][live]") {
  Live live;
  {
    auto q = store::OpenQueues(live.database);
    std::vector<Value> items;
    for (int i = 0; i < 1200; ++i) items.emplace_back("item-" + std::to_string(i));
    REQUIRE(q->Insert("big", items).kind == store::InsertOutcome::Kind::kInserted);
  }
  const Reply page = Get(live.port(), "/queues", live.session);
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("1200 items"));
  CHECK_THAT(page.body, Catch::Contains("item-999"));
  CHECK_THAT(page.body, !Catch::Contains("item-1000"));
  CHECK_THAT(page.body, Catch::Contains("200 more, not shown"));
  const Value json = brine::ParseJson(Get(live.port(), "/queues?format=json", live.session).body);
  CHECK(json.Find("queues")->as_list()[0].Find("length")->as_int() == 1200);
  CHECK(json.Find("queues")->as_list()[0].Find("items")->as_list().size() == 1000);
}

TEST_CASE("web live: /events and its stream answer alike on PostgreSQL", "[web][live][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("SKIPPED: " << *why);
    return;
  }
  Live lite;
  Live pg({}, brine::test::PostgresServer::Shared().CreateDatabase());
  auto tags_of = [](const std::string& body) {
    std::vector<std::string> tags;
    const Value page = brine::ParseJson(body);
    for (const Value& e : page.Find("events")->as_list()) {
      tags.push_back(e.Find("tag")->as_string() + " " + brine::ToJson(*e.Find("data")));
    }
    return tags;
  };
  for (const std::string target : {"/events?format=json", "/events?format=json&tag=salt/auth*",
                                   "/events?format=json&tag=salt/*/web?/start&limit=1"}) {
    INFO(target);
    const Reply a = Get(lite.port(), target, lite.session);
    const Reply b = Get(pg.port(), target, pg.session);
    INFO("SQLite: " << a.body << "\nPostgreSQL: " << b.body);
    REQUIRE(a.status == 200);
    REQUIRE(b.status == 200);
    CHECK(tags_of(a.body) == tags_of(b.body));
  }
  const Value first = brine::ParseJson(Get(pg.port(), "/events?format=json&limit=4", pg.session).body);
  const Value rest = brine::ParseJson(
      Get(pg.port(), "/events?format=json&before=" + first.Find("next")->as_string(), pg.session).body);
  CHECK(first.Find("events")->as_list().size() == 4);
  CHECK(rest.Find("events")->as_list().size() == 2);

  Conn stream(pg.port(), "/events/stream?tag=salt/auth*", pg.Cookie());
  REQUIRE(stream.ReadUntil([](const std::string& b) { return b.find("event: cursor") != std::string::npos; }, 10s));
  auto writer = pg.Writer();
  AddEvents(*writer, "salt/auth", 10, 2);
  AddEvents(*writer, "salt/auth", 12, 2);
  REQUIRE(stream.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 4; }, 15s));
  CHECK(EventNumbers(stream.body()) == std::vector<std::int64_t>{10, 11, 12, 13});
  std::string second_id;
  int plain = 0;
  for (const Sse& e : ParseSse(stream.body())) {
    if (e.event.empty() && ++plain == 2) second_id = e.id;
  }
  CHECK_THAT(second_id, Catch::StartsWith("p"));
  auto headers = pg.Cookie();
  headers.emplace_back("Last-Event-ID", second_id);
  Conn resumed(pg.port(), "/events/stream?tag=salt/auth*", headers);
  REQUIRE(resumed.ReadUntil([](const std::string& b) { return EventNumbers(b).size() >= 2; }, 15s));
  CHECK(EventNumbers(resumed.body()) == std::vector<std::int64_t>{12, 13});
}

TEST_CASE("web live: a glob that matches little gives partial pages within its budget that resume to the match",
          "[web][live]") {
  TempDir dir;
  auto s = store::OpenStore(dir / "brine.sqlite");
  AddEvents(*s, "rare/one", 0, 1);  // the oldest
  for (int i = 0; i < 5; ++i) AddEvents(*s, "common/x", 1 + i * 1000, 1000);
  // A budget of nothing: each call reads one bounded window, then stops.
  std::optional<std::int64_t> before;
  std::vector<std::int64_t> found;
  int partial = 0;
  for (int call = 0; call < 20; ++call) {
    const store::EventPage page =
        s->ListEvents({.tag_glob = "rare/*", .before_id = before, .limit = 10, .time_budget = 0ms});
    for (const auto& e : page.events) found.push_back(brine::ParseJson(e.event.data_json).Find("n")->as_int());
    if (page.complete) break;
    ++partial;
    REQUIRE(page.reached.has_value());
    CHECK((!before || *page.reached < *before));  // it always gets further
    before = page.reached;
  }
  CHECK(partial >= 2);  // 5,001 events in windows of 2,000
  CHECK(found == std::vector<std::int64_t>{0});
  // Without a budget the same glob is one whole answer.
  const store::EventPage whole = s->ListEvents({.tag_glob = "rare/*", .limit = 10});
  CHECK(whole.complete);
  CHECK(whole.events.size() == 1);
}
