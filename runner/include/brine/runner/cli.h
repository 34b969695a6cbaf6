// brine-run: a salt-run compatible command line over the brine store.
//
//   brine-run [options] FUNCTION [ARG ...] [KEY=VALUE ...]
//
// Options may also follow the function and its arguments, as salt-run allows.
// Every positional and KEY=VALUE argument is typed as salt-run types it (YAML
// 1.1 with Salt's rules; see arguments.h). The result is printed with Salt's
// outputters (nested by default, json, yaml, txt, raw).
#pragma once

#include <ostream>

namespace brine::runner {

enum class Terminal { kDetect, kTty, kNotTty };

// The whole CLI. Returns the exit code: 0 on success; 2 for a usage error
// (unknown option or function, missing, unexpected or mistyped argument), after
// printing salt-run's "Passed invalid arguments" text on `out` and one line
// `brine-run: <reason>` on `err`; 1 for a runtime failure (store missing or
// unreadable, master unreachable), one line on `err`. `terminal` says whether
// `out` is a terminal (colour by default); kDetect asks isatty(1).
int Main(int argc, char** argv, std::ostream& out, std::ostream& err, Terminal terminal = Terminal::kDetect);

}  // namespace brine::runner
