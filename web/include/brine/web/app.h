// brine-web's application: routing, the security rules every request passes
// (Host check, session or trusted user, CSRF on POSTs, headers), and the
// pages. Independent of the HTTP library: App::Handle takes a Request and
// gives a Response, so tests can drive it with a fake clock.
//
// Routes, under Options::base_path (default "/"):
//   GET  login[?token=T]  the login form; with a token: checks it in constant
//                         time and, when right, starts a session and answers
//                         303 to the overview with the session cookie (the token
//                         leaves the URL). Failures count towards the limit.
//   POST login            the form: token + csrf (double-submit, against the
//                         brine_login_csrf cookie).
//   GET  logout           a page with the logout button; POST logout (csrf)
//                         ends the session.
//   GET  (empty)          the overview: hourly charts, ingest, lag, size, latest failures
//   GET  jobs             the job history, filtered and paged (?format=json|csv)
//   GET  minions          each minion's record in a window (?format=json|csv); minions/<id> one
//   GET  active           jobs still running (?format=json|csv)
//   GET  failures         failed returns and states in a window (?format=json|csv)
//   GET  queues           queue names, lengths and items (?format=json|csv).
//   GET  jobs/<jid>       a job's load and returns (?format=json).
//   GET  events           the event archive by tag glob (?tag=, ?before=, ?format=json|csv)
//                         with the live tail above it.
//   GET  events/stream    the live tail as Server-Sent Events (?tag=; Last-Event-ID or
//                         ?after= resumes); 401 without a session.
//   GET  sql              the read-only SQL console (?q=, ?format=json|csv).
//   GET  static/<name>.<hash>.<ext>  the embedded assets, immutable.
// Without a session (or a trusted X-Remote-User), JSON and CSV answer 401 and
// HTML redirects to login. A Host header that is neither a loopback address
// nor in Options::hosts is answered 403, before anything else.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/sql.h"
#include "brine/web/auth.h"
#include "brine/web/http_server.h"

namespace brine::web {

class StorePool;
class WebMetrics;
class EventHub;

class App {
 public:
  struct Options {
    std::filesystem::path database;  // read-only (brine.read_database when set)
    std::string token;               // the login token (64 hex digits)
    std::string base_path = "/";     // starts and ends with "/"
    std::vector<std::string> hosts;  // brine.web_hosts
    bool trust_remote_user = false;  // brine.web_trust_remote_user
    const Clock* clock = nullptr;    // nullptr: the system clock; else it outlives the App
    Sessions::Limits session_limits{};
    std::size_t max_login_failures = 10;  // per login_window
    std::chrono::seconds login_window{60};
    // The pages' settings (web/src/pages.h).
    std::vector<std::string> hide_functions;          // brine.web_hide_functions
    std::chrono::milliseconds page_budget{2000};      // /jobs's time budget for unindexed filters
    // /minions and /minions/<id>: the last highstates' share of the page's
    // budget; past it the page shows the counts without them (a minion
    // whose newest state job lies far back reads its returns back to it).
    std::chrono::milliseconds highstate_budget{1500};
    std::chrono::seconds active_window{300};          // brine.active_window_s, for /active
    // The live pages (/events, /events/stream, /sql) and the metrics:
    std::chrono::milliseconds sql_timeout{5000};   // brine.web_sql_timeout_s
    std::int64_t sql_row_limit = 1000;             // brine.web_sql_row_limit
    std::chrono::milliseconds tail_poll{100};      // how often the live tail asks the store
    std::size_t stream_buffer_bytes = 256 * 1024;  // per open stream (docs/web.md, RSS)
    std::chrono::milliseconds stream_stall_limit{30000};  // a stream that reads nothing this long is closed
  };
  explicit App(Options options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Answers one request; safe to call from several threads at once.
  [[nodiscard]] Response Handle(const Request& request);

  [[nodiscard]] std::int64_t failed_logins() { return limiter_.total_failures(); }
  // brine-web's metrics as Prometheus text (docs/web.md, "Metrics"); thread-safe.
  [[nodiscard]] std::string MetricsText();
  [[nodiscard]] std::int64_t open_streams() const;

 private:
  Response Route(const Request& request, const std::string& path);
  Response Login(const Request& request);
  Response Logout(const Request& request, const Sessions::Session& session, const std::string& session_id);
  Response StartSession(const std::string& user);
  Response EventStream(const Request& request);

  Options options_;
  SystemClock system_clock_;
  const Clock& clock_;  // options_.clock or system_clock_
  Sessions sessions_;
  LoginLimiter limiter_;
  std::unique_ptr<StorePool> stores_;
  // The live pages'; metrics_ outlives hub_ (declared first).
  std::unique_ptr<WebMetrics> metrics_;
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<store::SqlEngine> sql_;
};

// True for a Host header value naming a loopback address (127.0.0.0/8,
// [::1], "localhost"), with or without a port, or a name in `allowed`
// (compared without case and port).
[[nodiscard]] bool HostAllowed(const std::string& host, const std::vector<std::string>& allowed);

}  // namespace brine::web
