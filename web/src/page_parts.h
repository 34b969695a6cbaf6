// Pieces the list pages (/, /jobs, /failures, /active) share: query strings
// for their links, a job as a JSON object and as a table row, and the answer
// to a request whose parameters do not parse.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/store.h"
#include "brine/web/html.h"
#include "brine/web/http_server.h"
#include "pages.h"

namespace brine::web {

using QueryPairs = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes everything but A-Z a-z 0-9 - . _ ~ (RFC 3986's unreserved).
// Bytes in `keep` stay as they are too: "/*" keeps a tag glob readable in a
// query value (never in a path segment, where '/' would start another).
[[nodiscard]] std::string UrlEncode(std::string_view text, std::string_view keep = "");
// "?a=1&b=x%20y" from the pairs, in their order, leaving out empty values;
// "" when nothing is left.
[[nodiscard]] std::string QueryString(const QueryPairs& pairs);
// The request's query parameters in name order, without the names in `drop`
// (e.g. the cursor and the format, to build the next page's link).
[[nodiscard]] QueryPairs ViewOf(const Request& request,
                                std::initializer_list<std::string_view> drop);
// `pairs` with `name` set to `value` (replaced, or added at the end).
[[nodiscard]] QueryPairs With(QueryPairs pairs, const std::string& name, const std::string& value);

// The links to this view as JSON and as CSV (ids as-json and as-csv), for
// the page at `ctx.base_path + page`.
[[nodiscard]] Html FormatLinks(const PageContext& ctx, const Request& request,
                               const std::string& page);

// A job of ListJobs (with counts) as /jobs's JSON shows it: jid, start_time
// (ISO 8601 UTC or null), function, arguments, target, target_type, user,
// metadata, and expected/returned/failed/missing.
[[nodiscard]] Value JobJson(const store::JobRecord& job);
// The table of /jobs for `jobs` (newest first), each jid linking its page;
// `id` is the table's element id.
[[nodiscard]] Html JobTable(const PageContext& ctx, const std::vector<store::JobRecord>& jobs,
                            Html id);

// The window of /failures and /minions: since= and until= in salt-run's time
// forms; since defaults to `now` - 24 h, until to none (the newest job).
struct Window {
  Micros since;
  std::optional<Micros> until;
  std::string jid_min;  // FormatJid(since)
  std::string jid_max;  // FormatJid(until) + "~", or "~" (after every jid)
};
// The request's window, or the message of a 400 (which parameter and why).
[[nodiscard]] std::variant<Window, std::string> WindowOf(const Request& request, Micros now);

// The request's `limit`: `fallback` when absent, else a whole number from 1
// to `max`; nullopt when it is not one (answer BadRequest with LimitMessage).
[[nodiscard]] std::optional<std::size_t> LimitOf(const Request& request, std::size_t fallback, std::size_t max);
// "limit: expected a number from 1 to <max>".
[[nodiscard]] std::string LimitMessage(std::size_t max);

// The "First" (when the request has an `after=` cursor) and "Next" (to
// `next`, when there is a next page) links of a page at `page` (its path
// under the base path) paged by `after=`, keeping the rest of the view.
[[nodiscard]] Html AfterLinks(const std::string& page, const Request& request, const std::optional<std::string>& next);

// A state return: a non-empty map whose every key is "mod_|-id_|-name_|-fun"
// and every value a map with "result".
[[nodiscard]] bool IsStateReturn(const Value& ret);

// 400 with `message`: a JSON {"error": message} or an HTML page saying it.
[[nodiscard]] Response BadRequest(const PageContext& ctx, const std::string& format,
                                  const std::string& message);

}  // namespace brine::web
