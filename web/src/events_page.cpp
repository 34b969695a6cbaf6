// /events: the event archive newest first, filtered by a tag glob, keyset
// paged on the row id, as HTML (with the live tail above it), JSON and CSV.
#include <charconv>

#include "brine/core/json.h"
#include "brine/web/csv.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

constexpr std::size_t kDefaultPageSize = 100;
constexpr std::size_t kMaxPageSize = 1000;
// A glob that matches little scans at most this long for one page.
constexpr std::chrono::milliseconds kEventsBudget{2000};
// The data shown per row on the HTML page (JSON and CSV have it whole).
constexpr std::size_t kMaxDataShown = 2000;

std::optional<std::int64_t> ParseId(const std::string& text) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::size_t PageSize(const Request& request) {
  const auto n = ParseId(request.Query("limit"));
  if (!n || *n <= 0) return kDefaultPageSize;
  return std::min<std::size_t>(static_cast<std::size_t>(*n), kMaxPageSize);
}

std::string EventsLink(const PageContext& ctx, const std::string& tag, std::int64_t before) {
  std::string link = ctx.base_path + "events?";
  if (!tag.empty()) link += "tag=" + UrlEncode(tag, "/*") + "&";
  return link + "before=" + std::to_string(before);
}

}  // namespace

Response EventsPage(const PageContext& ctx, store::Store& store, const Request& request, const std::string& format) {
  const std::string tag = request.Query("tag");
  std::optional<std::int64_t> before;
  if (!request.Query("before").empty()) {
    before = ParseId(request.Query("before"));
    if (!before) {
      return JsonResponse(400, Value::Map({{"error", "before: not an event id"}}));
    }
  }
  const std::size_t limit = PageSize(request);
  const store::EventPage page =
      store.ListEvents({.tag_glob = tag, .before_id = before, .limit = limit, .time_budget = kEventsBudget});
  // The next page goes on below the last event shown, or below where a
  // partial page stopped.
  std::optional<std::int64_t> next;
  if (!page.complete) {
    next = page.reached;
  } else if (page.events.size() == limit) {
    next = page.events.back().id;
  }
  if (format == "json") {
    ValueList list;
    for (const store::ListedEvent& e : page.events) {
      list.push_back(Value::Map({{"id", e.id},
                                 {"time", IsoTime(e.event.received)},
                                 {"master", e.event.master_id},
                                 {"tag", e.event.tag},
                                 {"data", ParseJson(e.event.data_json)}}));
    }
    return JsonResponse(200, Value::Map({{"events", Value(std::move(list))},
                                         {"next", next ? Value(std::to_string(*next)) : Value()},
                                         {"complete", page.complete},
                                         {"reached", page.reached ? Value(*page.reached) : Value()}}));
  }
  if (format == "csv") {
    std::vector<std::vector<std::optional<std::string>>> rows;
    for (const store::ListedEvent& e : page.events) {
      rows.push_back({std::to_string(e.id), IsoTime(e.event.received), e.event.master_id, e.event.tag,
                      e.event.data_json});
    }
    return CsvResponse(CsvTable({"id", "time", "master", "tag", "data"}, rows), "events.csv");
  }
  const Html base = Escape(ctx.base_path);
  Html body = Html::Literal("<h1>Events</h1><form class=\"filter\" method=\"get\" action=\"") + base +
              Html::Literal("events\"><label>Tag glob <input type=\"text\" name=\"tag\" id=\"tag\" value=\"") +
              Escape(tag) +
              Html::Literal("\" placeholder=\"salt/auth*\"></label> <button type=\"submit\">Filter</button></form>");
  // The live tail: the ES module opens the stream named here.
  body += Html::Literal("<section id=\"live\" data-stream=\"") + base + Html::Literal("events/stream") +
          (tag.empty() ? Html() : Html::Literal("?tag=") + Escape(UrlEncode(tag, "/*"))) +
          Html::Literal("\"><h2>Live <button type=\"button\" id=\"tail-pause\">Pause</button> "
                        "<span class=\"muted\" id=\"tail-status\">connecting…</span></h2>"
                        "<table id=\"live-events\"><thead><tr><th>Time</th><th>Tag</th><th>Master</th><th>Data</th>"
                        "</tr></thead><tbody></tbody></table></section>");
  body += Html::Literal("<h2>History</h2>");
  if (!page.complete) {
    body += Html::Literal("<p class=\"partial\" id=\"partial\">") +
            Escape("Searched back to event " + std::to_string(*page.reached) + " within the time budget; ") +
            Html::Literal("<a href=\"") + Escape(EventsLink(ctx, tag, *page.reached)) +
            Html::Literal("\">continue</a>.</p>");
  }
  if (page.events.empty()) body += Html::Literal("<p id=\"no-events\">No events.</p>");
  if (!page.events.empty()) {
    body += Html::Literal(
        "<table id=\"events\"><thead><tr><th>Id</th><th>Time</th><th>Tag</th><th>Master</th><th>Data</th></tr>"
        "</thead><tbody>");
    for (const store::ListedEvent& e : page.events) {
      const std::string& data = e.event.data_json;
      body += Html::Literal("<tr><td class=\"event-id\">") + Escape(std::to_string(e.id)) + Html::Literal("</td><td>") +
              TimeElement(e.event.received) + Html::Literal("</td><td class=\"event-tag\">") + Escape(e.event.tag) +
              Html::Literal("</td><td>") + Escape(e.event.master_id) + Html::Literal("</td><td><code>") +
              Escape(data.size() > kMaxDataShown ? data.substr(0, kMaxDataShown) + "…" : data) +
              Html::Literal("</code></td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  if (page.complete && next) {
    body += Html::Literal("<p><a id=\"older\" href=\"") + Escape(EventsLink(ctx, tag, *next)) +
            Html::Literal("\">Older events</a></p>");
  }
  return HtmlResponse(200, Layout(ctx, "Events", body));
}

}  // namespace brine::web
