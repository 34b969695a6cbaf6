// brine.export and brine.import_export: moving a store's jobs, returns and
// archived events to another store (SQLite or PostgreSQL) through a file.
//
// The file is JSON Lines (UTF-8, one JSON object a line, "\n" after each):
//
//   file    := header job* event*
//   header  := {"brine_export": 1, "schema": <int>, "since": <str|null>, "until": <str|null>}
//   job     := {"job": <jid>, "origin": "none"|"stub"|"event"|"master", "load": <map|null>,
//               "metadata": <any|null>, "minions": [<str>...], "nocache": <bool>,
//               "endtime": <str|null>, "seen_us": <int>}
//              return*                      (that job's returns, in arrival order)
//   return  := {"return": <jid>, "minion": <str>, "received_us": <int>, "load": <map>}
//   event   := {"event": <tag>, "master_id": <str>, "received_us": <int>, "data": <map>}
//
// Loads, metadata, return loads and event data are the store's own JSON text,
// copied unparsed, so big integers, floats and non-ASCII text leave as they
// were stored. `origin` says which returner call stored the load (store.h,
// StoredJob::Origin); `*_us` are UTC microseconds since the Unix epoch.
// Not exported: quarantined frames (raw bytes kept for diagnosis, not data),
// brine-master's counters, and the queue tables.
#pragma once

#include <filesystem>
#include <optional>

#include "functions.h"

namespace brine::runner {

// Writes the jobs whose jid time is in [since, until) with their returns, and
// the events that arrived in [since, until), to `file` (a temp file beside it,
// renamed when complete, so a failed export leaves no partial file).
// Returns {"file", "jobs", "returns", "events", "bytes", "seconds"}. Throws
// RuntimeFailure when the store cannot be read or the file cannot be written.
[[nodiscard]] Value Export(Context& ctx, const std::filesystem::path& file, std::optional<Micros> since,
                           std::optional<Micros> until);

// Reads a file Export wrote into the store (opened read-write; created when
// missing) through the returner API, as the master would have stored it:
// each job's load by its origin, minions, nocache mark, endtime, first-seen
// time; each return with its arrival time (first return wins); each event
// with its arrival time and master id, sharing its return's payload when it
// is one. Idempotent: a job or return already there adds nothing, an event
// already archived at the same microsecond with the same tag and master is
// skipped (so the store the file came from, or one already importing it,
// gains nothing). Commits every 1,000 records. Returns {"jobs", "jobs_present",
// "returns", "returns_present", "events", "events_present", "seconds"}.
// Throws RuntimeFailure for an unreadable file, a line that is not a record of
// this format (naming the line), or a store that cannot be written.
[[nodiscard]] Value ImportExport(Context& ctx, const std::filesystem::path& file);

}  // namespace brine::runner
