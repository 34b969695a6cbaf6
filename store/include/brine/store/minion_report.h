// brine::store minion reports: each minion's record over a window of jobs
// (Alcali's "conformity", brine-web's /minions and /minions/<id>).
//
// Reads through the SQL engine of sql.h (read-only as each database enforces
// it, a connection per call, under a time budget), with one text per dialect
// chosen here.
//
// Cost (docs/web.md, "/minions"): ReadMinionRecords reads the store's hourly
// rollups per minion (minion_hour, migration 0016 / postgres 0011, which
// the store keeps exact as it writes): for each minion of the page in name order, a range of
// the window's hours in minion_hour's primary key, never the jobs themselves;
// plus each listed minion's last sign of life as presence reads it (minion_activity.h), three
// index searches a minion: the newest entry of ret_minion (minion_id, job_id), its start event in
// event_tag, and its newest salt/auth event since the window's start in event_auth_minion.
// ReadLastHighstates is per minion one descending search of ret_minion, joined to job by key.
// None scans ret or event (tests/web_pages_test.cpp checks the plans).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/errors.h"

namespace brine::store {

// One minion over the jobs of a window.
struct MinionRecord {
  std::string minion;
  std::int64_t targeted = 0;  // jobs of the window that expected it
  std::int64_t returned = 0;  // of those, with its return
  std::int64_t failed = 0;    // of those returns, failed (retcode not 0 or success false)
  std::int64_t missing = 0;   // targeted - returned
  // Its latest sign of life of any kind (any time, not only the window):
  // its return to its newest job (a find_job reply included), its
  // salt/minion/<id>/start event, or a salt/auth event naming it that
  // arrived since MinionReportOptions::since; nullopt: none archived.
  // The same reading as brine-run manage.up's (presence.h).
  std::optional<Micros> last_seen;
};

struct MinionReportOptions {
  // The window: the jobs whose jid is in [FormatJid(since), FormatJid(until)]
  // (the bare 20 digits of `until` and any suffix after them included);
  // without `until`, every jid from `since` on. Counted in whole hours of
  // the jobs' start (the rollups'): the hour that holds `since` and the one
  // that holds `until` count whole (MinionRecords says which).
  Micros since{};
  std::optional<Micros> until;
  // Keyset paging: only minions whose name sorts after this one (bytes).
  std::string after;
  // When not empty: this minion only.
  std::string only;
  std::int64_t limit = 100;  // minions per answer
  // The budget of the whole call.
  std::chrono::milliseconds timeout{5000};
};

// What ReadMinionRecords found.
struct MinionRecords {
  std::vector<MinionRecord> minions;
  // The jobs counted: those that started from `counted_since` (the start of
  // the hour that holds `since`) to `counted_until` (the last microsecond of
  // the hour that holds `until`; nullopt: no end).
  Micros counted_since{};
  std::optional<Micros> counted_until;
};

// The minions the window's jobs expected, in name order (bytes), after
// `after`, at most `limit`. With `only`: that minion's record, or when the
// window's jobs did not expect it but it was seen, zero counts and its
// last_seen (nothing when neither). Throws SqlTimeoutError when the budget
// runs out, StoreError when the store cannot be read.
[[nodiscard]] MinionRecords ReadMinionRecords(const std::string& database,
                                              const MinionReportOptions& options);

// A minion's last highstate: its return to its newest job that ran
// state.highstate, or state.apply without state names (its arguments are
// only keyword arguments, e.g. test=True), with the states counted as
// Salt's highstate summary counts them.
struct StateRun {
  std::string jid;
  std::string function;  // state.highstate or state.apply
  std::optional<Micros> received;
  std::int64_t succeeded = 0;  // result not false (changed ones included)
  std::int64_t changed = 0;    // with non-empty changes
  std::int64_t failed = 0;     // result false
  // The failed states' IDs (`__id__`, else the state's key), in run order.
  std::vector<std::string> failed_ids;
  // True when the return was not a map of states (a render error: Salt
  // returns a list of messages); the counts are then 0 and the run failed.
  bool not_states = false;
};

// Each of `minions`' last highstate (in their order), looking at its
// returns to its newest `look_back` state.highstate/state.apply jobs;
// nullopt when none of them is one. `timeout` is the budget of the whole
// call (none: SqlTimeoutError at once). Throws as ReadMinionRecords.
[[nodiscard]] std::vector<std::optional<StateRun>> ReadLastHighstates(
    const std::string& database, const std::vector<std::string>& minions,
    std::chrono::milliseconds timeout, int look_back = 20);

// The SQL texts of this module on `database`'s kind, with their named
// parameters, so tests can check their plans. Throws nothing.
[[nodiscard]] std::vector<std::string> MinionReportQueries(const std::string& database);

}  // namespace brine::store
