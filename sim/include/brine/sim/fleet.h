// brine::sim::Fleet: a Salt master with N minions, as the stream of events its
// bus carries (spec salt-jobs.md sections 3, 7 and 9.5-9.6). Nothing here
// sends anything: the stream is a pure function of FleetOptions, so the same
// options (seed included) give the same events, byte for byte once encoded.
// brine-sim (cli.h) paces and sends it; tests read it directly.
//
// What the stream holds, in virtual-time order (docs/sim.md has examples):
//   boot       every minion that starts up fires `salt/auth` (act accept) and
//              then `salt/minion/<id>/start` (cmd _minion_event);
//   jobs       an operator's `salt` command: the bare-jid event {minions},
//              `salt/job/<jid>/new` {jid, tgt_type, tgt, user, fun, arg,
//              minions, missing}, then one `salt/job/<jid>/ret/<minion>` per
//              targeted minion that is up, after a delay that depends on the
//              function and the minion; test.ping, cmd.run, grains.items and
//              state.apply (highstate-shaped, `out: highstate`); failures carry
//              a non-zero retcode and success false;
//   find_job   Salt's CLI waits `timeout` (5 s) and then publishes
//              `saltutil.find_job [<jid>]` to the minions that have not
//              returned (tgt_type list); a minion still running the job answers
//              with the job's data and its `pid`, one that finished answers {},
//              a minion that is down does not answer and is not polled again;
//              polls repeat every 5 s while some minion is still running; jobs
//              published by salt-api (user `saltapi`, local_async) are not polled;
//   runners    `salt/run/<jid>/new` and, later, `salt/run/<jid>/ret` for
//              manage.status, manage.up, jobs.active and jobs.list_jobs;
//   presence   every 60 virtual seconds `salt/presence/change` {new, lost}
//              (when the set changed) and `salt/presence/present` {present}.
// Minions go down and come back between presence ticks, so that about
// `missing_rate` of the fleet is down at any time; a down minion is still
// targeted (it has an accepted key) and never returns, and one that goes down
// while running a job loses that return. A minion coming back fires auth and
// start again. Every data map carries `_stamp` = FormatStamp(the event's
// virtual time) as its last key (a runner's ret keeps it where its new event
// had it, as Salt's reused dict does).
//
// Virtual time. Jobs are published as an event budget allows: a job starts at
// start + speed * (events scheduled so far) / layout_rate, so the stream holds
// about layout_rate/speed events per virtual second. Sent at layout_rate events
// per real second, virtual time then runs `speed` times as fast as real time.
// Jids are the virtual publish times (strictly increasing: a collision moves
// the later jid on by 1 µs, as unique_jid does).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"

namespace brine::sim {

// The JSON size of a state.apply return value (the highstate dict), in bytes,
// is drawn from a log-normal distribution with median `median` whose 1st and
// 99th percentiles are `small` and `large` (a different spread below and above
// the median), clamped to [small, large]. The return is built to about that
// size: at most 2% less (state times are measured with placeholders) and at
// most one state entry (some 600 bytes) more.
struct ReturnSizes {
  std::int64_t small = 300;
  std::int64_t median = 4000;
  std::int64_t large = 250000;
};

// The execution functions operators run.
enum class Function { kTestPing, kCmdRun, kGrainsItems, kStateApply };

// "test.ping" -> kTestPing, ...; nullopt for any other name. Never throws.
[[nodiscard]] std::optional<Function> FunctionByName(std::string_view name);
// kTestPing -> "test.ping", ...: Salt's name of the function. Never throws.
[[nodiscard]] std::string_view FunctionName(Function fun);

struct FleetOptions {
  Micros start{};              // virtual time the stream starts at
  double speed = 1.0;          // virtual seconds per real second (> 0)
  double layout_rate = 1000;   // events per real second virtual time is laid out for (> 0)
  std::int64_t minions = 100;  // fleet size, 1 to 1,000,000
  // Salt jobs to publish (find_job polls and runner jobs not counted); nullopt:
  // no limit. The stream ends when the last job's returns and polls are done.
  std::optional<std::int64_t> jobs = 100;
  // No job is published at or after this virtual instant (nullopt: no such
  // limit); the jobs already published still run to the end.
  std::optional<Micros> publish_until;
  std::uint64_t seed = 1;
  double missing_rate = 0.02;  // share of the fleet down at any time, [0, 1]
  double fail_rate = 0.05;     // share of cmd.run and state.apply returns that fail, [0, 1]
  double runner_rate = 0.1;    // runner jobs per salt job, [0, 1]
  ReturnSizes return_size;
  // Operators pick among these (weights test.ping 30, cmd.run 30, grains.items
  // 15, state.apply 25); must not be empty.
  std::vector<Function> functions{Function::kTestPing, Function::kCmdRun, Function::kGrainsItems,
                                  Function::kStateApply};
};

struct SimEvent {
  enum class Kind {
    kPublish,         // <jid>: {minions}
    kNew,             // salt/job/<jid>/new
    kReturn,          // salt/job/<jid>/ret/<minion>
    kRunnerNew,       // salt/run/<jid>/new
    kRunnerReturn,    // salt/run/<jid>/ret
    kAuth,            // salt/auth
    kMinionStart,     // salt/minion/<id>/start
    kPresenceChange,  // salt/presence/change
    kPresence,        // salt/presence/present
  };
  Kind kind = Kind::kPublish;
  std::string tag;
  Value data;     // a map with `_stamp` = FormatStamp(at)
  Micros at{};    // virtual time
};

class Fleet {
 public:
  // Throws std::invalid_argument, naming the field, when an option is out of
  // the ranges above or return_size is not small <= median <= large with small >= 1.
  explicit Fleet(FleetOptions options);
  ~Fleet();
  Fleet(Fleet&&) noexcept;
  Fleet& operator=(Fleet&&) noexcept;

  // The next event (virtual times never decrease); nullopt once the stream has
  // ended: no more jobs to publish (the `jobs` limit, `publish_until` or
  // StopPublishing) and every published job finished. Background events
  // (presence, minions going and coming) do not keep a stream going. Never
  // throws except std::bad_alloc.
  [[nodiscard]] std::optional<SimEvent> Next();

  // Publishes no further job; the stream ends once the jobs in flight are
  // done. For a stop by the wall clock, which the stream cannot know.
  void StopPublishing();

  // The minion ids, in fleet order (`web-0001.example.com`, `db-0001...`, ...).
  [[nodiscard]] const std::vector<std::string>& minion_ids() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brine::sim
