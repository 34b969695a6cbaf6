// systemd's service notification protocol (sd_notify(3)), spoken directly:
// one datagram of "KEY=VALUE\n" lines to the AF_UNIX socket named by
// $NOTIFY_SOCKET (a path, or "@name" in the abstract namespace).
//
// Why not libsystemd's sd_notify: the protocol is these few lines, stable and
// documented as an interface for exactly this; linking libsystemd would add a
// package to build and run with, for one sendto().
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace brine::master {

// Sends `state` (e.g. "READY=1\nSTATUS=...") when $NOTIFY_SOCKET is set.
// Returns true when sent, false when not under a notify-type service manager
// or the send failed (never throws: a daemon must not stop for this).
bool NotifyServiceManager(std::string_view state);

// The watchdog interval systemd expects pings within ($WATCHDOG_USEC, when
// $WATCHDOG_PID is unset or this process); nullopt when no watchdog is set.
[[nodiscard]] std::optional<std::chrono::microseconds> WatchdogInterval();

}  // namespace brine::master
