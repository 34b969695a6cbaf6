// brine::store presence: which minions are up, answered from what the bus
// said (brine-run's manage.up, manage.down, manage.present and
// manage.not_present; Salt's runner pings every minion and waits instead).
//
// Two sources, in this order:
//   1. Salt's presence events, when the caller says the master fires them
//      (Salt's `presence_events`): the newest `salt/presence/present`
//      ({"present": [ids]}), with the `salt/presence/change` events
//      ({"new": [...], "lost": [...]}) archived after it applied on top. Used
//      only when that present event arrived within the window (a Salt master
//      fires one every loop_interval; an older one means it stopped).
//   2. Otherwise, activity: a minion is up when its newest sign of life
//      arrived within the window: its return to its newest job (a
//      `saltutil.find_job` reply is a return), a `salt/auth` event naming it
//      (`act` accept or absent), or its `salt/minion/<id>/start` event.
// Down is every minion the store knows (one it stored a return from, one a
// job named as a target, one whose start event is archived, one a presence
// event named) that is not up. A minion the store never heard of is in
// neither list.
//
// Cost on a fleet of F minions (docs/schema.md, "Presence"): activity reads
// the `minion` table (F rows) and, per minion, one descending search of the
// `ret_minion` index (on PostgreSQL one per `ret` partition), the `salt/auth`
// events of the window through `event_tag` (a range on (tag, id) on SQLite;
// on PostgreSQL the index and the day partitions the window reaches), and the
// `salt/minion/` tag range (one event per minion start kept). Presence events
// read one `event_tag` entry and the change events after it. No query scans
// `ret` or `event`.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/errors.h"

namespace brine::store {

struct PresenceOptions {
  enum class Source { kActivity, kPresenceEvents };
  // kPresenceEvents: the Salt master fires presence events (its
  // `presence_events` is on): try them first. kActivity: never read them.
  Source prefer = Source::kActivity;
  // How recent a sign of life (or the presence event) must be.
  std::chrono::seconds window{300};
  // The budget of the whole read.
  std::chrono::milliseconds timeout{30000};
};

struct Presence {
  enum class Source { kPresenceEvents, kActivity };
  Source source = Source::kActivity;
  std::vector<std::string> up;    // sorted by byte value, no repeats
  std::vector<std::string> down;  // sorted by byte value, no repeats, none of `up`
  // Why the answer came from where it did, one sentence for brine-run -l debug
  // (e.g. "the newest salt/presence/present arrived at ..., with 2 changes after it").
  std::string explanation;
};

// Reads presence from `database` (what OpenStore takes) as of `now`, read-only
// through the SQL engine of sql.h (so a live store's writer is never held up).
// Returns the two lists. Throws StoreError when the store cannot be opened or
// read (SqlTimeoutError when the budget runs out).
[[nodiscard]] Presence ReadPresence(const std::string& database, Micros now, const PresenceOptions& options);

// The SQL texts ReadPresence runs on a database of `database`'s kind (a
// SQLite path or a postgresql:// URI), with their :cut and :after
// parameters, so tests can check their plans. Throws nothing.
[[nodiscard]] std::vector<std::string> PresenceQueries(const std::string& database);

}  // namespace brine::store
