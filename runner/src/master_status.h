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
  std::string where;  // the socket file, or host:port in tcp mode
};

// Connects to the master's pull socket (config::EndpointsFor) and closes
// again: a listener means a process holds the bus. Never throws.
[[nodiscard]] BusProbe ProbeBus(const config::MasterConfig& config);

// The samples of a Prometheus text file by metric name (labels dropped; the
// last sample of a name wins). nullopt when the file cannot be read or a
// sample line does not parse. Comment lines (# HELP, # TYPE) are skipped.
[[nodiscard]] std::optional<std::map<std::string, double>> ReadMetricsFile(const std::filesystem::path& path);

}  // namespace brine::runner
