// /jobs/<jid>: the load and the job's counts (expected, returned, failed,
// missing: the /jobs listing's); then a page of its minions in name order
// (?after=<minion>, ?limit=, ?state=failed|missing|returned, ?minion=<id>),
// each returned, failed or missing, with its retcode, its duration and its
// return (a state table for state returns), and the return as salt-run
// prints it. One bounded read (Store::ListJobMinions): the return bodies of
// this page's minions only.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "brine/core/jid.h"
#include "brine/core/time.h"
#include "brine/core/json.h"
#include "brine/output/outputters.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

double Number(const Value* v) {
  if (v == nullptr) return 0;
  if (v->is_float()) return v->as_float();
  if (v->kind() == Value::Kind::kInt) return static_cast<double>(v->as_int());
  if (v->kind() == Value::Kind::kUint) return static_cast<double>(v->as_uint());
  return 0;
}

constexpr std::size_t kDefaultLimit = 100;
constexpr std::size_t kMaxLimit = 500;

struct MinionRow {
  std::string id;
  std::string state;  // returned, failed, missing
  const Value* full = nullptr;
  std::optional<double> duration_s;
};

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

Html StateTable(const Value& ret) {
  struct Row {
    std::string key;
    const Value* state;
    int rank;  // 0 failed, 1 changed, 2 the rest
    double run_num;
  };
  std::vector<Row> rows;
  for (const auto& [key, state] : ret.as_map()) {
    const Value* result = state.Find("result");
    const Value* changes = state.Find("changes");
    const bool failed = result != nullptr && result->is_bool() && !result->as_bool();
    const bool changed = changes != nullptr && changes->Truthy();
    rows.push_back({key, &state, failed ? 0 : changed ? 1 : 2, Number(state.Find("__run_num__"))});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.run_num < b.run_num;
  });
  Html t = Html::Literal("<table class=\"states\"><thead><tr><th>State</th><th>Result</th><th>Duration</th>"
                         "<th>Comment and changes</th></tr></thead><tbody>");
  for (const Row& r : rows) {
    const Value* comment = r.state->Find("comment");
    const Value* changes = r.state->Find("changes");
    const Value* sid = r.state->Find("__id__");
    t += Html::Literal("<tr class=\"") +
         (r.rank == 0 ? Html::Literal("result-false") : r.rank == 1 ? Html::Literal("result-changed") : Html()) +
         Html::Literal("\"><td class=\"state-id\">") +
         Escape(sid != nullptr && sid->is_string() ? sid->as_string() : r.key) + Html::Literal("<br><code class=\"muted\">") +
         Escape(r.key) + Html::Literal("</code></td><td>") +
         Escape(r.rank == 0 ? "failed" : r.rank == 1 ? "changed" : "ok") + Html::Literal("</td><td>") +
         Escape(Seconds(Number(r.state->Find("duration")) / 1000.0)) + Html::Literal("</td><td><details><summary>") +
         Escape(comment != nullptr && comment->is_string() ? comment->as_string().substr(0, 120)
                                                           : std::string("comment")) +
         Html::Literal("</summary><pre>") +
         Escape(comment == nullptr ? "" : comment->is_string() ? comment->as_string() : ToJson(*comment)) +
         Html::Literal("</pre><pre class=\"changes\">") + Escape(changes == nullptr ? "{}" : ToJson(*changes, JsonStyle::Python(2))) +
         Html::Literal("</pre></details></td></tr>");
  }
  t += Html::Literal("</tbody></table>");
  return t;
}


// The ?state= filter's values, each with its link's label.
struct StateFilter {
  const char* name;  // "" for every minion
  const char* label;
  store::JobMinionQuery::State state;
};
constexpr StateFilter kStateFilters[] = {
    {"", "all", store::JobMinionQuery::State::kAny},
    {"returned", "returned", store::JobMinionQuery::State::kReturned},
    {"failed", "failed", store::JobMinionQuery::State::kFailed},
    {"missing", "missing", store::JobMinionQuery::State::kMissing},
};

// Returned, failed or missing by the page's rule: retcode not 0 or success
// false, or (a state return) a state whose result is false; with its
// duration (a state return: its states' durations summed; else its _stamp
// after the start).
MinionRow RowOf(store::JobMinion& minion, const std::optional<Micros>& start) {
  MinionRow row{.id = std::move(minion.name), .state = "missing"};
  if (minion.full_ret.is_null()) return row;
  row.full = &minion.full_ret;
  const Value* ret = row.full->Find("return");
  const Value* retcode = row.full->Find("retcode");
  const Value* success = row.full->Find("success");
  bool failed = (retcode != nullptr && retcode->is_int() && Number(retcode) != 0) ||
                (success != nullptr && success->is_bool() && !success->as_bool());
  if (ret != nullptr && IsStateReturn(*ret)) {
    double ms = 0;
    for (const auto& [key, state] : ret->as_map()) {
      ms += Number(state.Find("duration"));
      const Value* result = state.Find("result");
      if (result->is_bool() && !result->as_bool()) failed = true;
    }
    row.duration_s = ms / 1000.0;
  } else if (const std::string* stamp = row.full->FindString("_stamp"); stamp != nullptr && start) {
    if (auto at = ParseStamp(*stamp)) row.duration_s = static_cast<double>((*at - *start).count()) / 1e6;
  }
  row.state = failed ? "failed" : "returned";
  return row;
}

Html MinionTable(const std::vector<MinionRow>& rows) {
  Html t = Html::Literal("<table id=\"minions\"><thead><tr><th>Minion</th><th>State</th>"
                         "<th>Retcode</th><th>Duration</th></tr></thead><tbody>");
  for (const MinionRow& r : rows) {
    const Value* retcode = r.full != nullptr ? r.full->Find("retcode") : nullptr;
    t += Html::Literal("<tr><td class=\"minion-id\">") + Escape(r.id) + Html::Literal("</td><td class=\"state-") +
         Escape(r.state) + Html::Literal("\">") + Escape(r.state) + Html::Literal("</td><td>") +
         Escape(retcode != nullptr ? ToJson(*retcode) : "") + Html::Literal("</td><td>") +
         Escape(r.duration_s ? Seconds(*r.duration_s) : "") + Html::Literal("</td></tr>");
  }
  t += Html::Literal("</tbody></table>");
  return t;
}

Html ReturnSection(const MinionRow& r) {
  const Value* ret = r.full->Find("return");
  const Value shown = ret != nullptr ? *ret : Value();
  const bool states = IsStateReturn(shown);
  Html s = Html::Literal("<section class=\"return\"><h3>") + Escape(r.id) + Html::Literal("</h3>");
  if (states) s += StateTable(shown);
  if (!states) s += Html::Literal("<pre class=\"return-json\">") + Escape(ToJson(shown, JsonStyle::Python(2))) + Html::Literal("</pre>");
  ValueMap by_minion;
  by_minion.emplace_back(r.id, shown);
  const std::string printed = output::Render(states ? "highstate" : "nested", Value(std::move(by_minion)), {});
  s += Html::Literal("<details class=\"salt-run\"><summary>As salt-run prints it</summary><pre>") + Escape(printed) +
       Html::Literal("</pre></details></section>");
  return s;
}

// The whole-job counts, each a link to that state's filter (the current one marked).
Html CountsNav(const Request& request, const std::string& page,
               const store::JobRecord::MinionCounts& c, std::string_view current) {
  const QueryPairs view = ViewOf(request, {"after", "state", "format"});
  // Every minion of the job is either returned or missing (expected, no return).
  const std::int64_t shown[] = {c.returned + c.missing, c.returned - c.failed, c.failed, c.missing};
  Html nav = Html::Literal("<p id=\"counts\">");
  nav += Html::Literal("<span id=\"count-expected\">") + Escape(std::to_string(c.expected)) +
         Html::Literal("</span> expected, <span id=\"count-returned\">") + Escape(std::to_string(c.returned)) +
         Html::Literal("</span> returned, <span id=\"count-failed\">") + Escape(std::to_string(c.failed)) +
         Html::Literal("</span> failed, <span id=\"count-missing\">") + Escape(std::to_string(c.missing)) +
         Html::Literal("</span> missing</p><nav id=\"state-filter\">Show: ");
  for (std::size_t i = 0; i < std::size(kStateFilters); ++i) {
    const std::string name = kStateFilters[i].name;
    nav += Html::Literal("<a id=\"show-") + Escape(kStateFilters[i].label) + Html::Literal("\" href=\"") +
           Escape(page + QueryString(With(view, "state", name))) + Html::Literal("\"") +
           (name == current ? Html::Literal(" aria-current=\"page\"") : Html()) + Html::Literal(">") +
           Escape(kStateFilters[i].label) + Html::Literal(" (") + Escape(std::to_string(shown[i])) + Html::Literal(")</a> ");
  }
  nav += Html::Literal("</nav>");
  return nav;
}

// A form that shows one minion (the state filter kept as a hidden field).
Html MinionForm(const std::string& page, const Request& request) {
  Html f = Html::Literal("<form class=\"filters\" id=\"minion-filter\" method=\"get\" action=\"") + Escape(page) +
           Html::Literal("\"><label>Minion <input name=\"minion\" value=\"") + Escape(request.Query("minion")) +
           Html::Literal("\"></label>");
  for (const char* kept : {"state", "limit"}) {
    if (const std::string v = request.Query(kept); !v.empty()) {
      f += Html::Literal("<input type=\"hidden\" name=\"") + Escape(kept) + Html::Literal("\" value=\"") + Escape(v) +
           Html::Literal("\">");
    }
  }
  f += Html::Literal("<button type=\"submit\">Show</button></form>");
  return f;
}

}  // namespace

Response JobPage(const PageContext& ctx, store::Store& store, const std::string& jid, const Request& request) {
  const std::string format = request.Query("format");
  const std::optional<std::size_t> limit = LimitOf(request, kDefaultLimit, kMaxLimit);
  if (!limit) return BadRequest(ctx, format, LimitMessage(kMaxLimit));
  const std::string state_name = request.Query("state");
  const StateFilter* filter = nullptr;
  for (const StateFilter& f : kStateFilters) {
    if (state_name == f.name) filter = &f;
  }
  if (filter == nullptr) return BadRequest(ctx, format, "state: expected failed, missing or returned");

  // The load and the whole job's counts: the /jobs listing's read of one jid.
  std::vector<store::JobRecord> found =
      store.GetJids({.jid_min = jid, .jid_max = jid, .with_counts = true});
  if (found.empty()) {
    if (format == "json") return JsonResponse(404, Value::Map({{"error", "no such job"}, {"jid", jid}}));
    return HtmlResponse(404, Layout(ctx, "No such job", Html::Literal("<h1>No such job</h1><p>") + Escape(jid) +
                                                             Html::Literal("</p>")));
  }
  const store::JobRecord& job = found.front();
  const store::JobRecord::MinionCounts counts = job.counts.value_or(store::JobRecord::MinionCounts{});
  store::JobMinionQuery query{.state = filter->state, .after = request.Query("after"), .limit = *limit};
  if (const std::string minion = request.Query("minion"); !minion.empty()) query.minion = minion;
  store::JobMinionPage page = store.ListJobMinions(jid, query);
  const std::optional<Micros> start = JidToMicros(jid);
  std::vector<MinionRow> rows;
  rows.reserve(page.minions.size());
  for (store::JobMinion& m : page.minions) rows.push_back(RowOf(m, start));

  if (format == "json") {
    ValueMap minions;
    for (const MinionRow& r : rows) {
      const Value* ret = r.full != nullptr ? r.full->Find("return") : nullptr;
      const Value* retcode = r.full != nullptr ? r.full->Find("retcode") : nullptr;
      Value m = Value::Map({{"state", r.state},
                            {"retcode", retcode != nullptr ? *retcode : Value()},
                            {"return", ret != nullptr ? *ret : Value()}});
      m.as_map().emplace_back("duration_s", r.duration_s ? Value(*r.duration_s) : Value());
      minions.emplace_back(r.id, std::move(m));
    }
    Value out = Value::Map({{"jid", jid}});
    if (start) out.as_map().emplace_back("start_time", IsoTime(*start));
    out.as_map().emplace_back("load", job.load);
    out.as_map().emplace_back("counts", Value::Map({{"expected", Value(counts.expected)},
                                                    {"returned", Value(counts.returned)},
                                                    {"failed", Value(counts.failed)},
                                                    {"missing", Value(counts.missing)}}));
    out.as_map().emplace_back("minions", Value(std::move(minions)));
    out.as_map().emplace_back("next", page.next ? Value(*page.next) : Value());
    return JsonResponse(200, out);
  }

  const std::string here = ctx.base_path + "jobs/" + UrlEncode(jid);
  const std::string* fun = job.load.FindString("fun");
  Html body = Html::Literal("<h1>Job <span id=\"jid\">") + Escape(jid) + Html::Literal("</span></h1>");
  body += Html::Literal("<p>") + Escape(fun != nullptr ? *fun : std::string("?"));
  if (start) body += Html::Literal(" · started ") + TimeElement(*start);
  body += Html::Literal("</p><details><summary>Load</summary><pre id=\"load\">") +
          Escape(ToJson(job.load, JsonStyle::Python(2))) + Html::Literal("</pre></details>");
  body += Html::Literal("<h2>Minions</h2>") + CountsNav(request, here, counts, filter->name) +
          MinionForm(here, request);
  if (rows.empty()) body += Html::Literal("<p id=\"no-minions\">No minion of this job on this page.</p>");
  if (!rows.empty()) body += MinionTable(rows);
  body += Html::Literal("<p class=\"pager\">") + AfterLinks(here, request, page.next);
  body += Html::Literal("<a id=\"as-json\" href=\"") +
          Escape(here + QueryString(With(ViewOf(request, {"format"}), "format", "json"))) +
          Html::Literal("\">JSON</a></p>");
  for (const MinionRow& r : rows) {
    if (r.full != nullptr) body += ReturnSection(r);
  }
  return HtmlResponse(200, Layout(ctx, "Job " + jid, body));
}

}  // namespace brine::web
