// /, the overview: jobs, returns, failures and events per hour over 24 h and
// 7 d (the store's hourly rollups, never its rows), each master's ingest rate,
// commit lag and heartbeat (its status row), the store's size, and the latest
// failed jobs, the bus gaps of the last 7 days (brine_bus_gaps); with several
// masters, a filter by master.
#include <algorithm>
#include <cstdio>

#include "assets.h"
#include "brine/core/json.h"
#include "page_parts.h"
#include "pages.h"

namespace brine::web {
namespace {

constexpr std::size_t kLatestFailures = 10;
constexpr std::size_t kLatestGaps = 20;  // the overview lists at most this many bus gaps
constexpr auto kFailuresBudget = std::chrono::milliseconds(1000);

std::int64_t Counter(const Value& counters, std::string_view name) {
  const Value* v = counters.is_map() ? counters.Find(name) : nullptr;
  return v != nullptr && v->kind() == Value::Kind::kInt ? v->as_int() : 0;
}

std::string Fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string Bytes(std::int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = static_cast<double>(n);
  int u = 0;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return Fixed(x, u == 0 ? 0 : 1) + " " + units[u];
}

Value Series(const std::vector<store::HourCounts>& hours) {
  ValueList list;
  for (const store::HourCounts& h : hours) {
    list.push_back(Value::Map({{"hour", IsoTime(h.hour)},
                               {"jobs", h.jobs},
                               {"returns", h.returns},
                               {"failures", h.failures},
                               {"events", h.events}}));
  }
  return Value(std::move(list));
}

// One master's status as the JSON shows it: its info, the counters that
// matter here, and its ingest rate (received per second since it started).
Value MasterJson(const store::MasterStatus& m) {
  const Value& c = m.counters;
  const std::int64_t started = Counter(c, "started_us");
  const std::int64_t heartbeat = Counter(c, "heartbeat_us");
  const double up_s = static_cast<double>(heartbeat - started) / 1e6;
  Value out = Value::Map({{"master_id", m.master_id}});
  if (m.info) {
    out.as_map().emplace_back("version", m.info->version);
    out.as_map().emplace_back("host", m.info->host);
    out.as_map().emplace_back("pid", m.info->pid);
  }
  out.as_map().emplace_back("started",
                            started > 0 ? Value(IsoTime(FromUnixMicros(started))) : Value());
  out.as_map().emplace_back("heartbeat",
                            heartbeat > 0 ? Value(IsoTime(FromUnixMicros(heartbeat))) : Value());
  out.as_map().emplace_back("commit_lag_s", static_cast<double>(Counter(c, "commit_lag_us")) / 1e6);
  out.as_map().emplace_back("received", Counter(c, "received"));
  out.as_map().emplace_back("stored", Counter(c, "stored"));
  out.as_map().emplace_back("queue_depth", Counter(c, "queue_depth"));
  out.as_map().emplace_back("ingest_per_s",
                            started > 0 && up_s > 0
                                ? Value(static_cast<double>(Counter(c, "received")) / up_s)
                                : Value());
  return out;
}

Html Chart(const PageContext& ctx, Html id, const char* title, const Value& series) {
  return Html::Literal("<figure class=\"chart\"><figcaption>") + Escape(title) +
         Html::Literal("</figcaption><div class=\"chart-box\"><canvas id=\"") + id +
         Html::Literal("\" data-chart-src=\"") + Escape(ctx.base_path + AssetPath("chart.min.js")) +
         Html::Literal("\" data-series=\"") + Escape(ToJson(series)) +
         Html::Literal("\"></canvas></div></figure>");
}

}  // namespace

Response OverviewPage(const PageContext& ctx, store::Store& store,
                      const std::filesystem::path& database, const Request& request, Micros now) {
  const std::string format = request.Query("format");
  const std::vector<store::MasterStatus> masters = store.GetMasterStatus();
  std::optional<std::string> master;
  if (const std::string m = request.Query("master"); !m.empty()) master = m;
  // The current hour included: [now - 23 h, now + 1 h) rounds to 24 whole hours.
  const Micros until = now + std::chrono::hours(1);
  const std::vector<store::HourCounts> day =
      store.HourlyCounts(until - std::chrono::hours(24), until, master);
  const std::vector<store::HourCounts> week =
      store.HourlyCounts(until - std::chrono::hours(24 * 7), until, master);
  const store::StoreLocation where = store::Describe(database);
  store::JobFilter failed{.has_failures = true,
                          .limit = kLatestFailures,
                          .master = master,
                          .with_counts = true,
                          .time_budget = kFailuresBudget};
  store::JobPage failures = store.ListJobs(failed);
  std::vector<store::JobRecord> latest(std::make_move_iterator(failures.jobs.rbegin()),
                                       std::make_move_iterator(failures.jobs.rend()));
  // The bus gaps of the last 7 days (brine_bus_gaps: a gap open now included),
  // the newest first; a master filter keeps that master's.
  std::vector<store::BusGap> gaps = store.GetBusGaps(now - std::chrono::hours(24 * 7));
  std::erase_if(gaps, [&](const store::BusGap& g) { return master && g.master_id != *master; });
  std::reverse(gaps.begin(), gaps.end());
  if (gaps.size() > kLatestGaps) gaps.resize(kLatestGaps);
  ValueList gaps_json;
  for (const store::BusGap& g : gaps) {
    gaps_json.push_back(Value::Map({{"master_id", g.master_id},
                                    {"gap_start", IsoTime(g.start)},
                                    {"gap_end", g.end ? Value(IsoTime(*g.end)) : Value()},
                                    {"last_frame_time", g.last_frame ? Value(IsoTime(*g.last_frame)) : Value()},
                                    {"reason", g.reason}}));
  }
  // The last whole hour's events and returns per second, from the rollups.
  const store::HourCounts last_hour = day.size() >= 2 ? day[day.size() - 2] : store::HourCounts{};

  ValueList master_list;
  for (const store::MasterStatus& m : masters) {
    if (!master || m.master_id == *master) master_list.push_back(MasterJson(m));
  }
  ValueList latest_json;
  for (const store::JobRecord& j : latest) latest_json.push_back(JobJson(j));
  const Value data = Value::Map(
      {{"master", master ? Value(*master) : Value()},
       {"masters", Value(std::move(master_list))},
       {"hours_24h", Series(day)},
       {"hours_7d", Series(week)},
       {"last_hour",
        Value::Map({{"hour", IsoTime(last_hour.hour)},
                    {"events_per_s", static_cast<double>(last_hour.events) / 3600.0},
                    {"returns_per_s", static_cast<double>(last_hour.returns) / 3600.0}})},
       {"store",
        Value::Map({{"location",
                     where.kind == store::StoreLocation::Kind::kServer ? "server" : "local files"},
                    {"bytes", where.bytes ? Value(*where.bytes) : Value()}})},
       {"bus_gaps", Value(std::move(gaps_json))},
       {"latest_failures", Value(std::move(latest_json))}});
  if (format == "json") return JsonResponse(200, data);

  Html body = Html::Literal("<h1>Overview</h1>");
  if (masters.size() > 1 || master) {
    body +=
        Html::Literal("<form class=\"filters\" id=\"master-filter\" method=\"get\" action=\"") +
        Escape(ctx.base_path) +
        Html::Literal("\"><label>Master <select name=\"master\"><option value=\"\">all</option>");
    for (const store::MasterStatus& m : masters) {
      body += Html::Literal("<option value=\"") + Escape(m.master_id) + Html::Literal("\"") +
              (master && *master == m.master_id ? Html::Literal(" selected") : Html()) +
              Html::Literal(">") + Escape(m.master_id) + Html::Literal("</option>");
    }
    body += Html::Literal("</select></label> <button type=\"submit\">Show</button></form>");
  }
  body += Html::Literal("<div class=\"charts\">") +
          Chart(ctx, Html::Literal("chart-24h"), "Last 24 hours", *data.Find("hours_24h")) +
          Chart(ctx, Html::Literal("chart-7d"), "Last 7 days", *data.Find("hours_7d")) +
          Html::Literal("</div>");
  body += Html::Literal("<h2>Ingest</h2><p id=\"last-hour\">Last whole hour: ") +
          Escape(Fixed(static_cast<double>(last_hour.events) / 3600.0, 2)) +
          Html::Literal(" events/s, ") +
          Escape(Fixed(static_cast<double>(last_hour.returns) / 3600.0, 2)) +
          Html::Literal(" returns/s. Store: <span id=\"store-size\">") +
          Escape(where.bytes ? Bytes(*where.bytes)
                             : std::string("on a server (its size is the server's)")) +
          Html::Literal("</span>.</p>");
  if (masters.empty())
    body += Html::Literal("<p id=\"no-masters\">No master has written its status here yet.</p>");
  if (!masters.empty()) {
    body += Html::Literal(
        "<table "
        "id=\"masters\"><thead><tr><th>Master</th><th>Version</th><th>Host</th><th>Started</th>"
        "<th>Heartbeat</th><th>Commit "
        "lag</th><th>Received</th><th>Ingest</th><th>Queue</th></tr></thead><tbody>");
    for (const Value& m : data.Find("masters")->as_list()) {
      auto text = [&](std::string_view key) {
        const Value* v = m.Find(key);
        return v == nullptr || v->is_null() ? std::string()
               : v->is_string()             ? v->as_string()
                                            : ToJson(*v);
      };
      auto time = [&](std::string_view key) {
        const Value* v = m.Find(key);
        return v == nullptr || v->is_null()
                   ? Html()
                   : Html::Literal("<time datetime=\"") + Escape(v->as_string()) +
                         Html::Literal("\">") + Escape(v->as_string()) + Html::Literal("</time>");
      };
      const Value* rate = m.Find("ingest_per_s");
      body += Html::Literal("<tr><td class=\"master-id\">") + Escape(text("master_id")) +
              Html::Literal("</td><td>") + Escape(text("version")) + Html::Literal("</td><td>") +
              Escape(text("host")) + Html::Literal("</td><td>") + time("started") +
              Html::Literal("</td><td>") + time("heartbeat") +
              Html::Literal("</td><td class=\"commit-lag\">") +
              Escape(Fixed(m.Find("commit_lag_s")->as_float(), 3) + " s") +
              Html::Literal("</td><td class=\"num\">") + Escape(text("received")) +
              Html::Literal("</td><td class=\"num\">") +
              Escape(rate->is_null() ? std::string() : Fixed(rate->as_float(), 1) + "/s") +
              Html::Literal("</td><td class=\"num\">") + Escape(text("queue_depth")) +
              Html::Literal("</td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  body += Html::Literal("<h2>Bus gaps</h2>");
  if (gaps.empty()) {
    body += Html::Literal("<p id=\"no-gaps\">No gap in the last 7 days: every attached master read its bus.</p>");
  } else {
    body += Html::Literal(
        "<table id=\"bus-gaps\"><thead><tr><th>Master</th><th>From</th><th>To</th><th>Last frame</th>"
        "<th>Reason</th></tr></thead><tbody>");
    for (const store::BusGap& g : gaps) {
      body += Html::Literal("<tr><td class=\"master-id\">") + Escape(g.master_id) + Html::Literal("</td><td>") +
              TimeElement(g.start) + Html::Literal("</td><td>") +
              (g.end ? TimeElement(*g.end) : Html::Literal("<strong class=\"partial\">open</strong>")) +
              Html::Literal("</td><td>") + (g.last_frame ? TimeElement(*g.last_frame) : Html()) +
              Html::Literal("</td><td class=\"gap-reason\">") + Escape(g.reason) + Html::Literal("</td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  body += Html::Literal("<h2>Latest failures</h2>");
  if (latest.empty()) body += Html::Literal("<p id=\"no-failures\">No failed job.</p>");
  if (!latest.empty()) body += JobTable(ctx, latest, Html::Literal("latest-failures"));
  body += Html::Literal("<p><a href=\"") +
          Escape(ctx.base_path + "jobs?failed=yes&hidden=show" +
                 (master ? "&master=" + UrlEncode(*master) : "")) +
          Html::Literal("\">All failed jobs</a> · <a href=\"") +
          Escape(ctx.base_path + "failures") +
          Html::Literal("\">Failures by state and minion</a> · <a id=\"as-json\" href=\"") +
          Escape(ctx.base_path + QueryString(With(ViewOf(request, {"format"}), "format", "json"))) +
          Html::Literal("\">JSON</a></p>");
  return HtmlResponse(200, Layout(ctx, "Overview", body));
}

}  // namespace brine::web
