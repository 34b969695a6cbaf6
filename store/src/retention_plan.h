// RetentionPlan: Store::ApplyRetention's rules (store.h: Retention), once,
// above the backends. The plan decides the classes (keep_jobs_by_fun,
// keep_events_by_tag: the first rule whose glob matches, by core's FnMatch),
// the order (events by class, the default class, quarantined frames, the
// bus gaps that ended before the events' cut, then jobs by class and the
// default class), the row budget and what whole days
// may go. A backend only deletes what the plan names (RetentionBackend),
// and may drop whole days by a mechanism of its own (PostgreSQL's
// partitions) where the plan allows it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/store.h"

namespace brine::store::detail {

// The index of the first rule whose glob matches `name`, or -1 (the default class).
[[nodiscard]] int ClassOf(const std::vector<RetentionRule>& rules, std::string_view name);

// The jobs of one class by their fun, as SQL can select them exactly:
// every job (`all`), fun IN `funs`, or (`others`) fun NULL or NOT IN `funs`.
// `is_member` decides, by FnMatch, for each row a backend picked.
struct JobClass {
  bool all = false;
  bool others = false;
  std::vector<std::string> funs;
  std::function<bool(std::optional<std::string_view> fun)> is_member;
  std::optional<Micros> before;  // the class's cut; nullopt: kept forever
};

// What a backend does for the plan. Each runs inside ApplyRetention's
// transaction and throws its driver's errors.
class RetentionBackend {
 public:
  // Sends what waits and forgets cached job rows (returns may go).
  virtual void StartRetention() = 0;
  // Every distinct non-null fun of the job rows.
  virtual std::vector<std::string> JobFunctions() = 0;
  // Deletes up to `budget` of the oldest events that arrived before
  // `before` and whose tag (the canonical salt/job/<jid>/ret/<minion> of a
  // shared return) `is_member` accepts (every one when it is null); the count.
  virtual std::int64_t DeleteOldEvents(Micros before, std::int64_t budget,
                                       const std::function<bool(std::string_view tag)>* is_member) = 0;
  // Deletes up to `budget` of the oldest quarantined frames before `before`; the count.
  virtual std::int64_t DeleteOldQuarantine(Micros before, std::int64_t budget) = 0;
  // Deletes up to `budget` of the bus gaps (brine_bus_gaps) that ended
  // before `before`, oldest end first; an open gap stays. The count.
  virtual std::int64_t DeleteOldBusGaps(Micros before, std::int64_t budget) = 0;
  // Deletes jobs of `job_class` older than `before` (a time jid by its text,
  // any other by when it was first seen), with their returns and expected
  // minions, each costing 1 + its returns of `budget`, while budget > 0.
  virtual void DeleteOldJobs(Micros before, const JobClass& job_class, std::int64_t& budget, CleanResult& result) = 0;
  // Whole days of events before `before`, outside the budget (none by default).
  virtual void DropEventDays(Micros /*before*/, CleanResult& /*result*/) {}
  // Whole days of jobs before `before` none of whose jobs `classes` keeps
  // (a time jid at or after its class's cut, or a class kept forever),
  // outside the budget (none by default).
  virtual void DropJobDays(const std::vector<JobClass>& /*classes*/, Micros /*before*/, CleanResult& /*result*/) {}

 protected:
  ~RetentionBackend() = default;
};

// Store::ApplyRetention on `backend`.
CleanResult ApplyRetentionPlan(const Retention& retention, std::int64_t max_rows, RetentionBackend& backend);

}  // namespace brine::store::detail
