#include "brine/sim/fleet.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <unordered_map>

#include "brine/core/jid.h"
#include "payloads.h"
#include "random.h"

namespace brine::sim {

std::optional<Function> FunctionByName(std::string_view name) {
  for (Function f : {Function::kTestPing, Function::kCmdRun, Function::kGrainsItems, Function::kStateApply}) {
    if (FunctionName(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view FunctionName(Function fun) {
  switch (fun) {
    case Function::kTestPing: return "test.ping";
    case Function::kCmdRun: return "cmd.run";
    case Function::kGrainsItems: return "grains.items";
    case Function::kStateApply: return "state.apply";
  }
  return "test.ping";
}

namespace {

using std::chrono::microseconds;

// Salt's `timeout`: the CLI asks the minions that have not returned by then
// whether they still run the job (saltutil.find_job), and asks again each
// `timeout` while one does.
constexpr microseconds kTimeout = std::chrono::seconds(5);
// The master's loop_interval: presence events come this often.
constexpr microseconds kPresenceInterval = std::chrono::seconds(60);
// Per presence interval, the chance that a down minion comes back.
constexpr double kComeBackChance = 0.3;
// Boot (every minion's auth and start) is spread over at most this long.
constexpr microseconds kMaxBootSpan = std::chrono::seconds(30);
constexpr std::size_t kRecentJobs = 20;
// The user salt-api publishes as (its jobs are not polled).
constexpr std::string_view kApiUser = "saltapi";

microseconds Seconds(double s) { return microseconds(static_cast<std::int64_t>(std::llround(s * 1e6))); }

struct Delivery {
  std::size_t minion = 0;
  std::size_t parent_index = 0;  // find_job: the index of this minion in the polled job's targets
  std::uint64_t epoch = 0;       // the minion's epoch when the job reached it
  bool delivered = false;        // the minion was up when the job was published
  bool returned = false;
  Micros return_at{};
  std::int64_t size = 0;  // state.apply: return bytes
  bool fail = false;
  std::int64_t pid = 0;
  std::uint64_t seed = 0;
};

struct Job {
  enum class Type { kSalt, kFindJob, kRunner };
  Type type = Type::kSalt;
  std::string jid;
  Micros published{};
  Function fun = Function::kTestPing;
  std::string fun_name;
  ValueList arg;
  Value tgt;
  std::string tgt_type;
  std::string user;
  Value metadata;           // null: none
  std::size_t command = 0;  // cmd.run: index into Commands()
  std::string sls;          // state.apply: "" for the highstate
  std::vector<Delivery> targets;
  bool polled = false;
  std::vector<std::size_t> polling;  // target indices that answered find_job as still running
  std::uint64_t parent = 0;          // find_job: the polled job
  std::int64_t pending = 0;          // queued actions that refer to this job
  std::uint64_t seed = 0;            // its own random stream (see Publish)
  std::uint64_t polls = 0;           // find_job polls of it so far
  std::string runner;                // runner: manage.status, ...
  ValueList runner_args;
};

struct RecentJob {
  std::string jid;
  std::string fun;
  ValueList arg;
  Value tgt;
  std::string tgt_type;
  std::string user;
};

struct Action {
  enum class Type {
    kEmit,           // a prepared event
    kPublish,        // the operators' next command
    kReturn,         // a minion's return (if it is still up and running the job)
    kPoll,           // the CLI's find_job poll of a job
    kFindJobReturn,  // a minion's answer to a poll
    kRunnerReturn,   // a runner finishes
    kMinionUp,
    kMinionDown,
    kPresenceTick,
  };
  Micros at{};
  std::uint64_t seq = 0;
  Type type = Type::kEmit;
  bool live = false;  // part of a job or of boot: the stream does not end while one is queued
  std::uint64_t job = 0;
  std::size_t index = 0;  // a minion, or an index into the job's targets
  SimEvent::Kind kind = SimEvent::Kind::kPublish;
  std::string tag;
  Value data;
};

struct Later {
  bool operator()(const Action& a, const Action& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

template <typename T, std::size_t N>
const T& Pick(Rng& rng, const std::array<std::pair<T, double>, N>& choices) {
  std::array<double, N> weights{};
  for (std::size_t i = 0; i < N; ++i) weights[i] = choices[i].second;
  return choices[rng.Weighted(weights)].first;
}

Value IdList(const std::vector<std::string>& ids, const std::vector<std::size_t>& which) {
  ValueList out;
  out.reserve(which.size());
  for (std::size_t i : which) out.emplace_back(ids[i]);
  return Value(std::move(out));
}

}  // namespace

class Fleet::Impl {
 public:
  explicit Impl(FleetOptions options);
  std::optional<SimEvent> Next();
  void StopPublishing() { publishing_ = false; }
  const std::vector<std::string>& ids() const { return ids_; }

 private:
  // Queues `a`; `events` is how many events it will emit, for the budget.
  void Push(Action a, std::int64_t events);
  void PushEmit(Micros at, SimEvent::Kind kind, std::string tag, Value data, std::uint64_t job);
  void Ready(Micros at, SimEvent::Kind kind, std::string tag, Value data);
  std::pair<std::string, Micros> NextJid(Micros t);
  Micros BudgetTime() const;
  void Release(std::uint64_t key);

  void Process(Action& a);
  void Publish(Micros t);
  void StartRunner(Micros t, std::uint64_t seed);
  void StartSaltJob(Micros t, std::uint64_t seed);
  void DoReturn(Action& a);
  void DoPoll(Action& a);
  void DoFindJobReturn(Action& a);
  void DoRunnerReturn(Action& a);
  void DoMinionUp(Action& a);
  void DoPresenceTick(Micros t);

  double ReturnDelay(const Job& job, const MinionProfile& m, const Delivery& d, Rng& rng) const;
  std::int64_t DrawReturnSize(Rng& rng) const;
  Value MinionReturn(const Job& job, const Delivery& d, Micros now);
  Value RunnerReturn(const Job& job, Micros now) const;

  FleetOptions o_;
  std::vector<MinionProfile> minions_;
  std::vector<std::string> ids_;
  std::vector<char> up_;
  std::vector<char> reported_;  // the present set of the last presence event
  std::vector<std::uint64_t> epoch_;
  std::uint64_t jobs_seed_;
  Rng jobs_rng_;  // two draws per publish: a runner job or not, and the jitter
  Rng presence_rng_;
  double down_chance_ = 0;
  double up_chance_ = 0;

  std::vector<Action> heap_;
  std::deque<SimEvent> ready_;
  std::uint64_t seq_ = 0;
  std::int64_t live_ = 0;
  std::int64_t scheduled_ = 0;  // events scheduled so far (the budget's count)
  std::int64_t published_ = 0;
  bool ended_ = false;
  bool publishing_ = true;
  std::optional<Micros> last_jid_;
  std::uint64_t next_key_ = 1;
  std::unordered_map<std::uint64_t, Job> jobs_;
  std::deque<RecentJob> recent_;
};

Fleet::Impl::Impl(FleetOptions options)
    : o_(std::move(options)),
      jobs_seed_(DeriveSeed(o_.seed, HashLabel("jobs"))),
      jobs_rng_(DeriveSeed(o_.seed, HashLabel("publish"))),
      presence_rng_(DeriveSeed(o_.seed, HashLabel("presence"))) {
  auto rate_ok = [](double r) { return r >= 0.0 && r <= 1.0; };
  if (o_.minions < 1 || o_.minions > 1000000) throw std::invalid_argument("minions must be between 1 and 1000000");
  if (!(o_.speed > 0) || !std::isfinite(o_.speed)) throw std::invalid_argument("speed must be a positive number");
  if (!(o_.layout_rate > 0) || !std::isfinite(o_.layout_rate)) {
    throw std::invalid_argument("layout_rate must be a positive number");
  }
  if (o_.jobs && *o_.jobs < 0) throw std::invalid_argument("jobs must not be negative");
  if (!rate_ok(o_.missing_rate)) throw std::invalid_argument("missing_rate must be between 0 and 1");
  if (!rate_ok(o_.fail_rate)) throw std::invalid_argument("fail_rate must be between 0 and 1");
  if (!rate_ok(o_.runner_rate)) throw std::invalid_argument("runner_rate must be between 0 and 1");
  const ReturnSizes& r = o_.return_size;
  if (r.small < 1 || r.small > r.median || r.median > r.large) {
    throw std::invalid_argument("return_size must be SMALL <= MEDIAN <= LARGE, SMALL at least 1");
  }
  if (o_.functions.empty()) throw std::invalid_argument("functions must not be empty");

  const auto n = static_cast<std::size_t>(o_.minions);
  minions_.reserve(n);
  ids_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    minions_.push_back(MakeMinion(o_.seed, i, n));
    ids_.push_back(minions_.back().id);
  }
  up_.assign(n, 0);
  reported_.assign(n, 0);
  epoch_.assign(n, 0);

  // Down and back up so that missing_rate of the fleet is down on average:
  // the steady state of up->down with chance d and down->up with chance u per
  // interval is down = d / (d + u).
  const double m = o_.missing_rate;
  if (m >= 1.0) {
    down_chance_ = 1.0;
    up_chance_ = 0.0;
  } else {
    up_chance_ = m > 0 ? kComeBackChance : 0.0;
    down_chance_ = std::min(1.0, kComeBackChance * m / (1.0 - m));
  }

  // Boot: the minions that are up authenticate and start, spread out.
  const microseconds boot_span = std::clamp(
      Seconds(o_.speed * 2.0 * static_cast<double>(n) / o_.layout_rate), microseconds(1000), kMaxBootSpan);
  for (std::size_t i = 0; i < n; ++i) {
    if (m > 0 && presence_rng_.Chance(m)) continue;
    Action a{.at = o_.start + microseconds(static_cast<std::int64_t>(
                                  presence_rng_.Below(static_cast<std::uint64_t>(boot_span.count())))),
             .type = Action::Type::kMinionUp,
             .live = true,
             .index = i};
    Push(std::move(a), 2);
  }
  Push(Action{.at = o_.start + kPresenceInterval, .type = Action::Type::kPresenceTick}, 1);
  if (!o_.jobs || *o_.jobs > 0) {
    Push(Action{.at = BudgetTime(), .type = Action::Type::kPublish, .live = true}, 0);
  }
}

void Fleet::Impl::Push(Action a, std::int64_t events) {
  a.seq = seq_++;
  if (a.live) ++live_;
  if (a.job != 0) ++jobs_.at(a.job).pending;
  scheduled_ += events;
  heap_.push_back(std::move(a));
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void Fleet::Impl::PushEmit(Micros at, SimEvent::Kind kind, std::string tag, Value data, std::uint64_t job) {
  Push(Action{.at = at, .type = Action::Type::kEmit, .live = true, .job = job, .kind = kind, .tag = std::move(tag),
              .data = std::move(data)},
       1);
}

void Fleet::Impl::Ready(Micros at, SimEvent::Kind kind, std::string tag, Value data) {
  // Salt's event layer sets _stamp on the dict it sends (spec 9.2): appended,
  // or replaced in place when the dict already has one (a runner's ret).
  data.Set("_stamp", FormatStamp(at));
  ready_.push_back(SimEvent{.kind = kind, .tag = std::move(tag), .data = std::move(data), .at = at});
}

std::pair<std::string, Micros> Fleet::Impl::NextJid(Micros t) {
  if (last_jid_ && t <= *last_jid_) t = *last_jid_ + microseconds(1);
  last_jid_ = t;
  return {FormatJid(t), t};
}

Micros Fleet::Impl::BudgetTime() const {
  return o_.start + Seconds(o_.speed * static_cast<double>(scheduled_) / o_.layout_rate);
}

void Fleet::Impl::Release(std::uint64_t key) {
  auto it = jobs_.find(key);
  if (it != jobs_.end() && --it->second.pending == 0) jobs_.erase(it);
}

std::optional<SimEvent> Fleet::Impl::Next() {
  while (true) {
    if (!ready_.empty()) {
      SimEvent e = std::move(ready_.front());
      ready_.pop_front();
      return e;
    }
    if (ended_) return std::nullopt;
    if (live_ == 0 || heap_.empty()) {
      ended_ = true;
      heap_.clear();
      jobs_.clear();
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Action a = std::move(heap_.back());
    heap_.pop_back();
    if (a.live) --live_;
    Process(a);
    if (a.job != 0) Release(a.job);
  }
}

void Fleet::Impl::Process(Action& a) {
  switch (a.type) {
    case Action::Type::kEmit: Ready(a.at, a.kind, std::move(a.tag), std::move(a.data)); break;
    case Action::Type::kPublish: Publish(a.at); break;
    case Action::Type::kReturn: DoReturn(a); break;
    case Action::Type::kPoll: DoPoll(a); break;
    case Action::Type::kFindJobReturn: DoFindJobReturn(a); break;
    case Action::Type::kRunnerReturn: DoRunnerReturn(a); break;
    case Action::Type::kMinionUp: DoMinionUp(a); break;
    case Action::Type::kMinionDown: up_[a.index] = 0; break;
    case Action::Type::kPresenceTick: DoPresenceTick(a.at); break;
  }
}

void Fleet::Impl::Publish(Micros t) {
  if (!publishing_ || (o_.publish_until && t >= *o_.publish_until)) return;
  // Each command draws from its own stream, numbered in publish order, so what
  // the k-th job is does not depend on how it interleaves with other events
  // (the layout rate or the clock speed); only jobs_rng_'s fixed two draws per
  // publish and the presence stream are shared.
  const std::uint64_t number = static_cast<std::uint64_t>(published_);
  if (jobs_rng_.Chance(o_.runner_rate)) StartRunner(t, DeriveSeed(jobs_seed_, 2 * number + 1));
  StartSaltJob(t, DeriveSeed(jobs_seed_, 2 * number));
  ++published_;
  if (!o_.jobs || published_ < *o_.jobs) {
    // Up to one event's worth of jitter, so jids do not fall on round budget times.
    const double jitter_us = jobs_rng_.Uniform() * o_.speed * 1e6 / o_.layout_rate;
    const Micros next = BudgetTime() + microseconds(static_cast<std::int64_t>(jitter_us));
    Push(Action{.at = std::max(t + microseconds(1), next), .type = Action::Type::kPublish, .live = true}, 0);
  }
}

void Fleet::Impl::StartRunner(Micros t, std::uint64_t seed) {
  static constexpr std::array<std::pair<std::string_view, double>, 4> kRunners{
      {{"manage.status", 0.3}, {"manage.up", 0.2}, {"jobs.active", 0.25}, {"jobs.list_jobs", 0.25}}};
  static constexpr std::array<std::pair<std::string_view, double>, 3> kUsers{
      {{"root", 0.5}, {"sudo_alice", 0.3}, {"sudo_bob", 0.2}}};
  Rng rng(seed);
  const std::uint64_t key = next_key_++;
  Job& job = jobs_[key];
  job.type = Job::Type::kRunner;
  job.seed = seed;
  job.runner = std::string(Pick(rng, kRunners));
  job.user = std::string(Pick(rng, kUsers));
  const auto [jid, jt] = NextJid(t);
  job.jid = jid;
  job.published = jt;
  // Salt's RunnerClient data (spec 3.3): fun, jid, user, fun_args; the event
  // layer adds _stamp to this same dict, and the ret event reuses it.
  const Value data = Value::Map({{"fun", "runner." + job.runner},
                                 {"jid", jid},
                                 {"user", job.user},
                                 {"fun_args", Value::EmptyList()}});
  PushEmit(jt + microseconds(rng.Between(100, 300)), SimEvent::Kind::kRunnerNew, "salt/run/" + jid + "/new", data,
           key);
  Push(Action{.at = jt + Seconds(rng.LogNormal(0.6, 0.6)),
              .type = Action::Type::kRunnerReturn,
              .live = true,
              .job = key},
       1);
}

void Fleet::Impl::StartSaltJob(Micros t, std::uint64_t seed) {
  static constexpr std::array<std::pair<std::string_view, double>, 4> kUsers{
      {{"root", 0.4}, {"sudo_alice", 0.25}, {"sudo_bob", 0.2}, {kApiUser, 0.15}}};
  static constexpr std::array<double, 4> kFunctionWeights{0.30, 0.30, 0.15, 0.25};
  Rng rng(seed);
  const std::uint64_t key = next_key_++;
  Job& job = jobs_[key];
  job.type = Job::Type::kSalt;
  job.seed = seed;
  std::vector<double> weights;
  for (Function f : o_.functions) weights.push_back(kFunctionWeights[static_cast<std::size_t>(f)]);
  job.fun = o_.functions[rng.Weighted(weights)];
  job.fun_name = std::string(FunctionName(job.fun));
  job.user = std::string(Pick(rng, kUsers));

  // Targeting, as Salt resolves it against the accepted keys: a down minion
  // is still matched (and will not return).
  const std::size_t n = minions_.size();
  const std::size_t roles_present = std::min(Roles().size(), n);
  std::vector<std::size_t> targets;
  ValueList missing;
  std::size_t role_of_target = Roles().size();  // a single role, when the target has one
  const double pick = rng.Uniform();
  if (pick < 0.40) {
    job.tgt = "*";
    job.tgt_type = "glob";
    for (std::size_t i = 0; i < n; ++i) targets.push_back(i);
  } else if (pick < 0.70) {
    role_of_target = rng.Below(roles_present);
    job.tgt = std::string(Roles()[role_of_target].name) + "-*";
    job.tgt_type = "glob";
    for (std::size_t i = role_of_target; i < n; i += Roles().size()) targets.push_back(i);
  } else if (pick < 0.90) {
    const std::size_t k = 1 + rng.Below(std::min<std::size_t>(5, n));
    while (targets.size() < k) {
      const std::size_t i = rng.Below(n);
      if (std::find(targets.begin(), targets.end(), i) == targets.end()) targets.push_back(i);
    }
    ValueList tgt;
    for (std::size_t i : targets) tgt.emplace_back(ids_[i]);
    if (rng.Chance(0.2)) {
      // A decommissioned host still in someone's list: Salt reports it as missing.
      const std::size_t role = rng.Below(roles_present);
      const std::size_t per_role = (n + Roles().size() - 1) / Roles().size();
      std::string number = std::to_string(per_role + 1 + rng.Below(50));
      const std::size_t width = std::max<std::size_t>(4, std::to_string(per_role).size());
      if (number.size() < width) number.insert(0, width - number.size(), '0');
      std::string id = std::string(Roles()[role].name) + "-" + number + "." + std::string(kDomain);
      tgt.emplace_back(id);
      missing.emplace_back(std::move(id));
    }
    job.tgt = Value(std::move(tgt));
    job.tgt_type = "list";
    if (targets.size() == 1) role_of_target = minions_[targets[0]].role;
  } else {
    const std::size_t i = rng.Below(n);
    targets.push_back(i);
    job.tgt = ids_[i];
    job.tgt_type = "glob";
    role_of_target = minions_[i].role;
  }

  switch (job.fun) {
    case Function::kTestPing:
    case Function::kGrainsItems: break;
    case Function::kCmdRun:
      job.command = rng.Below(Commands().size());
      job.arg.emplace_back(std::string(Commands()[job.command].command));
      break;
    case Function::kStateApply:
      if (rng.Chance(0.5)) {
        job.sls = role_of_target < Roles().size() ? std::string(Roles()[role_of_target].sls) : "common";
        job.arg.emplace_back(job.sls);
      }
      break;
  }
  if (rng.Chance(0.05)) job.metadata = Value::Map({{"ticket", "OPS-" + std::to_string(rng.Between(1000, 9999))}});

  const auto [jid, jt] = NextJid(t);
  job.jid = jid;
  job.published = jt;
  const Value minions = IdList(ids_, targets);
  // Salt's _prep_pub (spec 3.1): the bare-jid event, then salt/job/<jid>/new.
  const Micros bare_at = jt + microseconds(rng.Between(100, 300));
  PushEmit(bare_at, SimEvent::Kind::kPublish, jid, Value::Map({{"minions", minions}}), key);
  PushEmit(bare_at + microseconds(rng.Between(30, 80)), SimEvent::Kind::kNew, "salt/job/" + jid + "/new",
           Value::Map({{"jid", jid},
                       {"tgt_type", job.tgt_type},
                       {"tgt", job.tgt},
                       {"user", job.user},
                       {"fun", job.fun_name},
                       {"arg", Value(job.arg)},
                       {"minions", minions},
                       {"missing", Value(std::move(missing))}}),
           key);

  job.targets.reserve(targets.size());
  for (std::size_t idx = 0; idx < targets.size(); ++idx) {
    const std::size_t m = targets[idx];
    Delivery d{.minion = m, .epoch = epoch_[m], .delivered = up_[m] != 0};
    d.seed = DeriveSeed(seed, m);
    d.pid = rng.Between(1000, 65000);
    if (job.fun == Function::kCmdRun || job.fun == Function::kStateApply) d.fail = rng.Chance(o_.fail_rate);
    if (job.fun == Function::kStateApply) d.size = DrawReturnSize(rng);
    if (d.delivered) d.return_at = jt + Seconds(ReturnDelay(job, minions_[m], d, rng));
    job.targets.push_back(d);
  }
  for (std::size_t idx = 0; idx < job.targets.size(); ++idx) {
    if (!job.targets[idx].delivered) continue;
    Push(Action{.at = job.targets[idx].return_at, .type = Action::Type::kReturn, .live = true, .job = key, .index = idx},
         1);
  }
  // salt-api clients publish with local_async and do not wait, so nothing
  // polls their jobs; the salt CLI waits and polls.
  if (job.user != kApiUser) {
    Push(Action{.at = jt + kTimeout + microseconds(rng.Between(1000, 30000)), .type = Action::Type::kPoll,
                .live = true, .job = key},
         0);
  }
  recent_.push_back({jid, job.fun_name, job.arg, job.tgt, job.tgt_type, job.user});
  if (recent_.size() > kRecentJobs) recent_.pop_front();
}

double Fleet::Impl::ReturnDelay(const Job& job, const MinionProfile& m, const Delivery& d, Rng& rng) const {
  double s = 0;
  switch (job.fun) {
    case Function::kTestPing: s = 0.015 + rng.LogNormal(0.03, 0.6) * m.slowness; break;
    case Function::kGrainsItems: s = 0.05 + rng.LogNormal(0.2, 0.5) * m.slowness; break;
    case Function::kCmdRun:
      s = Commands()[job.command].run_s * rng.Uniform(0.95, 1.1) + 0.02 + rng.LogNormal(0.06, 0.6) * m.slowness;
      break;
    case Function::kStateApply:
      s = 1.0 + static_cast<double>(EstimatedStates(d.size)) * 0.12 * rng.LogNormal(1.0, 0.4) * m.slowness;
      if (rng.Chance(0.05)) s += rng.LogNormal(30, 0.3);  // a package upgrade
      break;
  }
  // Now and then a minion is busy or swapping and answers late.
  if (rng.Chance(0.01)) s += rng.LogNormal(8, 0.5);
  return s;
}

std::int64_t Fleet::Impl::DrawReturnSize(Rng& rng) const {
  const ReturnSizes& r = o_.return_size;
  constexpr double kZ99 = 2.3263478740408408;  // the 99th percentile of the standard normal
  const double z = rng.Normal();
  const auto median = static_cast<double>(r.median);
  const double sigma = z < 0 ? std::log(median / static_cast<double>(r.small)) / kZ99
                             : std::log(static_cast<double>(r.large) / median) / kZ99;
  const auto size = static_cast<std::int64_t>(std::llround(median * std::exp(sigma * z)));
  return std::clamp(size, r.small, r.large);
}

Value Fleet::Impl::MinionReturn(const Job& job, const Delivery& d, Micros now) {
  const MinionProfile& m = minions_[d.minion];
  Rng rng(d.seed);
  Value ret;
  int retcode = 0;
  switch (job.fun) {
    case Function::kTestPing: ret = true; break;
    case Function::kGrainsItems: ret = Grains(m); break;
    case Function::kCmdRun: {
      CommandResult r = RunCommand(job.command, m, now, d.fail, rng);
      ret = std::move(r.output);
      retcode = r.retcode;
      break;
    }
    case Function::kStateApply: {
      const Micros begin = job.published + (now - job.published) / 20;
      ret = Highstate(m, job.sls, d.size, begin, now, d.fail, rng);
      if (d.fail) retcode = 2;  // salt.defaults.exitcodes.EX_STATE_FAILURE
      break;
    }
  }
  // The minion's return load (spec 3.2); success is retcode == 0 (Salt 2017.7+).
  ValueMap load;
  load.emplace_back("cmd", "_return");
  load.emplace_back("id", m.id);
  load.emplace_back("jid", job.jid);
  load.emplace_back("fun", job.fun_name);
  load.emplace_back("fun_args", Value(job.arg));
  load.emplace_back("return", std::move(ret));
  load.emplace_back("retcode", retcode);
  load.emplace_back("success", retcode == 0);
  if (job.fun == Function::kStateApply) load.emplace_back("out", "highstate");
  if (!job.metadata.is_null()) load.emplace_back("metadata", job.metadata);
  return Value(std::move(load));
}

void Fleet::Impl::DoReturn(Action& a) {
  Job& job = jobs_.at(a.job);
  Delivery& d = job.targets[a.index];
  // A minion that went down after the job reached it lost the job (and one
  // that came back is a new process with no memory of it).
  if (up_[d.minion] == 0 || epoch_[d.minion] != d.epoch) return;
  d.returned = true;
  Ready(a.at, SimEvent::Kind::kReturn, "salt/job/" + job.jid + "/ret/" + ids_[d.minion],
        MinionReturn(job, d, a.at));
}

void Fleet::Impl::DoPoll(Action& a) {
  Job& job = jobs_.at(a.job);
  std::vector<std::size_t> candidates;
  if (!job.polled) {
    for (std::size_t i = 0; i < job.targets.size(); ++i) {
      if (!job.targets[i].returned) candidates.push_back(i);
    }
  } else {
    for (std::size_t i : job.polling) {
      if (!job.targets[i].returned) candidates.push_back(i);
    }
  }
  job.polled = true;
  job.polling.clear();
  if (candidates.empty()) return;

  // saltutil.find_job to the minions that have not returned (tgt_type list,
  // as LocalClient.gather_job_info sends it).
  const std::uint64_t key = next_key_++;
  Job& poll = jobs_[key];
  Job& parent = job;  // (references into an unordered_map survive the insertion)
  Rng rng(DeriveSeed(parent.seed, HashLabel("find_job") + parent.polls++));
  poll.type = Job::Type::kFindJob;
  poll.fun_name = "saltutil.find_job";
  poll.user = parent.user;
  poll.tgt_type = "list";
  poll.parent = a.job;
  poll.arg.emplace_back(parent.jid);
  const auto [jid, jt] = NextJid(a.at);
  poll.jid = jid;
  poll.published = jt;
  std::vector<std::size_t> minion_idx;
  for (std::size_t i : candidates) minion_idx.push_back(parent.targets[i].minion);
  const Value minions = IdList(ids_, minion_idx);
  poll.tgt = minions;
  const Micros bare_at = jt + microseconds(rng.Between(100, 300));
  PushEmit(bare_at, SimEvent::Kind::kPublish, jid, Value::Map({{"minions", minions}}), key);
  PushEmit(bare_at + microseconds(rng.Between(30, 80)), SimEvent::Kind::kNew, "salt/job/" + jid + "/new",
           Value::Map({{"jid", jid},
                       {"tgt_type", "list"},
                       {"tgt", minions},
                       {"user", poll.user},
                       {"fun", poll.fun_name},
                       {"arg", Value(poll.arg)},
                       {"minions", minions},
                       {"missing", Value::EmptyList()}}),
           key);
  for (std::size_t i : candidates) {
    const std::size_t m = parent.targets[i].minion;
    Delivery d{.minion = m, .parent_index = i, .epoch = epoch_[m], .delivered = up_[m] != 0};
    poll.targets.push_back(d);
    if (!d.delivered) continue;  // down: no answer, and Salt stops asking it
    parent.polling.push_back(i);
    Push(Action{.at = jt + microseconds(rng.Between(10000, 80000)),
                .type = Action::Type::kFindJobReturn,
                .live = true,
                .job = key,
                .index = poll.targets.size() - 1},
         1);
    ++parent.pending;  // the answer reads the polled job
  }
  if (!parent.polling.empty()) {
    Push(Action{.at = jt + kTimeout + microseconds(rng.Between(50000, 150000)), .type = Action::Type::kPoll,
                .live = true, .job = a.job},
         0);
  }
}

void Fleet::Impl::DoFindJobReturn(Action& a) {
  Job& poll = jobs_.at(a.job);
  Delivery& d = poll.targets[a.index];
  Job& parent = jobs_.at(poll.parent);
  const Delivery& pd = parent.targets[d.parent_index];
  const std::size_t m = d.minion;
  auto stop_polling = [&] {
    auto& p = parent.polling;
    p.erase(std::remove(p.begin(), p.end(), d.parent_index), p.end());
  };
  const bool answers = up_[m] != 0;
  const bool running = answers && pd.delivered && !pd.returned && epoch_[m] == pd.epoch && pd.return_at > a.at;
  if (!running) stop_polling();
  if (answers) {
    // A minion still running the job answers with the job's data and the
    // pid of the process running it (the fixture's 2014 shape); one that is
    // not answers {}.
    Value info = Value::EmptyMap();
    if (running) {
      info = Value::Map({{"jid", parent.jid},
                         {"pid", static_cast<long long>(pd.pid)},
                         {"fun", parent.fun_name},
                         {"arg", Value(parent.arg)},
                         {"tgt", parent.tgt},
                         {"tgt_type", parent.tgt_type},
                         {"user", parent.user},
                         {"ret", ""}});
    }
    d.returned = true;
    Ready(a.at, SimEvent::Kind::kReturn, "salt/job/" + poll.jid + "/ret/" + ids_[m],
          Value::Map({{"cmd", "_return"},
                      {"id", ids_[m]},
                      {"jid", poll.jid},
                      {"fun", poll.fun_name},
                      {"fun_args", Value(poll.arg)},
                      {"return", std::move(info)},
                      {"retcode", 0},
                      {"success", true}}));
  }
  Release(poll.parent);
}

Value Fleet::Impl::RunnerReturn(const Job& job, Micros now) const {
  auto sorted_ids = [&](bool want_up) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < ids_.size(); ++i) {
      if ((up_[i] != 0) == want_up) out.push_back(ids_[i]);
    }
    std::sort(out.begin(), out.end());
    ValueList list;
    for (auto& s : out) list.emplace_back(std::move(s));
    return Value(std::move(list));
  };
  if (job.runner == "manage.status") return Value::Map({{"up", sorted_ids(true)}, {"down", sorted_ids(false)}});
  if (job.runner == "manage.up") return sorted_ids(true);
  if (job.runner == "jobs.list_jobs") {
    ValueMap out;
    for (const RecentJob& r : recent_) {
      out.emplace_back(r.jid, Value::Map({{"Function", r.fun},
                                          {"Arguments", Value(r.arg)},
                                          {"Target", r.tgt},
                                          {"Target-type", r.tgt_type},
                                          {"User", r.user},
                                          {"StartTime", JidToTime(r.jid)}}));
    }
    return Value(std::move(out));
  }
  // jobs.active: the salt jobs some minion is still running, newest last.
  std::vector<std::uint64_t> keys;
  for (const auto& [key, j] : jobs_) {
    if (j.type == Job::Type::kSalt) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  ValueMap out;
  for (std::uint64_t key : keys) {
    const Job& j = jobs_.at(key);
    ValueList running, returned;
    for (const Delivery& d : j.targets) {
      if (d.returned) {
        returned.emplace_back(ids_[d.minion]);
      } else if (d.delivered && up_[d.minion] != 0 && epoch_[d.minion] == d.epoch && d.return_at > now) {
        running.push_back(Value::Map({{ids_[d.minion], static_cast<long long>(d.pid)}}));
      }
    }
    if (running.empty()) continue;
    out.emplace_back(j.jid, Value::Map({{"Function", j.fun_name},
                                        {"Arguments", Value(j.arg)},
                                        {"Target", j.tgt},
                                        {"Target-type", j.tgt_type},
                                        {"User", j.user},
                                        {"Returned", Value(std::move(returned))},
                                        {"Running", Value(std::move(running))},
                                        {"StartTime", JidToTime(j.jid)}}));
  }
  if (out.size() > 10) out.erase(out.begin(), out.end() - 10);
  return Value(std::move(out));
}

void Fleet::Impl::DoRunnerReturn(Action& a) {
  const Job& job = jobs_.at(a.job);
  // The runner's data dict again, its _stamp (still in place from the new
  // event) replaced, then return and success (spec 9.6).
  Ready(a.at, SimEvent::Kind::kRunnerReturn, "salt/run/" + job.jid + "/ret",
        Value::Map({{"fun", "runner." + job.runner},
                    {"jid", job.jid},
                    {"user", job.user},
                    {"fun_args", Value::EmptyList()},
                    {"_stamp", ""},
                    {"return", RunnerReturn(job, a.at)},
                    {"success", true}}));
}

void Fleet::Impl::DoMinionUp(Action& a) {
  const std::size_t i = a.index;
  up_[i] = 1;
  ++epoch_[i];
  const MinionProfile& m = minions_[i];
  Ready(a.at, SimEvent::Kind::kAuth, "salt/auth",
        Value::Map({{"result", true}, {"act", "accept"}, {"id", m.id}, {"pub", PublicKeyPem(m)}}));
  Rng rng(DeriveSeed(m.seed, epoch_[i] + 100));
  const Micros started = a.at + Seconds(rng.Uniform(0.5, 2.5));
  const std::string tag = "salt/minion/" + m.id + "/start";
  // Fired by the minion as a _minion_event; the master re-fires the whole load.
  Push(Action{.at = started,
              .type = Action::Type::kEmit,
              .live = a.live,
              .kind = SimEvent::Kind::kMinionStart,
              .tag = tag,
              .data = Value::Map({{"cmd", "_minion_event"},
                                  {"data", "Minion " + m.id + " started at " + AscTime(started)},
                                  {"id", m.id},
                                  {"pretag", nullptr},
                                  {"tag", tag}})},
       0);
}

void Fleet::Impl::DoPresenceTick(Micros t) {
  // Salt's Maintenance.handle_presence: change (when the set changed), then present.
  ValueList present, gained, lost;
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    if (up_[i] != 0) present.emplace_back(ids_[i]);
    if (up_[i] != 0 && reported_[i] == 0) gained.emplace_back(ids_[i]);
    if (up_[i] == 0 && reported_[i] != 0) lost.emplace_back(ids_[i]);
  }
  reported_ = up_;
  if (!gained.empty() || !lost.empty()) {
    Ready(t, SimEvent::Kind::kPresenceChange, "salt/presence/change",
          Value::Map({{"new", Value(std::move(gained))}, {"lost", Value(std::move(lost))}}));
  }
  Ready(t, SimEvent::Kind::kPresence, "salt/presence/present", Value::Map({{"present", Value(std::move(present))}}));

  // Who goes down and who comes back before the next tick.
  const auto interval = static_cast<std::uint64_t>(kPresenceInterval.count());
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    const bool up = up_[i] != 0;
    if (up ? (down_chance_ > 0 && presence_rng_.Chance(down_chance_))
           : (up_chance_ > 0 && presence_rng_.Chance(up_chance_))) {
      Push(Action{.at = t + microseconds(static_cast<std::int64_t>(presence_rng_.Below(interval))),
                  .type = up ? Action::Type::kMinionDown : Action::Type::kMinionUp,
                  .index = i},
           up ? 0 : 2);
    }
  }
  Push(Action{.at = t + kPresenceInterval, .type = Action::Type::kPresenceTick}, 1);
}

Fleet::Fleet(FleetOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Fleet::~Fleet() = default;
Fleet::Fleet(Fleet&&) noexcept = default;
Fleet& Fleet::operator=(Fleet&&) noexcept = default;

std::optional<SimEvent> Fleet::Next() { return impl_->Next(); }

void Fleet::StopPublishing() { impl_->StopPublishing(); }

const std::vector<std::string>& Fleet::minion_ids() const { return impl_->ids(); }

}  // namespace brine::sim
