// brine::sim::Tally: what a run sent, counted the way the store will show it,
// so a run's summary can be checked against `jids`, `salt_returns` and
// `jid_missing` (docs/schema.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "brine/core/time.h"
#include "brine/sim/fleet.h"

namespace brine::sim {

struct Totals {
  std::int64_t events = 0;            // events sent
  std::int64_t bytes = 0;             // their frames' bytes
  std::int64_t jobs = 0;              // salt jobs whose salt/job/<jid>/new was sent (not find_job)
  std::int64_t returns = 0;           // their returns sent
  std::int64_t failed = 0;            // ... of which with a non-zero retcode
  std::int64_t missing = 0;           // their targeted minions whose return was not sent
  std::int64_t find_job_polls = 0;    // saltutil.find_job jobs whose new event was sent
  std::int64_t find_job_returns = 0;  // their returns sent
  std::int64_t find_job_missing = 0;  // polled minions that did not answer
  std::int64_t runner_jobs = 0;       // salt/run/<jid>/ret sent
  std::optional<Micros> first;        // virtual time of the first event sent
  std::optional<Micros> last;         // ... and of the last
};
// With a brine-master that archived everything (job_cache and runner_returns
// on), after the run:
//   SELECT count(*) FROM jids          = jobs + find_job_polls + runner_jobs
//   SELECT count(*) FROM salt_returns  = returns + find_job_returns + runner_jobs
//   SELECT count(*) FROM jid_missing   = missing + find_job_missing
//   the master's `received` counter    = events

class Tally {
 public:
  // Counts `event`, sent as a frame of `frame_bytes` bytes. Events must come
  // in stream order (a job's bare-jid event before its new event). Never
  // throws except std::bad_alloc.
  void Count(const SimEvent& event, std::size_t frame_bytes);

  [[nodiscard]] const Totals& totals() const { return t_; }

 private:
  // Jobs whose bare-jid event was counted but not yet their new event: the
  // new event tells a find_job poll from a salt job.
  std::unordered_map<std::string, std::int64_t> announced_;
  Totals t_;
};

}  // namespace brine::sim
