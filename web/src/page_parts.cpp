#include "page_parts.h"

#include <algorithm>
#include <charconv>

#include "brine/args/times.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"

namespace brine::web {

std::string UrlEncode(std::string_view text, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '.' || u == '_' || u == '~' || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string QueryString(const QueryPairs& pairs) {
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (value.empty()) continue;
    out += out.empty() ? '?' : '&';
    out += UrlEncode(name) + "=" + UrlEncode(value);
  }
  return out;
}

QueryPairs ViewOf(const Request& request, std::initializer_list<std::string_view> drop) {
  QueryPairs out;
  for (const auto& [name, value] : request.query) {
    if (std::find(drop.begin(), drop.end(), name) == drop.end()) out.emplace_back(name, value);
  }
  return out;
}

QueryPairs With(QueryPairs pairs, const std::string& name, const std::string& value) {
  for (auto& [n, v] : pairs) {
    if (n == name) {
      v = value;
      return pairs;
    }
  }
  pairs.emplace_back(name, value);
  return pairs;
}

Html FormatLinks(const PageContext& ctx, const Request& request, const std::string& page) {
  const QueryPairs view = ViewOf(request, {"format"});
  return Html::Literal("<a id=\"as-json\" href=\"") +
         Escape(ctx.base_path + page + QueryString(With(view, "format", "json"))) +
         Html::Literal("\">JSON</a> <a id=\"as-csv\" href=\"") +
         Escape(ctx.base_path + page + QueryString(With(view, "format", "csv"))) +
         Html::Literal("\">CSV</a>");
}

namespace {

Value LoadField(const Value& load, std::string_view key) {
  const Value* v = load.is_map() ? load.Find(key) : nullptr;
  return v != nullptr ? *v : Value();
}

// A load value as one line of text: a string as it is, anything else as JSON.
std::string Text(const Value& v) {
  return v.is_null() ? "" : v.is_string() ? v.as_string() : ToJson(v);
}

}  // namespace

Value JobJson(const store::JobRecord& job) {
  const std::optional<Micros> start = JidToMicros(job.jid);
  const store::JobRecord::MinionCounts counts =
      job.counts.value_or(store::JobRecord::MinionCounts{});
  return Value::Map({{"jid", job.jid},
                     {"start_time", start ? Value(IsoTime(*start)) : Value()},
                     {"function", LoadField(job.load, "fun")},
                     {"arguments", LoadField(job.load, "arg")},
                     {"target", LoadField(job.load, "tgt")},
                     {"target_type", LoadField(job.load, "tgt_type")},
                     {"user", LoadField(job.load, "user")},
                     {"metadata", job.metadata},
                     {"expected", counts.expected},
                     {"returned", counts.returned},
                     {"failed", counts.failed},
                     {"missing", counts.missing}});
}

Html JobTable(const PageContext& ctx, const std::vector<store::JobRecord>& jobs, Html id) {
  Html t = Html::Literal("<table class=\"jobs\" id=\"") + id +
           Html::Literal(
               "\"><thead><tr><th>Jid</th><th>Start</th><th>Function</th><th>Arguments</"
               "th><th>Target</th>"
               "<th>User</th><th>Expected</th><th>Returned</th><th>Failed</th><th>Missing</th></"
               "tr></thead><tbody>");
  for (const store::JobRecord& job : jobs) {
    const Value j = JobJson(job);
    const std::optional<Micros> start = JidToMicros(job.jid);
    const std::int64_t failed = j.Find("failed")->as_int();
    const std::int64_t missing = j.Find("missing")->as_int();
    t += Html::Literal("<tr><td class=\"jid\"><a href=\"") +
         Escape(ctx.base_path + "jobs/" + UrlEncode(job.jid)) + Html::Literal("\">") +
         Escape(job.jid) + Html::Literal("</a></td><td>") + (start ? TimeElement(*start) : Html()) +
         Html::Literal("</td><td class=\"fun\">") + Escape(Text(*j.Find("function"))) +
         Html::Literal("</td><td class=\"args\"><code>") + Escape(Text(*j.Find("arguments"))) +
         Html::Literal("</code></td><td class=\"tgt\">") + Escape(Text(*j.Find("target"))) +
         Html::Literal("</td><td class=\"user\">") + Escape(Text(*j.Find("user"))) +
         Html::Literal("</td><td class=\"num\">") +
         Escape(std::to_string(j.Find("expected")->as_int())) +
         Html::Literal("</td><td class=\"num\">") +
         Escape(std::to_string(j.Find("returned")->as_int())) +
         (failed > 0 ? Html::Literal("</td><td class=\"num state-failed\">")
                     : Html::Literal("</td><td class=\"num\">")) +
         Escape(std::to_string(failed)) +
         (missing > 0 ? Html::Literal("</td><td class=\"num state-missing\">")
                      : Html::Literal("</td><td class=\"num\">")) +
         Escape(std::to_string(missing)) + Html::Literal("</td></tr>");
  }
  t += Html::Literal("</tbody></table>");
  return t;
}

std::variant<Window, std::string> WindowOf(const Request& request, Micros now) {
  Window w{
      .since = now - std::chrono::hours(24), .until = std::nullopt, .jid_min = "", .jid_max = "~"};
  for (const char* name : {"since", "until"}) {
    const std::string text = request.Query(name);
    if (text.empty()) continue;
    const std::optional<Micros> t = args::ParseTimeArg(text);
    if (!t) return std::string(name) + ": not a time salt-run reads: '" + text + "'";
    if (std::string_view(name) == "since") w.since = *t;
    if (std::string_view(name) == "until") w.until = *t;
  }
  w.jid_min = FormatJid(w.since);
  // Inclusive: a jid of that very microsecond with a _pid suffix sorts after the bare 20 digits.
  if (w.until) w.jid_max = FormatJid(*w.until) + "~";
  return w;
}

bool IsStateReturn(const Value& ret) {
  if (!ret.is_map() || ret.as_map().empty()) return false;
  for (const auto& [key, state] : ret.as_map()) {
    if (key.find("_|-") == std::string::npos || !state.is_map() || state.Find("result") == nullptr)
      return false;
  }
  return true;
}

Html AfterLinks(const std::string& page, const Request& request, const std::optional<std::string>& next) {
  const QueryPairs view = ViewOf(request, {"after", "format"});
  Html links;
  if (!request.Query("after").empty())
    links += Html::Literal("<a id=\"first\" href=\"") + Escape(page + QueryString(view)) + Html::Literal("\">First</a> ");
  if (next) {
    links += Html::Literal("<a id=\"next\" href=\"") + Escape(page + QueryString(With(view, "after", *next))) +
             Html::Literal("\">Next</a> ");
  }
  return links;
}

std::optional<std::size_t> LimitOf(const Request& request, std::size_t fallback, std::size_t max) {
  const std::string text = request.Query("limit");
  if (text.empty()) return fallback;
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n == 0 || n > max) return std::nullopt;
  return n;
}

std::string LimitMessage(std::size_t max) { return "limit: expected a number from 1 to " + std::to_string(max); }

Response BadRequest(const PageContext& ctx, const std::string& format, const std::string& message) {
  if (format == "json" || format == "csv")
    return JsonResponse(400, Value::Map({{"error", message}}));
  return HtmlResponse(
      400, Layout(ctx, "Bad request",
                  Html::Literal("<h1>Bad request</h1><p class=\"error\" id=\"message\">") +
                      Escape(message) + Html::Literal("</p>")));
}

}  // namespace brine::web
