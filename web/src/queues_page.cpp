// /queues: every queue's name, length and items, read-only.
#include <algorithm>

#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "brine/web/csv.h"
#include "pages.h"

namespace brine::web {
namespace {

// Items read per queue, from its head: a long queue stays a page a browser
// can show and a bounded read (the length says how many there are).
constexpr std::int64_t kMaxItemsShown = 1000;

}  // namespace

Response QueuesPage(const PageContext& ctx, const std::filesystem::path& database, const std::string& format) {
  // Read-only: never created, migrated or written, and naming a queue
  // records nothing.
  auto queues =
      store::OpenQueues(database, {.access = store::OpenOptions::Access::kReadOnly, .sqlite = {.cache_kib = 2048}});
  struct Queue {
    std::string name;
    std::int64_t length;
    std::vector<Value> items;
  };
  std::vector<Queue> all;
  for (const std::string& name : queues->ListQueues()) {
    all.push_back({name, queues->Length(name), queues->Items(name, kMaxItemsShown)});
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
        body += Html::Literal("<details><summary>") + Escape(std::to_string(q.length) + " items") +
                Html::Literal("</summary><ol>");
        for (const Value& item : q.items) {
          body += Html::Literal("<li><code>") + Escape(ToJson(item)) + Html::Literal("</code></li>");
        }
        body += Html::Literal("</ol>");
        if (static_cast<std::int64_t>(q.items.size()) < q.length) {
          body += Html::Literal("<p class=\"muted\">") +
                  Escape(std::to_string(q.length - static_cast<std::int64_t>(q.items.size())) +
                         " more, not shown: `brine-run queue.list_items` lists them all") +
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
