#include "brine/web/daemon.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "brine/config/master_config.h"
#include "brine/core/atomic_file.h"
#include "brine/store/store.h"
#include "brine/web/app.h"
#include "brine/web/auth.h"
#include "brine/web/http_server.h"
#include "brine/web/metrics.h"

namespace brine::web {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int) { g_stop.store(true); }

constexpr const char* kUsage =
    "usage: brine-web [-c CONFIG_DIR]\n"
    "\n"
    "Serve the brine store's job history in a browser, read-only (docs/web.md).\n"
    "\n"
    "  -c, --config-dir DIR  the Salt master's config folder (default /etc/salt)\n"
    "  -h, --help            this help\n"
    "      --version         brine's version\n";

class Usage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// As root: the token's folder is made if missing (0700 under the umask, given
// to the user), then the process becomes the config's `user`. Throws Usage
// for an unknown user.
void BecomeUser(const config::MasterConfig& cfg) {
  if (::geteuid() != 0) return;
  const passwd* pw = ::getpwnam(cfg.user.c_str());
  if (pw == nullptr) throw Usage("user: no such user '" + cfg.user + "' (the config's `user`)");
  const std::filesystem::path dir = cfg.brine.web_token_file.parent_path();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (!ec && ::chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) ec.assign(errno, std::generic_category());
    if (ec) throw Usage("brine.web_token_file's folder " + dir.string() + ": " + ec.message());
  }
  if (pw->pw_uid == 0) return;
  if (::initgroups(pw->pw_name, pw->pw_gid) != 0 || ::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0) {
    throw std::runtime_error("cannot switch to user " + cfg.user + ": " + std::strerror(errno));
  }
}

bool IsLoopbackBind(const std::string& bind) {
  return bind == "::1" || bind.starts_with("127.");
}

int Run(const std::filesystem::path& config_dir, std::ostream& err) {
  config::MasterConfig cfg;
  try {
    cfg = config::LoadMasterConfig(config_dir);
  } catch (const config::ConfigError& e) {
    err << "brine-web: " << e.what() << "\n";
    return kExitUsage;
  }
  const std::filesystem::path database = cfg.brine.read_database.value_or(cfg.brine.database);
  try {
    store::CheckServerDatabase(database);
  } catch (const store::StoreError& e) {
    err << "brine-web: brine.database: " << e.what() << "\n";
    return kExitUsage;
  }
  ::umask(0077);
  BecomeUser(cfg);
  for (const auto& w : cfg.warnings) err << "brine-web: warning: " << w << "\n";
  std::string token;
  try {
    // Not started as root: the folder is made as this user (brine-master
    // makes brine.sock_dir too, whichever starts first).
    std::error_code ignored;
    std::filesystem::create_directories(cfg.brine.web_token_file.parent_path(), ignored);
    token = LoadOrCreateToken(cfg.brine.web_token_file);
  } catch (const std::exception& e) {
    throw Usage(e.what());
  }
  // The store must open before anything is served (a missing file is an
  // error, never created: read-only).
  try {
    (void)store::OpenStore(database, {.access = store::OpenOptions::Access::kReadOnly, .sqlite = {.cache_kib = 2048}});
  } catch (const std::exception& e) {
    err << "brine-web: store " << store::RedactDatabase(database) << ": " << e.what() << "\n";
    return kExitRuntime;
  }
  if (!IsLoopbackBind(cfg.brine.web_bind)) {
    err << "brine-web: warning: brine.web_bind " << cfg.brine.web_bind
        << " is not a loopback address: anyone who can reach it can try the login (docs/web.md, "
           "\"Remote access\")\n";
  }
  App app({.database = database,
           .token = token,
           .base_path = cfg.brine.web_base_path,
           .hosts = cfg.brine.web_hosts,
           .trust_remote_user = cfg.brine.web_trust_remote_user,
           .hide_functions = cfg.brine.web_hide_functions,
           .active_window = std::chrono::seconds(cfg.brine.active_window_s),
           .sql_timeout = std::chrono::seconds(cfg.brine.web_sql_timeout_s),
           .sql_row_limit = cfg.brine.web_sql_row_limit});
  // Rewritten every second, as brine-master's brine.metrics_file.
  MetricsWriter metrics(cfg.brine.web_metrics_file, std::chrono::seconds(1), [&app] { return app.MetricsText(); });
  std::unique_ptr<HttpServer> server;
  try {
    server = std::make_unique<HttpServer>(HttpServer::Options{.bind = cfg.brine.web_bind, .port = cfg.brine.web_port},
                                          [&app](const Request& r) { return app.Handle(r); });
  } catch (const std::exception& e) {
    throw Usage(e.what());
  }
  {
    AtomicFile port_file(config::WebPortFile(cfg.brine.web_token_file), {.mode = 0644});
    port_file.Write(std::to_string(server->port()) + "\n");
    port_file.Commit();
  }
  err << "brine-web: listening on " << cfg.brine.web_bind << " port " << server->port() << "\n";
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.reset();
  // A stopped brine-web has no URL: brine.web_url then says so instead of
  // naming a port nothing listens on (or another program took since).
  std::error_code ignored;
  std::filesystem::remove(config::WebPortFile(cfg.brine.web_token_file), ignored);
  return kExitOk;
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::filesystem::path config_dir = config::kDefaultConfigDir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return kExitOk;
    }
    if (a == "--version") {
      out << "brine-web " << BRINE_VERSION << "\n";
      return kExitOk;
    }
    if ((a == "-c" || a == "--config-dir") && i + 1 < argc) {
      config_dir = argv[++i];
    } else if (a.rfind("--config-dir=", 0) == 0) {
      config_dir = a.substr(13);
    } else {
      err << "brine-web: unknown argument '" << a << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  try {
    return Run(config_dir, err);
  } catch (const Usage& e) {
    err << "brine-web: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "brine-web: " << e.what() << "\n";
    return kExitRuntime;
  }
}

}  // namespace brine::web
