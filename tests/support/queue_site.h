// Helpers of queue_test.cpp and queue_process_test.cpp: a config folder for
// brine-run on its own, and the real brine-run on it.
#pragma once

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace brine::test::queue_site {


// A master config folder for brine-run on its own: the store under <dir>/cache,
// the bus in <dir>/sock (no master listens there), a short send timeout.
class Site {
 public:
  explicit Site(const std::string& extra_config = "") {
    std::filesystem::create_directories(dir_ / "conf");
    std::filesystem::create_directories(dir_ / "cache");
    std::ofstream(dir_ / "conf" / "master") << "cachedir: " << (dir_ / "cache").string() << "\n"
                                            << "brine.bus: bind\n"
                                            << "brine.sock_dir: " << (dir_ / "sock").string() << "\n"
                                            << "brine.send_timeout_ms: 300\n"
                                            << extra_config << "\n";
  }
  [[nodiscard]] std::filesystem::path conf() const { return dir_ / "conf"; }
  [[nodiscard]] std::filesystem::path database() const { return dir_ / "cache" / "brine.sqlite"; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
};

// The real brine-run with `-c conf` and `args`.
RunResult BrineRun(const std::filesystem::path& conf, const std::vector<std::string>& args);

// brine-run ... --out=json, parsed; requires exit 0.
Value JsonRun(const std::filesystem::path& conf, std::vector<std::string> args);

Value StringList(std::initializer_list<const char*> items);

}  // namespace brine::test::queue_site
