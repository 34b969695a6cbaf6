// /jobs/<jid>: the load; each minion returned, failed or missing, with its
// retcode, its duration and its return (a state table for state returns),
// and the return as salt-run prints it.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "brine/core/jid.h"
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

}  // namespace

Response JobPage(const PageContext& ctx, store::Store& store, const std::string& jid, const std::string& format) {
  Value load = store.GetLoad(jid);
  if (!load.is_map() || load.as_map().empty()) {
    if (format == "json") return JsonResponse(404, Value::Map({{"error", "no such job"}, {"jid", jid}}));
    return HtmlResponse(404, Layout(ctx, "No such job", Html::Literal("<h1>No such job</h1><p>") + Escape(jid) +
                                                             Html::Literal("</p>")));
  }
  const Value full = store.GetJidFull(jid);
  const std::optional<Micros> start = JidToMicros(jid);
  std::vector<std::string> ids;
  if (const Value* expected = load.Find("Minions"); expected != nullptr && expected->is_list()) {
    for (const Value& m : expected->as_list()) {
      if (m.is_string()) ids.push_back(m.as_string());
    }
  }
  if (full.is_map()) {
    for (const auto& [id, ret] : full.as_map()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());

  std::vector<MinionRow> rows;
  for (const std::string& id : ids) {
    MinionRow row{.id = id, .state = "missing"};
    row.full = full.is_map() ? full.Find(id) : nullptr;
    if (row.full != nullptr) {
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
    }
    rows.push_back(std::move(row));
  }

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
    out.as_map().emplace_back("load", load);
    out.as_map().emplace_back("minions", Value(std::move(minions)));
    return JsonResponse(200, out);
  }

  const std::string* fun = load.FindString("fun");
  Html body = Html::Literal("<h1>Job <span id=\"jid\">") + Escape(jid) + Html::Literal("</span></h1>");
  body += Html::Literal("<p>") + Escape(fun != nullptr ? *fun : std::string("?"));
  if (start) body += Html::Literal(" · started ") + TimeElement(*start);
  body += Html::Literal("</p><details><summary>Load</summary><pre id=\"load\">") +
          Escape(ToJson(load, JsonStyle::Python(2))) + Html::Literal("</pre></details>");
  body += Html::Literal("<h2>Minions</h2><table id=\"minions\"><thead><tr><th>Minion</th><th>State</th>"
                        "<th>Retcode</th><th>Duration</th></tr></thead><tbody>");
  for (const MinionRow& r : rows) {
    const Value* retcode = r.full != nullptr ? r.full->Find("retcode") : nullptr;
    body += Html::Literal("<tr><td class=\"minion-id\">") + Escape(r.id) + Html::Literal("</td><td class=\"state-") +
            Escape(r.state) + Html::Literal("\">") + Escape(r.state) + Html::Literal("</td><td>") +
            Escape(retcode != nullptr ? ToJson(*retcode) : "") + Html::Literal("</td><td>") +
            Escape(r.duration_s ? Seconds(*r.duration_s) : "") + Html::Literal("</td></tr>");
  }
  body += Html::Literal("</tbody></table>");
  for (const MinionRow& r : rows) {
    if (r.full == nullptr) continue;
    const Value* ret = r.full->Find("return");
    const Value shown = ret != nullptr ? *ret : Value();
    const bool states = IsStateReturn(shown);
    body += Html::Literal("<section class=\"return\"><h3>") + Escape(r.id) + Html::Literal("</h3>");
    if (states) body += StateTable(shown);
    if (!states) body += Html::Literal("<pre class=\"return-json\">") + Escape(ToJson(shown, JsonStyle::Python(2))) + Html::Literal("</pre>");
    ValueMap by_minion;
    by_minion.emplace_back(r.id, shown);
    const std::string printed = output::Render(states ? "highstate" : "nested", Value(std::move(by_minion)), {});
    body += Html::Literal("<details class=\"salt-run\"><summary>As salt-run prints it</summary><pre>") +
            Escape(printed) + Html::Literal("</pre></details></section>");
  }
  return HtmlResponse(200, Layout(ctx, "Job " + jid, body));
}

}  // namespace brine::web
