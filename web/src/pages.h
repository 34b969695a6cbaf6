// The pages, each a function from a request and the data it reads to a
// Response, assembled from escaped pieces (html.h). The same data feeds the
// HTML, JSON and CSV forms.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include <string_view>

#include "brine/core/value.h"
#include "brine/store/sql.h"
#include "brine/store/store.h"
#include "brine/web/html.h"
#include "brine/web/http_server.h"

namespace brine::web {

struct PageContext {
  std::string base_path;  // "/" or "/brine/"
  std::string user;       // who is logged in
  std::string csrf;       // the session's CSRF token, for the logout form
};

// The page around `body`: the stylesheet, the ES module, the navigation, the
// time toggle and the logout button.
[[nodiscard]] Html Layout(const PageContext& ctx, std::string_view title, const Html& body);
// `t` as ISO 8601 UTC with microseconds ("2026-11-26T09:00:00.000000Z").
[[nodiscard]] std::string IsoTime(Micros t);
// <time datetime="ISO">ISO</time>, which the ES module can show in the browser's zone.
[[nodiscard]] Html TimeElement(Micros t);

[[nodiscard]] Response HtmlResponse(int status, const Html& page);
[[nodiscard]] Response JsonResponse(int status, const Value& data);
[[nodiscard]] Response CsvResponse(const std::string& csv, const std::string& filename);

// The login form (POST, with `login_csrf` as a hidden field); `message` is
// shown above it when not empty.
[[nodiscard]] Html LoginPage(const std::string& base_path, const std::string& login_csrf, std::string_view message);

// /queues over the store at `database` (format: "", "json" or "csv").
[[nodiscard]] Response QueuesPage(const PageContext& ctx, const std::filesystem::path& database,
                                  const std::string& format);
// /jobs/<jid> from `store`: the whole job's counts and a page of its minions
// (?after=, ?limit= 1-500, ?state=failed|missing|returned, ?minion=; a bad
// limit or state answers 400), format "" or "json" (docs/web.md).
[[nodiscard]] Response JobPage(const PageContext& ctx, store::Store& store, const std::string& jid,
                               const Request& request);

// The pages of the overview, /jobs, /minions, /failures and /active (docs/web.md).
// Each reads `store` (leased by the caller for this request) with one bounded query.
struct JobsPageOptions {
  std::vector<std::string> hide_functions;     // brine.web_hide_functions, unless hidden=show
  std::chrono::milliseconds time_budget{2000};  // a partial page after this
};
// /jobs (?format=json|csv); ?jid=X answers 303 to jobs/X.
[[nodiscard]] Response JobsPage(const PageContext& ctx, store::Store& store, const Request& request,
                                const JobsPageOptions& options);
// /, the overview at `now`, over the store at `database` (for its size).
[[nodiscard]] Response OverviewPage(const PageContext& ctx, store::Store& store, const std::filesystem::path& database,
                                    const Request& request, Micros now);
// /active: jobs still running at `now`, as brine-run jobs.active finds them.
[[nodiscard]] Response ActivePage(const PageContext& ctx, store::Store& store, const Request& request, Micros now,
                                  std::chrono::seconds window);
// /minions over the store at `database` (store/minion_report.h), and /minions/<id>.
// Older slices of the window are read only while `slices_budget` has not gone;
// then the page is partial, with a link to the rest of the window.
[[nodiscard]] Response MinionsPage(const PageContext& ctx, const std::filesystem::path& database,
                                   const Request& request, Micros now,
                                   std::chrono::milliseconds highstate_budget);
[[nodiscard]] Response MinionPage(const PageContext& ctx, const std::filesystem::path& database,
                                  const std::string& minion, const Request& request, Micros now,
                                  std::chrono::milliseconds highstate_budget);
// /failures: failed returns and failed states of the newest failed jobs in a window.
[[nodiscard]] Response FailuresPage(const PageContext& ctx, store::Store& store, const Request& request, Micros now);
// --- the live pages (events, the SQL console) ----------------------------------
// /events from `store`: newest first, ?tag=<glob>, ?before=<id>, ?limit=N
// (format: "", "json" or "csv"); the HTML form has the live tail above it.
[[nodiscard]] Response EventsPage(const PageContext& ctx, store::Store& store, const Request& request,
                                  const std::string& format);
// The console's own limits (brine.web_sql_timeout_s, brine.web_sql_row_limit).
struct SqlLimits {
  std::chrono::milliseconds timeout{5000};
  std::int64_t row_limit = 1000;
};
// /sql?q=<SQL> over `engine`; the query is cancelled when the client hangs up.
[[nodiscard]] Response SqlPage(const PageContext& ctx, const store::SqlEngine& engine, const SqlLimits& limits,
                               const Request& request, const std::string& format);

}  // namespace brine::web
