// /queues: every queue's name, length and items, read-only.
#include <algorithm>

#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "brine/web/csv.h"
#include "pages.h"

namespace brine::web {
namespace {

// Items listed per queue on the HTML page, so a long queue stays a page a
// browser can show (queues.h reads them all: the JSON and CSV forms have them).
constexpr std::size_t kMaxItemsShown = 1000;

}  // namespace

Response QueuesPage(const PageContext& ctx, const std::filesystem::path& database, const std::string& format) {
  // queues.h has no read-only open (every call may record a name); only names
  // ListQueues gave are asked about, which records nothing. OpenStore
  // read-only first, so a missing SQLite file is an error and never created.
  (void)store::OpenStore(database, {.access = store::OpenOptions::Access::kReadOnly, .sqlite = {.cache_kib = 2048}});
  auto queues = store::OpenQueues(database);
  struct Queue {
    std::string name;
    std::int64_t length;
    std::vector<Value> items;
  };
  std::vector<Queue> all;
  for (const std::string& name : queues->ListQueues()) {
    all.push_back({name, queues->Length(name), queues->Items(name)});
  }
  if (format == "json") {
    ValueList list;
    for (const Queue& q : all) {
      list.push_back(Value::Map({{"name", q.name}, {"length", q.length}, {"items", Value(ValueList(q.items))}}));
    }
    return JsonResponse(200, Value::Map({{"queues", Value(std::move(list))}}));
  }
  if (format == "csv") {
    std::vector<std::vector<std::optional<std::string>>> rows;
    for (const Queue& q : all) {
      if (q.items.empty()) rows.push_back({q.name, std::to_string(q.length), std::nullopt});
      for (const Value& item : q.items) {
        rows.push_back({q.name, std::to_string(q.length), item.is_string() ? item.as_string() : ToJson(item)});
      }
    }
    return CsvResponse(CsvTable({"queue", "length", "item"}, rows), "queues.csv");
  }
  Html body = Html::Literal("<h1>Queues</h1>");
  if (all.empty()) body += Html::Literal("<p id=\"no-queues\">No queues.</p>");
  if (!all.empty()) {
    body += Html::Literal("<table id=\"queues\"><thead><tr><th>Queue</th><th>Length</th><th>Items</th></tr></thead><tbody>");
    for (const Queue& q : all) {
      body += Html::Literal("<tr><td class=\"queue-name\">") + Escape(q.name) + Html::Literal("</td><td class=\"queue-length\">") +
              Escape(std::to_string(q.length)) + Html::Literal("</td><td>");
      if (!q.items.empty()) {
        body += Html::Literal("<details><summary>") + Escape(std::to_string(q.items.size()) + " items") +
                Html::Literal("</summary><ol>");
        const std::size_t shown = std::min(q.items.size(), kMaxItemsShown);
        for (std::size_t i = 0; i < shown; ++i) {
          body += Html::Literal("<li><code>") + Escape(ToJson(q.items[i])) + Html::Literal("</code></li>");
        }
        body += Html::Literal("</ol>");
        if (shown < q.items.size()) {
          body += Html::Literal("<p class=\"muted\">") +
                  Escape(std::to_string(q.items.size() - shown) + " more: ?format=json or ?format=csv has them all") +
                  Html::Literal("</p>");
        }
        body += Html::Literal("</details>");
      }
      body += Html::Literal("</td></tr>");
    }
    body += Html::Literal("</tbody></table>");
  }
  return HtmlResponse(200, Layout(ctx, "Queues", body));
}

}  // namespace brine::web
