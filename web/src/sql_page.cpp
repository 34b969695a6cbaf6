// /sql?q=<SQL>: the read-only console over store/sql.h with brine-web's own
// budget and row limit (App::Options::sql), the documented views and their
// columns beside the editor, as HTML, JSON and CSV.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "brine/core/json.h"
#include "brine/web/csv.h"
#include "pages.h"

namespace brine::web {
namespace {

// Bytes of SQL text taken (a longer text is refused before it runs).
constexpr std::size_t kMaxSqlBytes = 64 * 1024;

std::optional<std::string> CellText(const Value& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.as_string();
  return ToJson(v);
}

// Sets `cancel` when the browser hangs up while the query runs, so the
// engine stops it (SQLite's progress handler, PostgreSQL's PQcancel).
class HangUpWatch {
 public:
  HangUpWatch(const Request& request, store::SqlCancel& cancel) {
    if (!request.client_gone) return;
    thread_ = std::thread([this, &request, &cancel] {
      std::unique_lock lock(mutex_);
      while (!done_) {
        if (request.client_gone()) {
          cancel.Cancel();
          return;
        }
        wake_.wait_for(lock, std::chrono::milliseconds(100));
      }
    });
  }
  ~HangUpWatch() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  HangUpWatch(const HangUpWatch&) = delete;
  HangUpWatch& operator=(const HangUpWatch&) = delete;

 private:
  std::mutex mutex_;  // guards done_
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

Response SqlPage(const PageContext& ctx, const store::SqlEngine& engine, const SqlLimits& limits,
                 const Request& request, const std::string& format) {
  const std::string q = request.Query("q");
  std::optional<store::SqlResult> result;
  std::string error;
  int status = 200;
  const auto started = std::chrono::steady_clock::now();
  if (q.size() > kMaxSqlBytes) {
    error = "the query is longer than " + std::to_string(kMaxSqlBytes) + " bytes";
    status = 400;
  } else if (!q.empty()) {
    store::SqlCancel cancel;
    try {
      HangUpWatch watch(request, cancel);
      engine.Run(q, {}, {.timeout = limits.timeout, .row_limit = limits.row_limit},
                 [&](store::SqlResult&& r) { result = std::move(r); }, &cancel);
    } catch (const store::SqlTimeoutError& e) {
      error = "stopped after the time budget of " + std::to_string(limits.timeout.count() / 1000.0).substr(0, 4) +
              " s (brine.web_sql_timeout_s): " + e.what();
      status = 408;
    } catch (const store::SqlCancelledError& e) {
      error = std::string("cancelled: ") + e.what();
      status = 499;
    } catch (const store::SqlError& e) {
      error = e.what();
      status = 400;
    }
  }
  const auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (format == "json") {
    if (!error.empty()) return JsonResponse(status, Value::Map({{"error", error}}));
    ValueList columns;
    ValueList rows;
    if (result) {
      for (const std::string& c : result->columns) columns.emplace_back(c);
      for (auto& row : result->rows) rows.emplace_back(ValueList(row.begin(), row.end()));
    }
    return JsonResponse(200, Value::Map({{"columns", Value(std::move(columns))},
                                         {"rows", Value(std::move(rows))},
                                         {"truncated", result && result->truncated},
                                         {"elapsed_ms", static_cast<std::int64_t>(elapsed_ms)}}));
  }
  if (format == "csv") {
    if (!error.empty()) return JsonResponse(status, Value::Map({{"error", error}}));
    std::vector<std::vector<std::optional<std::string>>> rows;
    std::vector<std::string> columns;
    if (result) {
      columns = result->columns;
      for (const auto& row : result->rows) {
        std::vector<std::optional<std::string>> cells;
        for (const Value& v : row) cells.push_back(CellText(v));
        rows.push_back(std::move(cells));
      }
    }
    return CsvResponse(CsvTable(columns, rows), "query.csv");
  }
  const Html base = Escape(ctx.base_path);
  Html body = Html::Literal("<h1>SQL</h1><div class=\"sql\"><form class=\"sql-editor\" method=\"get\" action=\"") +
              base +
              Html::Literal("sql\"><textarea name=\"q\" id=\"q\" rows=\"8\" spellcheck=\"false\" "
                            "placeholder=\"SELECT jid, fun FROM jids ORDER BY jid DESC LIMIT 20\">") +
              Escape(q) + Html::Literal("</textarea><p><button type=\"submit\">Run</button> <span class=\"muted\">") +
              Escape("Read-only; " + std::to_string(limits.timeout.count() / 1000) + " s and " +
                     std::to_string(limits.row_limit) + " rows at most.") +
              Html::Literal("</span></p></form><aside id=\"views\"><h2>Views</h2>");
  try {
    for (const store::SqlView& v : engine.Views()) {
      body += Html::Literal("<details><summary class=\"view-name\">") + Escape(v.name) + Html::Literal("</summary><ul>");
      for (const std::string& c : v.columns) body += Html::Literal("<li>") + Escape(c) + Html::Literal("</li>");
      body += Html::Literal("</ul></details>");
    }
  } catch (const std::exception& e) {
    body += Html::Literal("<p class=\"error\">") + Escape(e.what()) + Html::Literal("</p>");
  }
  body += Html::Literal("</aside></div>");
  if (!error.empty()) body += Html::Literal("<p class=\"error\" id=\"sql-error\">") + Escape(error) + Html::Literal("</p>");
  if (result) {
    body += Html::Literal("<p class=\"muted\" id=\"sql-summary\">") +
            Escape(std::to_string(result->rows.size()) + " rows" + (result->truncated ? " (cut at the row limit)" : "") +
                   " in " + std::to_string(elapsed_ms) + " ms") +
            Html::Literal("</p><table id=\"result\"><thead><tr>");
    for (const std::string& c : result->columns) body += Html::Literal("<th>") + Escape(c) + Html::Literal("</th>");
    body += Html::Literal("</tr></thead><tbody>");
    for (const auto& row : result->rows) {
      body += Html::Literal("<tr>");
      for (const Value& v : row) {
        const auto text = CellText(v);
        body += text ? Html::Literal("<td>") + Escape(*text) + Html::Literal("</td>")
                     : Html::Literal("<td class=\"null\">NULL</td>");
      }
      body += Html::Literal("</tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  // The console page itself worked: its refusal is shown on it (JSON and
  // CSV carry the status).
  return HtmlResponse(200, Layout(ctx, "SQL", body));
}

}  // namespace brine::web
