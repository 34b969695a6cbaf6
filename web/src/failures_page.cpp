// /failures: failed returns and failed state IDs across the fleet in a window
// (since/until, salt-run's time forms; the last 24 hours by default), grouped
// by state ID and by minion. One ListJobs of the window's newest failed jobs
// (has_failures, at most kMaxJobs, under a time budget), then each of those
// jobs' returns: bounded whatever the window.
#include <map>
#include <set>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/output/rows.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

constexpr std::size_t kMaxJobs = 200;
constexpr auto kBudget = std::chrono::milliseconds(2000);

struct FailedReturn {
  std::string jid;
  std::string minion;
  std::string function;
  Value retcode;
  std::vector<std::string> failed_states;  // state IDs
};

struct StateGroup {
  std::set<std::string> minions;
  std::int64_t failures = 0;
  std::string last_jid;
  std::string comment;  // of the newest failure
};

struct MinionGroup {
  std::int64_t failed_returns = 0;
  std::int64_t failed_states = 0;
  std::string last_jid;
};

bool ReturnFailed(const Value& full) {
  const Value* retcode = full.Find("retcode");
  const Value* success = full.Find("success");
  return (retcode != nullptr && retcode->is_int() &&
          !(retcode->kind() == Value::Kind::kInt && retcode->as_int() == 0) &&
          !(retcode->kind() == Value::Kind::kUint && retcode->as_uint() == 0)) ||
         (success != nullptr && success->is_bool() && !success->as_bool());
}

Value SetList(const std::set<std::string>& s) {
  ValueList l;
  for (const std::string& x : s) l.emplace_back(x);
  return Value(std::move(l));
}

}  // namespace

Response FailuresPage(const PageContext& ctx, store::Store& store, const Request& request,
                      Micros now) {
  const std::string format = request.Query("format");
  const auto window = WindowOf(request, now);
  if (const auto* error = std::get_if<std::string>(&window)) return BadRequest(ctx, format, *error);
  const Window& w = std::get<Window>(window);
  const Micros since = w.since;
  const std::optional<Micros> until = w.until;
  store::JobFilter filter{.jid_min = w.jid_min,
                          .jid_max = w.jid_max,
                          .has_failures = true,
                          .limit = kMaxJobs,
                          .time_budget = kBudget};
  const store::JobPage page = store.ListJobs(filter);

  std::vector<FailedReturn> failed;  // newest job first
  std::map<std::string, StateGroup> by_state;
  std::map<std::string, MinionGroup> by_minion;
  for (auto job = page.jobs.rbegin(); job != page.jobs.rend(); ++job) {
    const Value full = store.GetJidFull(job->jid);
    if (!full.is_map()) continue;
    const std::string* fun = job->load.FindString("fun");
    for (const auto& [minion, ret_load] : full.as_map()) {
      FailedReturn f{.jid = job->jid, .minion = minion, .function = fun != nullptr ? *fun : ""};
      if (const Value* rc = ret_load.Find("retcode")) f.retcode = *rc;
      const Value* ret = ret_load.Find("return");
      if (ret != nullptr && IsStateReturn(*ret)) {
        for (const auto& [key, state] : ret->as_map()) {
          const Value* result = state.Find("result");
          if (!result->is_bool() || result->as_bool()) continue;
          const std::string* sid = state.FindString("__id__");
          const std::string id = sid != nullptr ? *sid : key;
          f.failed_states.push_back(id);
          StateGroup& g = by_state[id];
          g.minions.insert(minion);
          if (g.failures++ == 0) {
            g.last_jid = job->jid;
            const Value* comment = state.Find("comment");
            g.comment = comment == nullptr     ? ""
                        : comment->is_string() ? comment->as_string()
                                               : ToJson(*comment);
          }
        }
      }
      if (f.failed_states.empty() && !ReturnFailed(ret_load)) continue;
      MinionGroup& m = by_minion[minion];
      if (m.failed_returns++ == 0) m.last_jid = job->jid;
      m.failed_states += static_cast<std::int64_t>(f.failed_states.size());
      failed.push_back(std::move(f));
    }
  }
  // Most failures first.
  std::vector<std::pair<std::string, const StateGroup*>> states;
  for (const auto& [id, g] : by_state) states.emplace_back(id, &g);
  std::stable_sort(states.begin(), states.end(), [](const auto& a, const auto& b) {
    return a.second->failures > b.second->failures;
  });
  std::vector<std::pair<std::string, const MinionGroup*>> minions;
  for (const auto& [id, g] : by_minion) minions.emplace_back(id, &g);
  std::stable_sort(minions.begin(), minions.end(), [](const auto& a, const auto& b) {
    return a.second->failed_returns > b.second->failed_returns;
  });

  if (format == "json") {
    ValueList state_list;
    for (const auto& [id, g] : states) {
      state_list.push_back(Value::Map({{"state_id", id},
                                       {"failures", g->failures},
                                       {"minions", SetList(g->minions)},
                                       {"last_jid", g->last_jid},
                                       {"comment", g->comment}}));
    }
    ValueList minion_list;
    for (const auto& [id, g] : minions) {
      minion_list.push_back(Value::Map({{"minion", id},
                                        {"failed_returns", g->failed_returns},
                                        {"failed_states", g->failed_states},
                                        {"last_jid", g->last_jid}}));
    }
    ValueList return_list;
    for (const FailedReturn& f : failed) {
      ValueList ids;
      for (const std::string& s : f.failed_states) ids.emplace_back(s);
      return_list.push_back(Value::Map({{"jid", f.jid},
                                        {"minion", f.minion},
                                        {"function", f.function},
                                        {"retcode", f.retcode},
                                        {"failed_states", Value(std::move(ids))}}));
    }
    return JsonResponse(200, Value::Map({{"since", IsoTime(since)},
                                         {"until", until ? Value(IsoTime(*until)) : Value()},
                                         {"jobs", static_cast<std::int64_t>(page.jobs.size())},
                                         {"complete", page.complete && page.jobs.size() < kMaxJobs},
                                         {"by_state", Value(std::move(state_list))},
                                         {"by_minion", Value(std::move(minion_list))},
                                         {"returns", Value(std::move(return_list))}}));
  }
  if (format == "csv") {
    std::vector<std::vector<Value>> rows;
    for (const FailedReturn& f : failed) {
      std::string ids;
      for (const std::string& s : f.failed_states) ids += (ids.empty() ? "" : " ") + s;
      rows.push_back({Value(f.jid), Value(f.minion), Value(f.function), f.retcode, Value(ids)});
    }
    return CsvResponse(
        output::CsvTable({"jid", "minion", "function", "retcode", "failed_states"}, rows),
        "failures.csv");
  }

  Html body =
      Html::Literal(
          "<h1>Failures</h1><form class=\"filters\" id=\"window\" method=\"get\" action=\"") +
      Escape(ctx.base_path + "failures") +
      Html::Literal("\"><label>Since <input name=\"since\" value=\"") +
      Escape(request.Query("since")) + Html::Literal("\" placeholder=\"") + Escape(IsoTime(since)) +
      Html::Literal("\"></label> <label>Until <input name=\"until\" value=\"") +
      Escape(request.Query("until")) +
      Html::Literal("\" placeholder=\"now\"></label> <button type=\"submit\">Show</button></form>");
  body += Html::Literal("<p class=\"muted\" id=\"scope\">") +
          Escape(std::to_string(failed.size()) + " failed returns in " +
                 std::to_string(page.jobs.size()) + " failed jobs since ") +
          TimeElement(since) + Html::Literal(".");
  if (!page.complete || page.jobs.size() >= kMaxJobs) {
    body += Html::Literal(
        " <span class=\"partial\" id=\"partial\">Only the newest failed jobs were read; narrow the "
        "window to see older ones.</span>");
  }
  body += Html::Literal("</p><h2>By state ID</h2>");
  if (states.empty()) body += Html::Literal("<p id=\"no-states\">No failed state.</p>");
  if (!states.empty()) {
    body += Html::Literal(
        "<table id=\"by-state\"><thead><tr><th>State ID</th><th>Failures</th><th>Minions</th>"
        "<th>Latest</th><th>Comment</th></tr></thead><tbody>");
    for (const auto& [id, g] : states) {
      std::string names;
      for (const std::string& m : g->minions) names += (names.empty() ? "" : ", ") + m;
      body += Html::Literal("<tr><td class=\"state-id\">") + Escape(id) +
              Html::Literal("</td><td class=\"num\">") + Escape(std::to_string(g->failures)) +
              Html::Literal("</td><td class=\"minions\">") + Escape(names) +
              Html::Literal("</td><td><a href=\"") +
              Escape(ctx.base_path + "jobs/" + UrlEncode(g->last_jid)) + Html::Literal("\">") +
              Escape(g->last_jid) + Html::Literal("</a></td><td><details><summary>") +
              Escape(g->comment.substr(0, 80)) + Html::Literal("</summary><pre>") +
              Escape(g->comment) + Html::Literal("</pre></details></td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  body += Html::Literal("<h2>By minion</h2>");
  if (minions.empty()) body += Html::Literal("<p id=\"no-minions\">No failed return.</p>");
  if (!minions.empty()) {
    body += Html::Literal(
        "<table id=\"by-minion\"><thead><tr><th>Minion</th><th>Failed returns</th>"
        "<th>Failed states</th><th>Latest</th></tr></thead><tbody>");
    for (const auto& [id, g] : minions) {
      body += Html::Literal("<tr><td class=\"minion-id\">") + Escape(id) +
              Html::Literal("</td><td class=\"num\">") + Escape(std::to_string(g->failed_returns)) +
              Html::Literal("</td><td class=\"num\">") + Escape(std::to_string(g->failed_states)) +
              Html::Literal("</td><td><a href=\"") +
              Escape(ctx.base_path + "jobs/" + UrlEncode(g->last_jid)) + Html::Literal("\">") +
              Escape(g->last_jid) + Html::Literal("</a></td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  body += Html::Literal("<p>") + FormatLinks(ctx, request, "failures") + Html::Literal("</p>");
  return HtmlResponse(200, Layout(ctx, "Failures", body));
}

}  // namespace brine::web
