#include <date/date.h>

#include "assets.h"
#include "brine/core/json.h"
#include "pages.h"

namespace brine::web {

std::string IsoTime(Micros t) { return date::format("%FT%TZ", t); }

Html TimeElement(Micros t) {
  const std::string iso = IsoTime(t);
  return Html::Literal("<time datetime=\"") + Escape(iso) + Html::Literal("\">") + Escape(iso) +
         Html::Literal("</time>");
}

Html Layout(const PageContext& ctx, std::string_view title, const Html& body) {
  const Html base = Escape(ctx.base_path);
  Html page = Html::Literal("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">") +
              Html::Literal("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">") +
              Html::Literal("<title>") + Escape(title) + Html::Literal(" · brine</title>") +
              Html::Literal("<link rel=\"icon\" href=\"") + base + Escape(AssetPath("brine.svg")) +
              Html::Literal("\"><link rel=\"stylesheet\" href=\"") + base + Escape(AssetPath("brine.css")) +
              Html::Literal("\"><script type=\"module\" src=\"") + base + Escape(AssetPath("brine.js")) +
              Html::Literal("\"></script></head><body><header><strong>brine</strong><nav>") +
              Html::Literal("<a href=\"") + base + Html::Literal("\">Overview</a><a href=\"") + base +
              Html::Literal("jobs\">Jobs</a><a href=\"") + base +
              Html::Literal("minions\">Minions</a><a href=\"") + base + Html::Literal("active\">Active</a><a href=\"") + base +
              Html::Literal("failures\">Failures</a><a href=\"") + base + Html::Literal("events\">Events</a><a href=\"") +
              base + Html::Literal("sql\">SQL</a>") +
              Html::Literal("<a href=\"") + base + Html::Literal("queues\">Queues</a></nav>") +
              Html::Literal("<span class=\"spacer\"></span>") +
              Html::Literal("<button type=\"button\" id=\"tz-toggle\" hidden>Times: UTC</button>");
  if (!ctx.user.empty()) {
    page += Html::Literal("<span class=\"muted\" id=\"user\">") + Escape(ctx.user) + Html::Literal("</span>");
  }
  if (!ctx.csrf.empty()) {
    page += Html::Literal("<form method=\"post\" action=\"") + base +
            Html::Literal("logout\"><input type=\"hidden\" name=\"csrf\" value=\"") + Escape(ctx.csrf) +
            Html::Literal("\"><button type=\"submit\" id=\"logout\">Log out</button></form>");
  }
  page += Html::Literal("</header><main>") + body + Html::Literal("</main></body></html>\n");
  return page;
}

Response HtmlResponse(int status, const Html& page) {
  return {.status = status, .headers = {{"Content-Type", "text/html; charset=utf-8"}}, .body = page.str()};
}

Response JsonResponse(int status, const Value& data) {
  return {.status = status, .headers = {{"Content-Type", "application/json"}}, .body = ToJson(data) + "\n"};
}

Response CsvResponse(const std::string& csv, const std::string& filename) {
  return {.status = 200,
          .headers = {{"Content-Type", "text/csv; charset=utf-8"},
                      {"Content-Disposition", "attachment; filename=\"" + filename + "\""}},
          .body = csv};
}

Html LoginPage(const std::string& base_path, const std::string& login_csrf, std::string_view message) {
  Html body = Html::Literal("<h1>Log in</h1>");
  if (!message.empty()) body += Html::Literal("<p class=\"error\" id=\"message\">") + Escape(message) + Html::Literal("</p>");
  body += Html::Literal("<form class=\"login\" method=\"post\" action=\"") + Escape(base_path) +
          Html::Literal("login\"><p><label>Token (run <code>brine-run brine.web_url</code>)<br>") +
          Html::Literal("<input type=\"password\" name=\"token\" autocomplete=\"off\" required></label></p>") +
          Html::Literal("<input type=\"hidden\" name=\"csrf\" value=\"") + Escape(login_csrf) +
          Html::Literal("\"><button type=\"submit\">Log in</button></form>");
  return Layout({.base_path = base_path}, "Log in", body);
}

}  // namespace brine::web
