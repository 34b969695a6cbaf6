// Making sure the event bus is brine-master's to take (where it lives:
// brine/config/bus_endpoints.h).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "brine/config/bus_endpoints.h"

namespace brine::master {

// Thrown when something else holds the bus; brine-master exits 2.
class BusConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// libzmq unlinks an existing socket file when it binds, which would steal a
// live bus from Salt or from another brine-master. So before binding: a plain
// AF_UNIX connect() on `path`; a live listener throws BusConflict naming the
// path; a refused connect means a stale file, which is removed. A missing
// file is fine.
void ClaimIpcPath(const std::filesystem::path& path);

}  // namespace brine::master
