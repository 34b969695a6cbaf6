// brine-web in this process for the web test files (web_test.cpp,
// web_pages_test.cpp): a store filled by the caller, an App over it with a
// fake clock, and its HttpServer on a free loopback port. REQUIREs (Catch2)
// that the login works.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "brine/core/time.h"
#include "brine/web/app.h"
#include "brine/web/http_server.h"
#include "support/temp_dir.h"

namespace brine::test {

class WebSite {
 public:
  // Fills the store at `database` (a SQLite path or a PostgreSQL URI) before the App opens it.
  using Fill = std::function<void(const std::filesystem::path& database)>;

  // On a fresh SQLite file in `dir`, or on `options.database` when set;
  // `options` get this site's token and clock, and base path "/" when empty.
  WebSite(Micros now, const Fill& fill, web::App::Options options = {});
  WebSite(const WebSite&) = delete;
  WebSite& operator=(const WebSite&) = delete;

  [[nodiscard]] int port() const { return server->port(); }
  // Logs in through the URL (under the base path); returns the session cookie's value.
  [[nodiscard]] std::string Login();

  TempDir dir;
  FakeClock clock;
  std::string token;
  std::string database;           // what the App reads
  std::string base_path;          // the App's
  std::unique_ptr<web::App> app;  // declared before server, which calls it
  std::unique_ptr<web::HttpServer> server;
};

// The Cookie header of session `id`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> WithSession(const std::string& id);

}  // namespace brine::test
