// jobs.master and brine's own functions.
#include "functions.h"
#include "proc_file.h"

namespace brine::runner {

void AddBrineFunctions(std::vector<FunctionSpec>& out) {
  out.push_back({
      "jobs.master",
      {},
      "List the runner calls in progress on this master (brine-run's long calls such as state.event,\n"
      "and Salt's own runners when they share the cachedir), from <cachedir>/proc.\n"
      "\n"
      "CLI Example:\n"
      "\n"
      "    brine-run jobs.master",
      [](Context& ctx, const std::vector<Value>&) { return RunningCalls(ctx.config().cachedir); },
  });
  out.push_back({
      "brine.stats",
      {},
      "brine-master's counters for each master id, as of its last commit: received, stored, filtered,\n"
      "quarantined, cache_writes (the Salt plug-in's job-cache frames; received = stored + filtered +\n"
      "quarantined + cache_writes), duplicates (returns whose payload differed from the first), trimmed\n"
      "(events carrying Salt's VALUE_TRIMMED), returns, batches, queue_depth, last_commit_us and\n"
      "oldest_event_us (UTC microseconds). They count since the master last started.\n"
      "\n"
      "CLI Example:\n"
      "\n"
      "    brine-run brine.stats",
      [](Context& ctx, const std::vector<Value>&) { return ctx.Store().GetCounters(); },
  });
}

}  // namespace brine::runner
