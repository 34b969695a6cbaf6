#include "brine/web/app.h"

#include <arpa/inet.h>

#include <mutex>

#include "assets.h"
#include "brine/core/jid.h"
#include "event_stream.h"
#include "brine/web/metrics.h"
#include "pages.h"

namespace brine::web {

// Read-only Stores for the pool's threads: a Store belongs to one thread at a
// time (store.h), so each request leases one and gives it back.
class StorePool {
 public:
  explicit StorePool(std::filesystem::path database) : database_(std::move(database)) {}
  class Lease {
   public:
    Lease(StorePool& pool, std::unique_ptr<store::Store> s) : pool_(pool), store_(std::move(s)) {}
    ~Lease() { pool_.Return(std::move(store_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    store::Store& operator*() { return *store_; }

   private:
    StorePool& pool_;  // outlives the lease
    std::unique_ptr<store::Store> store_;
  };
  Lease Take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto s = std::move(idle_.back());
        idle_.pop_back();
        return Lease(*this, std::move(s));
      }
    }
    return Lease(*this, store::OpenStore(database_, {.access = store::OpenOptions::Access::kReadOnly,
                                                      .sqlite = {.cache_kib = 8 * 1024}}));
  }

 private:
  void Return(std::unique_ptr<store::Store> s) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < 4) idle_.push_back(std::move(s));
  }
  const std::filesystem::path database_;
  std::mutex mutex_;  // guards idle_
  std::vector<std::unique_ptr<store::Store>> idle_;
};

namespace {

constexpr const char* kSessionCookie = "brine_session";
constexpr const char* kLoginCsrfCookie = "brine_login_csrf";

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// The host part of a Host header: "[::1]:8080" -> "::1", "a:80" -> "a".
std::string HostName(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    const std::size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  return host.substr(0, host.find(':'));
}

void AddSecurityHeaders(Response& r) {
  // The same on every answer: no inline script or style, no framing, no
  // sniffing, no referrer (a login URL holds the token), no CORS header ever.
  r.headers.emplace_back("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  bool cached = false;
  for (const auto& [name, value] : r.headers) cached |= name == "Cache-Control";
  if (!cached) r.headers.emplace_back("Cache-Control", "no-store");
}

Response Redirect(const std::string& to) { return {.status = 303, .headers = {{"Location", to}}, .body = ""}; }

Response Text(int status, const std::string& text) {
  return {.status = status, .headers = {{"Content-Type", "text/plain; charset=utf-8"}}, .body = text + "\n"};
}

std::string WantedFormat(const Request& r) {
  const std::string f = r.Query("format");
  return f == "json" || f == "csv" ? f : "";
}

}  // namespace

bool HostAllowed(const std::string& host, const std::vector<std::string>& allowed) {
  const std::string name = Lower(HostName(host));
  if (name.empty()) return false;
  if (name == "localhost" || name == "::1") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, name.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) return true;
  for (const std::string& a : allowed) {
    if (Lower(a) == name) return true;
  }
  return false;
}

App::App(Options options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : system_clock_),
      sessions_(clock_, options_.session_limits),
      limiter_(clock_, options_.max_login_failures, options_.login_window),
      stores_(std::make_unique<StorePool>(options_.database)),
      metrics_(std::make_unique<WebMetrics>()),
      hub_(std::make_unique<EventHub>(EventHub::Options{.database = options_.database.string(),
                                                        .poll = options_.tail_poll,
                                                        .buffer_bytes = options_.stream_buffer_bytes,
                                                        .stall_limit = options_.stream_stall_limit},
                                      *metrics_)),
      sql_(store::OpenSqlEngine(options_.database.string())) {}

std::string App::MetricsText() { return metrics_->Text(failed_logins()); }

std::int64_t App::open_streams() const { return metrics_->open_streams(); }

App::~App() = default;

Response App::Handle(const Request& request) {
  Response r;
  if (!HostAllowed(request.Header("host"), options_.hosts)) {
    // Against DNS rebinding: a page of another site that resolves its name to
    // 127.0.0.1 sends its own name here.
    r = Text(403, "Host not allowed: add it to brine.web_hosts");
  } else if (request.method != "GET" && request.method != "HEAD" && request.method != "POST") {
    r = Text(405, "method not allowed");
    r.headers.emplace_back("Allow", "GET, HEAD, POST");
  } else if (!request.path.starts_with(options_.base_path)) {
    r = request.path == "/" ? Redirect(options_.base_path) : Text(404, "not found");
  } else {
    const std::string path = request.path.substr(options_.base_path.size());
    const auto started = std::chrono::steady_clock::now();
    try {
      r = Route(request, path);
    } catch (const std::exception& e) {
      r = Text(500, std::string("brine-web: ") + e.what());
    }
    metrics_->PageTime(RouteLabel(path), std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::steady_clock::now() - started));
  }
  AddSecurityHeaders(r);
  return r;
}

Response App::StartSession(const std::string& user) {
  const std::string id = sessions_.Create(user);
  Response r = Redirect(options_.base_path);
  r.headers.emplace_back("Set-Cookie", std::string(kSessionCookie) + "=" + id + "; Path=" + options_.base_path +
                                           "; HttpOnly; SameSite=Strict");
  r.headers.emplace_back("Set-Cookie", std::string(kLoginCsrfCookie) + "=; Path=" + options_.base_path +
                                           "; HttpOnly; SameSite=Strict; Max-Age=0");
  return r;
}

Response App::Login(const Request& request) {
  const bool post = request.method == "POST";
  auto form_page = [&](int status, std::string_view message) {
    const std::string csrf = RandomHex(16);
    Response r = HtmlResponse(status, LoginPage(options_.base_path, csrf, message));
    r.headers.emplace_back("Set-Cookie", std::string(kLoginCsrfCookie) + "=" + csrf + "; Path=" +
                                             options_.base_path + "; HttpOnly; SameSite=Strict");
    return r;
  };
  std::string token;
  if (post) {
    auto cookie = request.cookies.find(kLoginCsrfCookie);
    auto field = request.form.find("csrf");
    if (cookie == request.cookies.end() || field == request.form.end() || cookie->second.empty() ||
        !ConstantTimeEquals(cookie->second, field->second)) {
      return form_page(403, "The form expired or came from another page (CSRF check failed); try again.");
    }
    auto t = request.form.find("token");
    token = t == request.form.end() ? "" : t->second;
  } else {
    auto t = request.query.find("token");
    if (t == request.query.end()) return form_page(200, "");
    token = t->second;
  }
  if (!limiter_.Allowed()) return form_page(429, "Too many failed logins; wait a minute.");
  if (!ConstantTimeEquals(token, options_.token)) {
    limiter_.Failed();
    return form_page(403, "Wrong token.");
  }
  // A token names nobody: the header names a user only when a trusted
  // proxy gave one (brine.web_trust_remote_user).
  return StartSession("");
}

Response App::Logout(const Request& request, const Sessions::Session& session, const std::string& session_id) {
  auto field = request.form.find("csrf");
  if (field == request.form.end() || !ConstantTimeEquals(field->second, session.csrf)) {
    return Text(403, "CSRF check failed: log out with the page's button");
  }
  sessions_.End(session_id);
  Response r = Redirect(options_.base_path + "login");
  r.headers.emplace_back("Set-Cookie", std::string(kSessionCookie) + "=; Path=" + options_.base_path +
                                           "; HttpOnly; SameSite=Strict; Max-Age=0");
  return r;
}

Response App::Route(const Request& request, const std::string& path) {
  if (path.starts_with("static/")) {
    const Asset* asset = FindAsset(path);
    if (asset == nullptr) return Text(404, "not found");
    return {.status = 200,
            .headers = {{"Content-Type", std::string(AssetType(*asset))},
                        {"Cache-Control", "public, max-age=31536000, immutable"}},
            .body = std::string(asset->bytes)};
  }
  if (path == "login") return Login(request);

  // Who is asking: a trusted proxy's user, or a session.
  std::optional<Sessions::Session> session;
  std::string session_id;
  const std::string remote_user = request.Header("x-remote-user");
  if (options_.trust_remote_user && request.peer_is_loopback && !remote_user.empty()) {
    session = Sessions::Session{.user = remote_user, .csrf = ""};
  } else if (auto c = request.cookies.find(kSessionCookie); c != request.cookies.end()) {
    session_id = c->second;
    session = sessions_.Use(session_id);
  }
  const std::string format = WantedFormat(request);
  if (!session) {
    if (!format.empty() || request.method == "POST" || path == "events/stream") {
      return JsonResponse(401, Value::Map({{"error", "login required"}}));
    }
    return Redirect(options_.base_path + "login");
  }
  const PageContext ctx{.base_path = options_.base_path, .user = session->user, .csrf = session->csrf};
  if (path == "logout") {
    if (request.method == "POST") {
      if (session_id.empty()) return Text(400, "a user named by the proxy logs out at the proxy");
      return Logout(request, *session, session_id);
    }
    return HtmlResponse(200, Layout(ctx, "Log out", Html::Literal("<h1>Log out</h1><p>Use the button above.</p>")));
  }
  if (request.method == "POST") return Text(405, "method not allowed");
  // The pages of h28-pages: the overview, jobs, minions, active, failures.
  if (path == "minions")
    return MinionsPage(ctx, options_.database, request, clock_.Now(), options_.highstate_budget);
  if (path.starts_with("minions/") && path.size() > 8 && path.size() <= 8 + 1024) {
    return MinionPage(ctx, options_.database, path.substr(8), request, clock_.Now(), options_.highstate_budget);
  }
  if (path.empty() || path == "jobs" || path == "active" || path == "failures") {
    auto lease = stores_->Take();
    if (path.empty()) return OverviewPage(ctx, *lease, options_.database, request, clock_.Now());
    if (path == "jobs") {
      return JobsPage(ctx, *lease, request,
                      {.hide_functions = options_.hide_functions, .time_budget = options_.page_budget});
    }
    if (path == "active") return ActivePage(ctx, *lease, request, clock_.Now(), options_.active_window);
    return FailuresPage(ctx, *lease, request, clock_.Now());
  }
  if (path == "queues") return QueuesPage(ctx, options_.database, format);
  if (path.starts_with("jobs/")) {
    const std::string jid = path.substr(5);
    if (jid.empty() || jid.size() > 64) return Text(404, "not found");
    auto lease = stores_->Take();
    return JobPage(ctx, *lease, jid, request);
  }
  // The live pages.
  if (path == "events") {
    auto lease = stores_->Take();
    return EventsPage(ctx, *lease, request, format);
  }
  if (path == "events/stream") return EventStream(request);
  if (path == "sql") {
    return SqlPage(ctx, *sql_, {.timeout = options_.sql_timeout, .row_limit = options_.sql_row_limit}, request,
                   format);
  }
  return Text(404, "not found");
}

Response App::EventStream(const Request& request) {
  const std::string glob = request.Query("tag");
  std::string cursor = request.Header("last-event-id");
  if (cursor.empty()) cursor = request.Query("after");
  {
    auto lease = stores_->Take();
    if (cursor.empty()) {
      cursor = (*lease).TailStart();
    } else {
      try {
        (void)(*lease).TailEvents(cursor, glob, 0);  // checks the cursor, reads nothing
      } catch (const std::invalid_argument& e) {
        return Text(400, e.what());
      }
    }
  }
  return {.status = 200,
          .headers = {{"Content-Type", "text/event-stream; charset=utf-8"}, {"X-Accel-Buffering", "no"}},
          .body = "",
          .stream = hub_->Open(cursor, glob)};
}

}  // namespace brine::web
