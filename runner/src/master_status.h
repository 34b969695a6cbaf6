// What brine-run can tell about a running brine-master without asking it:
// whether something listens on its bus, and the metrics file it rewrites
// every second (brine.metrics_file; master/src/reporter.h).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "brine/config/master_config.h"

namespace brine::runner {

struct BusProbe {
  bool listening = false;
  std::string where;  // the socket file, or host:port in tcp mode; the lock file when attached
  // The sentence that ends "brine-master is not running: " when it is not.
  std::string absent;
};

// brine.bus: bind: connects to the master's pull socket
// (config::EndpointsFor) and closes again: a listener means a process holds
// the bus. attach or none: the bus is Salt's, so it is never probed; a live
// process named in the store's <database>.lock (which brine-master holds
// flocked, "pid <pid> id <id>") means it runs; a server database has no lock
// file (listening false, where empty: the status row decides). Never throws.
[[nodiscard]] BusProbe ProbeBus(const config::MasterConfig& config);

// The samples of a Prometheus text file by metric name (labels dropped; the
// last sample of a name wins). nullopt when the file cannot be read or a
// sample line does not parse. Comment lines (# HELP, # TYPE) are skipped.
[[nodiscard]] std::optional<std::map<std::string, double>> ReadMetricsFile(const std::filesystem::path& path);

}  // namespace brine::runner
