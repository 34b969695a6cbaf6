// Jobs still running, as the store knows them (brine-run jobs.active and
// brine-web's /active share this). Salt asks every minion (saltutil.running);
// brine answers from what it archived: a job's expected minions that have not
// returned, with the pid of their latest saltutil.find_job reply within the
// window, or with no pid while the job itself is younger than the window.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/store.h"

namespace brine::store {

struct ActiveJob {
  std::string jid;
  Value load;  // GetLoad's: the publish load plus "Minions"
  // Minions still running it, in name order: the pid from their latest
  // find_job reply, or null (a young job, no reply yet).
  std::vector<std::pair<std::string, Value>> running;
  std::vector<std::string> returned;  // minions that returned, in name order
};

// The jobs running at `now` (in jid order): those with a find_job reply that
// carries a pid within [now - window, now], or started within it, that still
// have an expected minion without a return. Reads the find_job jobs of the
// window and the window's jobs (jid-range queries). Throws StoreError.
[[nodiscard]] std::vector<ActiveJob> FindActiveJobs(Store& store, Micros now,
                                                    std::chrono::seconds window);

}  // namespace brine::store
