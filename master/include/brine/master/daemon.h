// brine-master's whole command line: `brine-master [-c CONFIG_DIR]`.
#pragma once

#include <ostream>

namespace brine::master {

// Runs brine-master until SIGTERM/SIGINT. Returns the exit code: 0 after a
// clean stop (everything read was committed); 2 for a usage or configuration
// error (a bad config file or value, a bus that another process holds); 1 for
// a runtime failure (the store unavailable at start). Messages go to `err`,
// one line each, prefixed `brine-master: `; help and version to `out`.
int Main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace brine::master
