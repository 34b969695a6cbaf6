// brine-web's main: `brine-web [-c CONFIG_DIR]`.
//
// Reads the master config as brine-master does (LoadMasterConfig), opens the
// store read-only (brine.read_database when set, else brine.database),
// switches to the config's `user` when started as root, makes or reads the
// login token (brine.web_token_file), listens on brine.web_bind /
// brine.web_port, records the port bound in WebPortFile (config), and serves
// until SIGTERM or SIGINT, then removes the port file.
//
// Exit codes, as brine-master's: 0 stopped cleanly (or --help/--version);
// 1 a runtime failure (the store cannot be opened); 2 a usage or
// configuration error (a bad argument or key, an unknown user, a token file
// that is refused, an address that cannot be bound), which systemd does not
// restart.
#pragma once

#include <ostream>

namespace brine::web {

int Main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace brine::web
