// /minions and /minions/<id>: each minion's record over a window of jobs
// (since/until; the last 24 hours by default): targeted, returned, failed,
// missing; when it was last seen (its latest return, start or salt/auth
// event, as manage.up reads it); and its last highstate (state.highstate, or
// state.apply without state names) with its succeeded, changed and failed
// states. Alcali's conformity view, read through store/minion_report.h from
// the store's hourly rollups per minion (so the window counts whole hours of
// the jobs' start, which the page says), a page of minions at a time
// (after=<name>), under a budget.

#include "brine/core/json.h"
#include "brine/output/rows.h"
#include "brine/store/minion_report.h"
#include "brine/store/sql.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

constexpr std::size_t kDefaultLimit = 50;
constexpr std::size_t kMaxLimit = 500;
constexpr auto kBudget = std::chrono::milliseconds(5000);

Value TimeJson(const std::optional<Micros>& t) { return t ? Value(IsoTime(*t)) : Value(); }

Value HighstateJson(const std::optional<store::StateRun>& run) {
  if (!run) return Value();
  ValueList ids;
  for (const std::string& id : run->failed_ids) ids.emplace_back(id);
  return Value::Map({{"jid", run->jid},
                     {"function", run->function},
                     {"received", TimeJson(run->received)},
                     {"succeeded", run->succeeded},
                     {"changed", run->changed},
                     {"failed", run->failed},
                     {"failed_states", Value(std::move(ids))},
                     {"not_states", run->not_states}});
}

Value RecordJson(const store::MinionRecord& r, const std::optional<store::StateRun>& run) {
  return Value::Map({{"minion", r.minion},
                     {"targeted", r.targeted},
                     {"returned", r.returned},
                     {"failed", r.failed},
                     {"missing", r.missing},
                     {"last_seen", TimeJson(r.last_seen)},
                     {"last_highstate", HighstateJson(run)}});
}

Html HighstateCell(const PageContext& ctx, const std::optional<store::StateRun>& run, bool looked_up) {
  if (!looked_up) return Html::Literal("<span class=\"muted\">not looked up</span>");
  if (!run) return Html::Literal("<span class=\"muted\">none</span>");
  Html h = Html::Literal("<a href=\"") + Escape(ctx.base_path + "jobs/" + UrlEncode(run->jid)) +
           Html::Literal("\">") + (run->received ? TimeElement(*run->received) : Escape(run->jid)) +
           Html::Literal("</a> ");
  if (run->not_states)
    return h + Html::Literal("<span class=\"state-failed\">not a state return</span>");
  return h + Html::Literal("<span class=\"highstate-counts\">") +
         Escape(std::to_string(run->succeeded) + " ok, ") +
         Html::Literal("<span class=\"result-changed\">") +
         Escape(std::to_string(run->changed) + " changed") + Html::Literal("</span>, ") +
         (run->failed > 0 ? Html::Literal("<span class=\"state-failed\">")
                          : Html::Literal("<span>")) +
         Escape(std::to_string(run->failed) + " failed") + Html::Literal("</span></span>");
}

Html WindowForm(const PageContext& ctx, const Request& request, const Window& w,
                const std::string& action) {
  return Html::Literal("<form class=\"filters\" id=\"window\" method=\"get\" action=\"") +
         Escape(ctx.base_path + action) +
         Html::Literal("\"><label>Since <input name=\"since\" value=\"") +
         Escape(request.Query("since")) + Html::Literal("\" placeholder=\"") +
         Escape(IsoTime(w.since)) +
         Html::Literal("\"></label> <label>Until <input name=\"until\" value=\"") +
         Escape(request.Query("until")) +
         Html::Literal(
             "\" placeholder=\"now\"></label> <button type=\"submit\">Show</button></form>");
}

// The report's options for window `w`, under the page's budget.
store::MinionReportOptions ReportOptions(const Window& w) {
  return {.since = w.since, .until = w.until, .timeout = kBudget};
}

// Which jobs the counts are of: the window widened to whole hours.
Html CountedNote(const store::MinionRecords& r) {
  Html h = Html::Literal("<p class=\"muted\" id=\"counted\">Counted by the hour of each job's start: the jobs from ") +
           TimeElement(r.counted_since);
  if (r.counted_until) h += Html::Literal(" to ") + TimeElement(*r.counted_until);
  return h + Html::Literal(".</p>");
}

// The jobs the counts are of, as the JSON says it.
void AddCoverage(ValueMap& out, const store::MinionRecords& r) {
  out.emplace_back("counted_since", IsoTime(r.counted_since));
  out.emplace_back("counted_until", TimeJson(r.counted_until));
}

// The last highstates of `names` under `budget`; when it runs out, none
// (`looked_up` false): the page still shows its counts and last seen.
std::vector<std::optional<store::StateRun>> LastHighstates(const std::filesystem::path& database,
                                                           const std::vector<std::string>& names,
                                                           std::chrono::milliseconds budget, bool& looked_up) {
  try {
    looked_up = true;
    return store::ReadLastHighstates(database, names, budget);
  } catch (const store::SqlTimeoutError&) {
    looked_up = false;
    return std::vector<std::optional<store::StateRun>>(names.size());
  }
}

Html HighstatesNote(bool looked_up, std::chrono::milliseconds budget) {
  if (looked_up) return Html();
  return Html::Literal("<p class=\"partial\" id=\"highstates-partial\">The last highstates were not looked up: ") +
         Escape("their share of the page's time budget (" + std::to_string(budget.count()) +
                " ms) ran out. A minion whose newest state job lies far back reads its returns back to it.") +
         Html::Literal("</p>");
}

Response TooBig(const PageContext& ctx, const std::string& format) {
  const std::string message =
      "the minion report ran out of its time budget: the store is busy, try again";
  if (format == "json" || format == "csv")
    return JsonResponse(503, Value::Map({{"error", message}}));
  return HtmlResponse(503,
                      Layout(ctx, "Minions",
                             Html::Literal("<h1>Minions</h1><p class=\"error\" id=\"message\">") +
                                 Escape(message) + Html::Literal("</p>")));
}

}  // namespace

Response MinionsPage(const PageContext& ctx, const std::filesystem::path& database,
                     const Request& request, Micros now, std::chrono::milliseconds highstate_budget) {
  const std::string format = request.Query("format");
  const auto window = WindowOf(request, now);
  if (const auto* error = std::get_if<std::string>(&window)) return BadRequest(ctx, format, *error);
  const Window& w = std::get<Window>(window);
  const std::optional<std::size_t> parsed_limit = LimitOf(request, kDefaultLimit, kMaxLimit);
  if (!parsed_limit) return BadRequest(ctx, format, LimitMessage(kMaxLimit));
  const auto limit = static_cast<std::int64_t>(*parsed_limit);
  store::MinionRecords report;
  std::vector<std::optional<store::StateRun>> runs;
  bool looked_up = true;
  try {
    const auto started = std::chrono::steady_clock::now();
    store::MinionReportOptions options = ReportOptions(w);
    options.after = request.Query("after");
    options.limit = limit;
    report = store::ReadMinionRecords(database, options);
    std::vector<std::string> names;
    for (const auto& r : report.minions) names.push_back(r.minion);
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    runs = LastHighstates(database, names, std::min(highstate_budget, kBudget - spent), looked_up);
  } catch (const store::SqlTimeoutError&) {
    return TooBig(ctx, format);
  }
  const std::vector<store::MinionRecord>& records = report.minions;
  const std::optional<std::string> next = static_cast<std::int64_t>(records.size()) == limit
                                              ? std::optional(records.back().minion)
                                              : std::nullopt;

  if (format == "json") {
    ValueList list;
    for (std::size_t i = 0; i < records.size(); ++i)
      list.push_back(RecordJson(records[i], runs[i]));
    ValueMap out{{"since", IsoTime(w.since)},
                 {"until", TimeJson(w.until)},
                 {"minions", Value(std::move(list))},
                 {"next", next ? Value(*next) : Value()}};
    AddCoverage(out, report);
    out.emplace_back("highstates_looked_up", looked_up);
    return JsonResponse(200, Value(std::move(out)));
  }
  if (format == "csv") {
    std::vector<std::vector<Value>> rows;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const store::MinionRecord& r = records[i];
      const std::optional<store::StateRun>& run = runs[i];
      std::string ids;
      if (run) {
        for (const std::string& id : run->failed_ids) ids += (ids.empty() ? "" : " ") + id;
      }
      rows.push_back({Value(r.minion), Value(r.targeted), Value(r.returned), Value(r.failed),
                      Value(r.missing), TimeJson(r.last_seen), run ? Value(run->jid) : Value(),
                      run ? Value(run->succeeded) : Value(), run ? Value(run->changed) : Value(),
                      run ? Value(run->failed) : Value(), run ? Value(ids) : Value()});
    }
    return CsvResponse(output::CsvTable({"minion", "targeted", "returned", "failed", "missing",
                                         "last_seen", "last_highstate_jid", "states_succeeded",
                                         "states_changed", "states_failed", "failed_states"},
                                        rows),
                       "minions.csv");
  }
  Html body = Html::Literal("<h1>Minions</h1>") + WindowForm(ctx, request, w, "minions") +
              CountedNote(report) + HighstatesNote(looked_up, highstate_budget);
  if (records.empty())
    body += Html::Literal("<p id=\"no-minions\">No job of the window expected a minion.</p>");
  if (!records.empty()) {
    body += Html::Literal(
        "<table id=\"minions\"><thead><tr><th>Minion</th><th>Targeted</th><th>Returned</th>"
        "<th>Failed</th><th>Missing</th><th>Last seen</th><th>Last "
        "highstate</th></tr></thead><tbody>");
    for (std::size_t i = 0; i < records.size(); ++i) {
      const store::MinionRecord& r = records[i];
      body += Html::Literal("<tr><td class=\"minion-id\"><a href=\"") +
              Escape(ctx.base_path + "minions/" + UrlEncode(r.minion) +
                     QueryString(ViewOf(request, {"after", "limit", "format"}))) +
              Html::Literal("\">") + Escape(r.minion) +
              Html::Literal("</a></td><td class=\"num\">") + Escape(std::to_string(r.targeted)) +
              Html::Literal("</td><td class=\"num\">") + Escape(std::to_string(r.returned)) +
              (r.failed > 0 ? Html::Literal("</td><td class=\"num state-failed\">")
                            : Html::Literal("</td><td class=\"num\">")) +
              Escape(std::to_string(r.failed)) +
              (r.missing > 0 ? Html::Literal("</td><td class=\"num state-missing\">")
                             : Html::Literal("</td><td class=\"num\">")) +
              Escape(std::to_string(r.missing)) + Html::Literal("</td><td>") +
              (r.last_seen ? TimeElement(*r.last_seen)
                           : Html::Literal("<span class=\"muted\">never</span>")) +
              Html::Literal("</td><td class=\"highstate\">") + HighstateCell(ctx, runs[i], looked_up) +
              Html::Literal("</td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  body += Html::Literal("<p class=\"pager\">") + AfterLinks(ctx.base_path + "minions", request, next);
  body += FormatLinks(ctx, request, "minions") + Html::Literal("</p>");
  return HtmlResponse(200, Layout(ctx, "Minions", body));
}

Response MinionPage(const PageContext& ctx, const std::filesystem::path& database,
                    const std::string& minion, const Request& request, Micros now,
                    std::chrono::milliseconds highstate_budget) {
  const std::string format = request.Query("format");
  const auto window = WindowOf(request, now);
  if (const auto* error = std::get_if<std::string>(&window)) return BadRequest(ctx, format, *error);
  const Window& w = std::get<Window>(window);
  store::MinionRecords report;
  std::optional<store::StateRun> run;
  bool looked_up = true;
  try {
    store::MinionReportOptions options = ReportOptions(w);
    options.only = minion;
    options.limit = 1;
    report = store::ReadMinionRecords(database, options);
    run = LastHighstates(database, {minion}, highstate_budget, looked_up).at(0);
  } catch (const store::SqlTimeoutError&) {
    return TooBig(ctx, format);
  }
  store::MinionRecord record =
      report.minions.empty() ? store::MinionRecord{.minion = minion} : report.minions[0];
  if (format == "json") {
    Value out = RecordJson(record, run);
    out.as_map().emplace(out.as_map().begin() + 1, "since", IsoTime(w.since));
    out.as_map().emplace(out.as_map().begin() + 2, "until", TimeJson(w.until));
    AddCoverage(out.as_map(), report);
    out.as_map().emplace_back("highstates_looked_up", looked_up);
    return JsonResponse(200, out);
  }
  Html body = Html::Literal("<h1>Minion <span id=\"minion\">") + Escape(minion) +
              Html::Literal("</span></h1>") +
              WindowForm(ctx, request, w, "minions/" + UrlEncode(minion)) +
              CountedNote(report) + HighstatesNote(looked_up, highstate_budget);
  body += Html::Literal("<table id=\"record\"><tbody><tr><th>Targeted</th><td class=\"num\">") +
          Escape(std::to_string(record.targeted)) +
          Html::Literal("</td></tr><tr><th>Returned</th><td class=\"num\">") +
          Escape(std::to_string(record.returned)) +
          Html::Literal("</td></tr><tr><th>Failed</th><td class=\"num\">") +
          Escape(std::to_string(record.failed)) +
          Html::Literal("</td></tr><tr><th>Missing</th><td class=\"num\">") +
          Escape(std::to_string(record.missing)) +
          Html::Literal("</td></tr><tr><th>Last seen</th><td>") +
          (record.last_seen ? TimeElement(*record.last_seen)
                            : Html::Literal("<span class=\"muted\">never</span>")) +
          Html::Literal("</td></tr><tr><th>Last highstate</th><td class=\"highstate\">") +
          HighstateCell(ctx, run, looked_up) + Html::Literal("</td></tr></tbody></table>");
  if (run && !run->failed_ids.empty()) {
    body += Html::Literal("<h2>Failed states of its last highstate</h2><ul id=\"failed-states\">");
    for (const std::string& id : run->failed_ids)
      body += Html::Literal("<li class=\"state-id\">") + Escape(id) + Html::Literal("</li>");
    body += Html::Literal("</ul>");
  }
  body += Html::Literal("<p><a id=\"its-jobs\" href=\"") +
          Escape(ctx.base_path + "jobs?hidden=show&minion=" + UrlEncode(minion)) +
          Html::Literal("\">Its jobs</a> · <a id=\"as-json\" href=\"") +
          Escape(ctx.base_path + "minions/" + UrlEncode(minion) +
                 QueryString(With(ViewOf(request, {"format"}), "format", "json"))) +
          Html::Literal("\">JSON</a></p>");
  return HtmlResponse(200, Layout(ctx, "Minion " + minion, body));
}

}  // namespace brine::web
