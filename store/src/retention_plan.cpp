// RetentionPlan (retention_plan.h): Store::ApplyRetention's rules, once.
#include "retention_plan.h"

#include <algorithm>

#include "brine/core/glob.h"

namespace brine::store::detail {

int ClassOf(const std::vector<RetentionRule>& rules, std::string_view name) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (FnMatch(rules[i].glob, name)) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// The job classes: one per rule, then the default class (last).
std::vector<JobClass> JobClasses(const Retention& retention, RetentionBackend& backend) {
  const std::vector<RetentionRule>& rules = retention.jobs_by_fun;
  std::vector<JobClass> classes(rules.size() + 1);
  JobClass& others = classes.back();
  others.before = retention.jobs_before;
  if (rules.empty()) {
    others.all = true;
    others.is_member = [](std::optional<std::string_view>) { return true; };
    return classes;
  }
  others.others = true;
  for (std::string& fun : backend.JobFunctions()) {
    const int c = ClassOf(rules, fun);
    if (c < 0) continue;
    others.funs.push_back(fun);
    classes[static_cast<std::size_t>(c)].funs.push_back(std::move(fun));
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    classes[i].before = rules[i].before;
    classes[i].is_member = [&rules, i](std::optional<std::string_view> fun) {
      return fun && ClassOf(rules, *fun) == static_cast<int>(i);
    };
  }
  others.is_member = [&rules](std::optional<std::string_view> fun) { return !fun || ClassOf(rules, *fun) < 0; };
  return classes;
}

}  // namespace

CleanResult ApplyRetentionPlan(const Retention& retention, std::int64_t max_rows, RetentionBackend& backend) {
  backend.StartRetention();
  CleanResult result;
  std::int64_t budget = max_rows;

  // Events: whole days before every class's cut go first, outside the budget.
  const std::vector<RetentionRule>& tags = retention.events_by_tag;
  std::optional<Micros> event_days = retention.events_before;
  for (const RetentionRule& r : tags) {
    event_days = event_days && r.before ? std::optional(std::min(*event_days, *r.before)) : std::nullopt;
  }
  if (event_days) backend.DropEventDays(*event_days, result);
  for (std::size_t i = 0; i < tags.size() && budget > 0; ++i) {
    if (!tags[i].before) continue;
    const std::function<bool(std::string_view)> member = [&](std::string_view tag) {
      return ClassOf(tags, tag) == static_cast<int>(i);
    };
    const std::int64_t n = backend.DeleteOldEvents(*tags[i].before, budget, &member);
    result.events += n;
    budget -= n;
  }
  if (retention.events_before && budget > 0) {
    const std::function<bool(std::string_view)> member = [&](std::string_view tag) { return ClassOf(tags, tag) < 0; };
    const std::int64_t n = backend.DeleteOldEvents(*retention.events_before, budget, tags.empty() ? nullptr : &member);
    result.events += n;
    budget -= n;
    if (budget > 0) {
      result.quarantined = backend.DeleteOldQuarantine(*retention.events_before, budget);
      budget -= result.quarantined;
    }
    // A gap says what the archive missed: it goes with the events around
    // it, once it ended before their cut (an open one stays).
    if (budget > 0) {
      result.bus_gaps = backend.DeleteOldBusGaps(*retention.events_before, budget);
      budget -= result.bus_gaps;
    }
  }

  // Jobs: whole days before every cut, then each class by its own cut.
  std::optional<Micros> job_days = retention.jobs_before;
  for (const RetentionRule& r : retention.jobs_by_fun) {
    if (r.before) job_days = job_days ? std::min(*job_days, *r.before) : *r.before;
  }
  if (!job_days) {
    result.more = budget <= 0;
    return result;
  }
  const std::vector<JobClass> classes = JobClasses(retention, backend);
  backend.DropJobDays(classes, *job_days, result);
  for (const JobClass& c : classes) {
    if (budget <= 0) break;
    if (!c.before || (!c.all && !c.others && c.funs.empty())) continue;
    backend.DeleteOldJobs(*c.before, c, budget, result);
  }
  result.more = budget <= 0;
  return result;
}

}  // namespace brine::store::detail
