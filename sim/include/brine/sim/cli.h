// brine-sim's command line: a simulated Salt fleet pushed onto a running
// brine-master's bus (docs/sim.md lists the options and the event stream).
#pragma once

#include <ostream>

namespace brine::sim {

// Runs brine-sim with `argv` (argv[0] is the program name): builds a Fleet
// from the options, paces its events onto the bus (or writes them to a file
// with --dry-run), and prints a one-line summary to `out` (JSON with
// --summary-json). SIGINT and SIGTERM end the run early, with the summary.
// Returns the exit code: 0 when the run ended (all jobs done, --duration
// reached, or a signal); 1 when the bus is missing or stopped taking events,
// or the dry-run file could not be written (`err` gets "brine-sim: <why>" and
// `out` still gets the summary of what was sent); 2 for a usage error or a
// config that cannot be read ("brine-sim: <why>" and a hint to --help).
// Throws nothing but std::bad_alloc.
int Main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace brine::sim
