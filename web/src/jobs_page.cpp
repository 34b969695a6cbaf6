// /jobs: all history, newest first, a page of `limit` jobs at a time with
// keyset paging on the jid (before=<jid>), filtered with salt-run's names
// (search_function, search_target, start_time, end_time,
// search_metadata.KEY=VALUE) and brine's (returned, failed, user, minion);
// the functions of brine.web_hide_functions are left out unless hidden=show.
// One ListJobs under a time budget: a filter no index serves answers a
// partial page that says how far it searched, with a link that goes on.

#include "brine/args/arguments.h"
#include "brine/args/times.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/output/rows.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

constexpr std::size_t kDefaultLimit = 100;
constexpr std::size_t kMaxLimit = 500;
constexpr std::string_view kMetadataPrefix = "search_metadata.";

// "a,b" -> {"a", "b"}, blanks dropped.
std::vector<std::string> Globs(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::string g = text.substr(at, comma - at);
    while (!g.empty() && g.front() == ' ') g.erase(0, 1);
    while (!g.empty() && g.back() == ' ') g.pop_back();
    if (!g.empty()) out.push_back(g);
    at = comma + 1;
  }
  return out;
}

// yes/no (or true/false, 1/0) of a boolean filter; nullopt when not given.
std::optional<bool> YesNo(const Request& request, const std::string& name) {
  const std::string v = request.Query(name);
  if (v.empty() || v == "any") return std::nullopt;
  if (v == "yes" || v == "true" || v == "1") return true;
  if (v == "no" || v == "false" || v == "0") return false;
  throw std::invalid_argument(name + ": expected yes or no, got '" + v + "'");
}

struct Parsed {
  store::JobFilter filter;
  bool show_hidden = false;
};

Parsed ParseFilter(const Request& request, const JobsPageOptions& options) {
  Parsed p;
  store::JobFilter& f = p.filter;
  f.function_globs = Globs(request.Query("search_function"));
  f.target_globs = Globs(request.Query("search_target"));
  for (const char* name : {"start_time", "end_time"}) {
    const std::string text = request.Query(name);
    if (text.empty()) continue;
    const std::optional<Micros> t = args::ParseTimeArg(text);
    if (!t)
      throw std::invalid_argument(std::string(name) + ": not a time salt-run reads: '" + text +
                                  "'");
    // Inclusive: a jid of the end's very microsecond with a _pid suffix sorts after the bare 20
    // digits.
    if (std::string_view(name) == "start_time") f.jid_min = FormatJid(*t);
    if (std::string_view(name) == "end_time") f.jid_max = FormatJid(*t) + "~";
  }
  ValueMap metadata;
  for (const auto& [name, value] : request.query) {
    if (name.starts_with(kMetadataPrefix) && name.size() > kMetadataPrefix.size()) {
      metadata.emplace_back(name.substr(kMetadataPrefix.size()), args::YamlifyArg(value));
    }
  }
  if (!metadata.empty()) f.metadata = Value(std::move(metadata));
  f.has_returns = YesNo(request, "returned");
  f.has_failures = YesNo(request, "failed");
  if (const std::string user = request.Query("user"); !user.empty()) f.user = user;
  if (const std::string minion = request.Query("minion"); !minion.empty()) f.minion = minion;
  if (const std::string master = request.Query("master"); !master.empty()) f.master = master;
  p.show_hidden = request.Query("hidden") == "show";
  if (!p.show_hidden) f.exclude_functions = options.hide_functions;
  if (const std::string before = request.Query("before"); !before.empty()) f.jid_before = before;
  f.limit = LimitOf(request, kDefaultLimit, kMaxLimit);
  if (!f.limit) throw std::invalid_argument(LimitMessage(kMaxLimit));
  f.with_counts = true;
  f.time_budget = options.time_budget;
  return p;
}

Html FilterForm(const PageContext& ctx, const Request& request, bool show_hidden) {
  auto field = [&](const char* name, const char* label, const char* hint) {
    return Html::Literal("<label>") + Escape(label) + Html::Literal(" <input name=\"") +
           Escape(name) + Html::Literal("\" value=\"") + Escape(request.Query(name)) +
           Html::Literal("\" placeholder=\"") + Escape(hint) + Html::Literal("\"></label> ");
  };
  auto choice = [&](const char* name, const char* label) {
    const std::string v = request.Query(name);
    Html h = Html::Literal("<label>") + Escape(label) + Html::Literal(" <select name=\"") +
             Escape(name) + Html::Literal("\">");
    for (const char* option : {"", "yes", "no"}) {
      h += Html::Literal("<option value=\"") + Escape(option) + Html::Literal("\"") +
           (v == option ? Html::Literal(" selected") : Html()) + Html::Literal(">") +
           Escape(*option == 0 ? "any" : option) + Html::Literal("</option>");
    }
    return h + Html::Literal("</select></label> ");
  };
  Html form = Html::Literal("<form class=\"filters\" id=\"filters\" method=\"get\" action=\"") +
              Escape(ctx.base_path + "jobs") + Html::Literal("\">") +
              field("search_function", "Function", "state.*,test.ping") +
              field("search_target", "Target", "web*") +
              field("start_time", "From", "2026-11-26 09:00") +
              field("end_time", "Until", "2026-11-26 10:00") + field("user", "User", "root") +
              field("minion", "Minion", "web1") + field("master", "Master", "master1") +
              choice("returned", "Returned") + choice("failed", "Failed");
  for (const auto& [name, value] : request.query) {
    if (name.starts_with(kMetadataPrefix)) {
      form += Html::Literal("<label>") + Escape(name) + Html::Literal(" <input name=\"") +
              Escape(name) + Html::Literal("\" value=\"") + Escape(value) +
              Html::Literal("\"></label> ");
    }
  }
  if (show_hidden) form += Html::Literal("<input type=\"hidden\" name=\"hidden\" value=\"show\">");
  form += Html::Literal("<button type=\"submit\">Filter</button></form>");
  form += Html::Literal("<form class=\"jump\" id=\"jump\" method=\"get\" action=\"") +
          Escape(ctx.base_path + "jobs") +
          Html::Literal(
              "\"><label>Jid <input name=\"jid\" required "
              "placeholder=\"20261126090000123456\"></label> "
              "<button type=\"submit\">Go</button></form>");
  return form;
}

}  // namespace

Response JobsPage(const PageContext& ctx, store::Store& store, const Request& request,
                  const JobsPageOptions& options) {
  const std::string format = request.Query("format");
  if (const std::string jid = request.Query("jid"); !jid.empty()) {
    return {.status = 303,
            .headers = {{"Location", ctx.base_path + "jobs/" + UrlEncode(jid)}},
            .body = ""};
  }
  Parsed parsed;
  try {
    parsed = ParseFilter(request, options);
  } catch (const std::invalid_argument& e) {
    return BadRequest(ctx, format, e.what());
  }
  store::JobPage page = store.ListJobs(parsed.filter);
  std::vector<store::JobRecord> jobs(std::make_move_iterator(page.jobs.rbegin()),
                                     std::make_move_iterator(page.jobs.rend()));  // newest first
  // Where the next page starts: after a full page, its oldest jid; after a
  // partial one, the jid the search reached.
  std::optional<std::string> next;
  if (!page.complete) {
    next = page.reached ? page.reached : parsed.filter.jid_before;
  } else if (jobs.size() == *parsed.filter.limit) {
    next = jobs.back().jid;
  }
  const QueryPairs view = ViewOf(request, {"before", "format"});

  if (format == "json") {
    ValueList list;
    for (const store::JobRecord& j : jobs) list.push_back(JobJson(j));
    return JsonResponse(200,
                        Value::Map({{"jobs", Value(std::move(list))},
                                    {"next", next ? Value(*next) : Value()},
                                    {"complete", page.complete},
                                    {"reached", page.reached ? Value(*page.reached) : Value()}}));
  }
  if (format == "csv") {
    std::vector<std::vector<Value>> rows;
    for (const store::JobRecord& j : jobs) {
      const Value v = JobJson(j);
      const Value& args = *v.Find("arguments");
      rows.push_back({*v.Find("jid"), *v.Find("start_time"), *v.Find("function"),
                      args.is_null() ? Value() : Value(ToJson(args)), *v.Find("target"),
                      *v.Find("user"), *v.Find("expected"), *v.Find("returned"), *v.Find("failed"),
                      *v.Find("missing")});
    }
    return CsvResponse(output::CsvTable({"jid", "start_time", "function", "arguments", "target",
                                         "user", "expected", "returned", "failed", "missing"},
                                        rows),
                       "jobs.csv");
  }

  Html body = Html::Literal("<h1>Jobs</h1>") + FilterForm(ctx, request, parsed.show_hidden);
  const std::string toggle = ctx.base_path + "jobs" +
                             QueryString(With(ViewOf(request, {"before", "format", "hidden"}),
                                              "hidden", parsed.show_hidden ? "" : "show"));
  body += Html::Literal("<p class=\"hidden-toggle\"><a id=\"hidden-toggle\" href=\"") +
          Escape(toggle) + Html::Literal("\">") +
          (parsed.show_hidden ? Html::Literal("Hide noisy functions")
                              : Html::Literal("Show hidden functions")) +
          Html::Literal("</a> <span class=\"muted\">(brine.web_hide_functions: ");
  std::string names;
  for (const std::string& f : options.hide_functions) names += (names.empty() ? "" : ", ") + f;
  body += Escape(names.empty() ? "none" : names) + Html::Literal(")</span></p>");
  if (!page.complete) {
    body +=
        Html::Literal(
            "<p class=\"partial\" id=\"partial\">The time budget ran out: searched back to jid ") +
        Escape(page.reached.value_or("(none yet)")) +
        Html::Literal("; <a id=\"continue\" href=\"") +
        Escape(ctx.base_path + "jobs" + QueryString(With(view, "before", next.value_or("")))) +
        Html::Literal("\">continue</a>.</p>");
  }
  if (jobs.empty()) body += Html::Literal("<p id=\"no-jobs\">No jobs match.</p>");
  if (!jobs.empty()) body += JobTable(ctx, jobs, Html::Literal("jobs"));
  body += Html::Literal("<p class=\"pager\">");
  if (parsed.filter.jid_before) {
    body += Html::Literal("<a id=\"newest\" href=\"") +
            Escape(ctx.base_path + "jobs" + QueryString(view)) + Html::Literal("\">Newest</a> ");
  }
  if (next && page.complete) {
    body += Html::Literal("<a id=\"older\" href=\"") +
            Escape(ctx.base_path + "jobs" + QueryString(With(view, "before", *next))) +
            Html::Literal("\">Older</a> ");
  }
  body += FormatLinks(ctx, request, "jobs") + Html::Literal("</p>");
  return HtmlResponse(200, Layout(ctx, "Jobs", body));
}

}  // namespace brine::web
