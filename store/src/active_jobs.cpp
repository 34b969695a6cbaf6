#include "brine/store/active_jobs.h"

#include <map>
#include <set>

#include "brine/core/jid.h"

namespace brine::store {

std::vector<ActiveJob> FindActiveJobs(Store& store, Micros now, std::chrono::seconds window) {
  const std::string since = FormatJid(now - window);

  // The newest saltutil.find_job answer per (jid, minion) within the window.
  std::map<std::string, std::map<std::string, Value>> pids;  // jid -> minion -> pid
  JobFilter finds;
  finds.jid_min = since;
  finds.function_globs = {"saltutil.find_job"};
  for (const auto& find : store.GetJids(finds)) {
    // The jid polled is find_job's first argument; a reply names it too while
    // the job runs, and is {} once the job no longer runs on that minion.
    const Value* args = find.load.Find("arg");
    const Value* polled = args != nullptr && args->is_list() && !args->as_list().empty()
                              ? &args->as_list()[0]
                              : nullptr;
    const Value returns = store.GetJidFull(find.jid);
    for (const auto& [minion, full] : returns.as_map()) {
      const Value* r = full.Find("return");
      if (r == nullptr || !r->is_map()) continue;
      const std::string* jid = r->FindString("jid");
      if (jid == nullptr && polled != nullptr && polled->is_string()) jid = &polled->as_string();
      if (jid == nullptr) continue;
      // Later finds overwrite earlier ones; a reply without a pid says "not running".
      if (const Value* pid = r->Find("pid"); pid != nullptr) {
        pids[*jid][minion] = *pid;
      } else if (auto it = pids.find(*jid); it != pids.end()) {
        it->second.erase(minion);
      }
    }
  }
  std::set<std::string> candidates;
  for (const auto& [jid, _] : pids) candidates.insert(jid);
  // The window's other jobs, only those with an expected minion that has not
  // returned: the counts come from the index (job_minion's key, ret's
  // (job_id, minion_id)) and no load is parsed (json_text), so a job that
  // every minion answered costs no read of its load or returns.
  JobFilter young;
  young.jid_min = since;
  young.exclude_functions = {"saltutil.find_job"};
  young.json_text = true;
  young.with_counts = true;
  store.ForEachJob(young, [&](JobRecord&& job) {
    if (job.counts && job.counts->missing > 0) candidates.insert(std::move(job.jid));
  });

  std::vector<ActiveJob> out;
  for (const std::string& jid : candidates) {
    Value load = store.GetLoad(jid);
    if (!load.is_map() || load.as_map().empty()) continue;
    // Which minions returned: their names only, no return parsed.
    std::set<std::string> returned;
    store.ForEachReturnJson(
        jid, [&](std::string_view minion, std::string_view) { returned.emplace(minion); });
    const auto start = JidToMicros(jid);
    const bool is_young = start && *start >= now - window;
    ActiveJob job{.jid = jid};
    if (const Value* minions = load.Find("Minions"); minions != nullptr) {
      for (const Value& m : minions->as_list()) {
        const std::string& name = m.as_string();
        if (returned.count(name) > 0) continue;
        auto pj = pids.find(jid);
        if (pj != pids.end() && pj->second.count(name) > 0) {
          job.running.emplace_back(name, pj->second[name]);
        } else if (is_young) {
          job.running.emplace_back(name, Value());
        }
      }
    }
    if (job.running.empty()) continue;
    job.returned.assign(returned.begin(), returned.end());
    job.load = std::move(load);
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace brine::store
