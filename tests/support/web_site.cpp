// WebSite (web_site.h).
#include "support/web_site.h"

#include <catch2/catch.hpp>

#include "brine/web/auth.h"
#include "support/http_client.h"

namespace brine::test {

WebSite::WebSite(Micros now, const Fill& fill, web::App::Options options)
    : clock(now), token(web::RandomHex(32)) {
  if (options.database.empty()) options.database = dir / "brine.sqlite";
  database = options.database.string();
  fill(options.database);
  options.token = token;
  options.clock = &clock;
  if (options.base_path.empty()) options.base_path = "/";
  base_path = options.base_path;
  app = std::make_unique<web::App>(std::move(options));
  server =
      std::make_unique<web::HttpServer>(web::HttpServer::Options{.port = 0},
                                        [this](const web::Request& r) { return app->Handle(r); });
}

std::string WebSite::Login() {
  const HttpReply r = Http(port(), "GET", base_path + "login?token=" + token);
  INFO("login answered " << r.status << ": " << r.body);
  REQUIRE(r.status == 303);
  return r.Cookie("brine_session");
}

std::vector<std::pair<std::string, std::string>> WithSession(const std::string& id) {
  return {{"Cookie", "brine_session=" + id}};
}

}  // namespace brine::test
