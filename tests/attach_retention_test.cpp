// Retention of brine_bus_gaps (issue 29): a gap that ended before the
// events' cut (keep_events_seconds / brine.keep_events_seconds) goes with the
// events around it, in the one retention plan, on both backends; an open gap
// and a recent one stay.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/store.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

using brine::store::GapReason;
using std::chrono::hours;

namespace {

// Every gap as "<reason>:<end or open>", oldest first.
std::string Gaps(brine::store::Store& s) {
  std::string out;
  for (const brine::store::BusGap& g : s.GetBusGaps(brine::FromUnixMicros(0))) {
    out += (out.empty() ? "" : ", ") + g.reason + ":" + (g.end ? "ended" : "open");
  }
  return out;
}

}  // namespace

TEST_CASE("attach: retention removes the bus gaps that ended before the events' cut, never an open one, on both backends",
          "[attach][store]") {
  brine::test::TempDir dir;
  const brine::Micros now = brine::FromUnixMicros(1764158400000000);  // 2025-11-26 12:00:00 UTC
  for (const std::string backend : {"sqlite", "postgresql"}) {
    INFO(backend);
    const std::string database = backend == "sqlite" ? (dir / "gaps.sqlite").string()
                                                     : brine::test::PostgresServer::Shared().CreateDatabase();
    auto s = brine::store::OpenStore(database, {.master_id = "m1"});
    // Ended 3 days ago, ended across the cut (started before it), ended an hour ago.
    s->OpenBusGap(GapReason::kMasterWentAway, now - hours(73), now - hours(74));
    s->CloseBusGap(now - hours(72));
    s->OpenBusGap(GapReason::kSocketReplaced, now - hours(25), std::nullopt);
    s->CloseBusGap(now - hours(23));
    s->OpenBusGap(GapReason::kFellBehind, now - hours(2), now - hours(2));
    s->CloseBusGap(now - hours(1));
    // Another master's gap, open for days: kept while it is open.
    auto other = brine::store::OpenStore(database, {.master_id = "m2"});
    other->OpenBusGap(GapReason::kPermissionDenied, now - hours(100), std::nullopt);
    REQUIRE(Gaps(*s) == "permission denied:open, master went away:ended, socket replaced:ended, brine fell behind:ended");

    // Jobs only: the events' cut is unset, so every gap stays.
    brine::store::CleanResult r = s->ApplyRetention({.jobs_before = now - hours(24)}, 100000);
    CHECK(r.bus_gaps == 0);
    CHECK(Gaps(*s) == "permission denied:open, master went away:ended, socket replaced:ended, brine fell behind:ended");

    // A budget of one row goes to the oldest ended gap and says there is more.
    r = s->ApplyRetention({.events_before = now - hours(24)}, 1);
    CHECK(r.bus_gaps == 1);
    CHECK(r.more);
    CHECK(Gaps(*s) == "permission denied:open, socket replaced:ended, brine fell behind:ended");
    // The gap that ended after the cut stays, though it started before it.
    r = s->ApplyRetention({.events_before = now - hours(24)}, 100000);
    CHECK(r.bus_gaps == 0);
    CHECK_FALSE(r.more);
    CHECK(Gaps(*s) == "permission denied:open, socket replaced:ended, brine fell behind:ended");

    // A cut after every end: only the open gap is left, and the store still
    // closes it when its master attaches.
    r = s->ApplyRetention({.events_before = now}, 100000);
    CHECK(r.bus_gaps == 2);
    CHECK(Gaps(*s) == "permission denied:open");
    other->CloseBusGap(now);
    CHECK(Gaps(*s) == "permission denied:ended");
  }
}
