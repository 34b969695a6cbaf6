// /active: jobs still running, as brine-run jobs.active answers them from the
// store (store/active_jobs.h): each job's minions that have not returned,
// with the pid of their latest saltutil.find_job reply.
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/output/rows.h"
#include "brine/store/active_jobs.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

std::string LoadText(const Value& load, std::string_view key) {
  const Value* v = load.Find(key);
  return v == nullptr || v->is_null() ? "" : v->is_string() ? v->as_string() : ToJson(*v);
}

}  // namespace

Response ActivePage(const PageContext& ctx, store::Store& store, const Request& request, Micros now,
                    std::chrono::seconds window) {
  const std::string format = request.Query("format");
  const std::vector<store::ActiveJob> jobs = store::FindActiveJobs(store, now, window);
  if (format == "json") {
    ValueList list;
    for (const store::ActiveJob& j : jobs) {
      const std::optional<Micros> start = JidToMicros(j.jid);
      ValueMap running;
      for (const auto& [minion, pid] : j.running) running.emplace_back(minion, pid);
      ValueList returned;
      for (const std::string& m : j.returned) returned.emplace_back(m);
      list.push_back(
          Value::Map({{"jid", j.jid},
                      {"start_time", start ? Value(IsoTime(*start)) : Value()},
                      {"function", j.load.Find("fun") != nullptr ? *j.load.Find("fun") : Value()},
                      {"arguments", j.load.Find("arg") != nullptr ? *j.load.Find("arg") : Value()},
                      {"target", j.load.Find("tgt") != nullptr ? *j.load.Find("tgt") : Value()},
                      {"user", j.load.Find("user") != nullptr ? *j.load.Find("user") : Value()},
                      {"running", Value(std::move(running))},
                      {"returned", Value(std::move(returned))}}));
    }
    return JsonResponse(200, Value::Map({{"active", Value(std::move(list))},
                                         {"window_s", static_cast<std::int64_t>(window.count())}}));
  }
  if (format == "csv") {
    std::vector<std::vector<Value>> rows;
    for (const store::ActiveJob& j : jobs) {
      for (const auto& [minion, pid] : j.running) {
        rows.push_back({Value(j.jid), Value(LoadText(j.load, "fun")),
                        Value(LoadText(j.load, "tgt")), Value(minion), pid});
      }
    }
    return CsvResponse(output::CsvTable({"jid", "function", "target", "minion", "pid"}, rows),
                       "active.csv");
  }
  Html body =
      Html::Literal(
          "<h1>Active jobs</h1><p class=\"muted\">Expected minions that have not returned, with "
          "the "
          "pid of their latest <code>saltutil.find_job</code> reply within ") +
      Escape(std::to_string(window.count())) +
      Html::Literal(" s (brine.active_window_s), or none yet for a job younger than that.</p>");
  if (jobs.empty()) body += Html::Literal("<p id=\"no-active\">No job is running.</p>");
  if (!jobs.empty()) {
    body += Html::Literal(
        "<table id=\"active\"><thead><tr><th>Jid</th><th>Start</th><th>Function</th><th>Target</th>"
        "<th>User</th><th>Running (pid)</th><th>Returned</th></tr></thead><tbody>");
    for (const store::ActiveJob& j : jobs) {
      const std::optional<Micros> start = JidToMicros(j.jid);
      body += Html::Literal("<tr><td class=\"jid\"><a href=\"") +
              Escape(ctx.base_path + "jobs/" + UrlEncode(j.jid)) + Html::Literal("\">") +
              Escape(j.jid) + Html::Literal("</a></td><td>") +
              (start ? TimeElement(*start) : Html()) + Html::Literal("</td><td class=\"fun\">") +
              Escape(LoadText(j.load, "fun")) + Html::Literal("</td><td class=\"tgt\">") +
              Escape(LoadText(j.load, "tgt")) + Html::Literal("</td><td class=\"user\">") +
              Escape(LoadText(j.load, "user")) + Html::Literal("</td><td class=\"running\"><ul>");
      for (const auto& [minion, pid] : j.running) {
        body += Html::Literal("<li><span class=\"minion-id\">") + Escape(minion) +
                Html::Literal("</span> ") +
                Escape(pid.is_null() ? "(no reply yet)" : "pid " + ToJson(pid)) +
                Html::Literal("</li>");
      }
      body += Html::Literal("</ul></td><td class=\"num\">") +
              Escape(std::to_string(j.returned.size())) + Html::Literal("</td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  return HtmlResponse(200, Layout(ctx, "Active jobs", body));
}

}  // namespace brine::web
