#include "brine/sim/cli.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brine/config/bus_endpoints.h"
#include "brine/config/config_error.h"
#include "brine/config/master_config.h"
#include "brine/core/json.h"
#include "brine/sim/fleet.h"
#include "brine/sim/tally.h"
#include "brine/wire/codec.h"
#include "file_sink.h"
#include "pacer.h"
#include "modern_bus_sink.h"
#include "push_sink.h"

namespace brine::sim {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// With --rate unlimited there is no real pace to lay virtual time out by, so
// it is laid out as if sent at this rate (and stays the same run to run).
constexpr double kUnlimitedLayoutRate = 10000;
constexpr std::int64_t kDefaultJobs = 100;

constexpr const char* kUsage =
    "usage: brine-sim [options]\n"
    "\n"
    "Plays a Salt master with N minions: pushes the events its bus would carry (jobs and their\n"
    "returns, saltutil.find_job polls, salt/auth, minion start, presence, runner jobs) onto a\n"
    "running brine-master's bus, then prints a one-line summary of what it sent.\n"
    "\n"
    "Where the events go:\n"
    "  -c, --config-dir DIR     the master config to read brine.sock_dir and ipc_mode from\n"
    "                           (default /etc/salt)\n"
    "  --pull ENDPOINT          push to this ZeroMQ endpoint instead (ipc://PATH, tcp://HOST:PORT)\n"
    "  --modern-bus PATH        play a modern Salt master's publisher on the Unix socket PATH\n"
    "                           (<sock_dir>/master_event_pub.ipc) for an attached brine-master;\n"
    "                           with -c and brine.bus: attach, the config's path is used\n"
    "  --bus-framing plain|prefixed  the modern bus's framing (default plain, as 3006.0-3006.19,\n"
    "                           3007 and 3008 send; prefixed as a late 3006.x)\n"
    "  --dry-run FILE           write the events to FILE instead of sending them (no pacing)\n"
    "  --dry-run-format FORMAT  jsonl ({\"tag\": ..., \"data\": ...} per line, the default) or frames\n"
    "                           (each frame as sent, after a 4-byte big-endian length)\n"
    "  --framing new|old        tag \"\\n\\n\" msgpack (default), or the 2014 form with tags padded\n"
    "                           to 20 bytes with '|'\n"
    "\n"
    "The fleet:\n"
    "  --minions N              fleet size (default 100)\n"
    "  --jobs N                 salt jobs to publish (default 100, or no limit with --duration);\n"
    "                           find_job polls and runner jobs come on top\n"
    "  --duration SECONDS       publish no job after SECONDS (the jobs in flight finish)\n"
    "  --rate EVENTS_PER_S      send pace, or 'unlimited' (default 1000)\n"
    "  --clock START[,SPEED]    virtual clock: START an ISO UTC time (2024-01-01T00:00:00) or 'now'\n"
    "                           (default), SPEED virtual seconds per real second (default 1);\n"
    "                           jids and _stamp come from it\n"
    "  --seed N                 random seed (default 1): the same seed and options give the same\n"
    "                           events, byte for byte (with a fixed --clock START)\n"
    "  --missing-rate F         share of the fleet that is down at any time (default 0.02)\n"
    "  --fail-rate F            share of cmd.run and state.apply returns that fail (default 0.05)\n"
    "  --runner-rate F          runner jobs per salt job (default 0.1)\n"
    "  --return-size S,M,L      state.apply return sizes in bytes: smallest, median, largest\n"
    "                           (log-normal, 1st and 99th percentiles at S and L; default\n"
    "                           300,4000,250000); one number: every return that size\n"
    "  --functions LIST         what operators run, comma-separated, from test.ping, cmd.run,\n"
    "                           grains.items, state.apply (default all four)\n"
    "\n"
    "Output:\n"
    "  --summary-json           print the summary as one JSON object\n"
    "  --progress               show progress on stderr (events sent, rate, virtual time); the\n"
    "                           default when stderr is a terminal\n"
    "  -h, --help               this text\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CliOptions {
  std::optional<std::filesystem::path> config_dir;
  std::optional<std::string> pull;
  std::optional<std::filesystem::path> modern_bus;
  wire::StreamFraming bus_framing = wire::StreamFraming::kPlain;
  std::optional<std::filesystem::path> dry_run;
  DryRunFormat dry_run_format = DryRunFormat::kJsonl;
  wire::Framing framing = wire::Framing::kNew;
  std::int64_t minions = 100;
  std::optional<std::int64_t> jobs;
  std::optional<double> duration_s;
  std::optional<double> rate = 1000;  // nullopt: unlimited
  std::optional<Micros> start;        // nullopt: now
  double speed = 1;
  std::uint64_t seed = 1;
  double missing_rate = 0.02;
  double fail_rate = 0.05;
  double runner_rate = 0.1;
  ReturnSizes return_size;
  std::vector<Function> functions;
  bool summary_json = false;
  bool progress = false;
  bool help = false;
};

std::int64_t ParseInt(const std::string& opt, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
    throw UsageError(opt + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got '" + text + "'");
  }
  return v;
}

enum class Bound { kInclusive, kPositive };

// A finite number in [lo, hi] (kPositive: above 0 instead of from lo).
double ParseDouble(const std::string& opt, const std::string& text, double lo, double hi, Bound bound,
                   const char* what) {
  char* end = nullptr;
  errno = 0;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  const bool ok = !text.empty() && end == text.c_str() + text.size() && errno == 0 && std::isfinite(v) && v <= hi &&
                  (bound == Bound::kPositive ? v > 0 : v >= lo);
  if (!ok) throw UsageError(opt + ": expected " + what + ", got '" + text + "'");
  return v;
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = text.find(sep, pos);
    out.push_back(text.substr(pos, next - pos));
    if (next == std::string::npos) return out;
    pos = next + 1;
  }
}

Micros ParseStart(const std::string& text) {
  std::string t = text;
  if (t.ends_with("Z")) t.pop_back();
  else if (t.ends_with("+00:00")) t.resize(t.size() - 6);
  if (t.size() == 10) t += "T00:00:00";
  if (auto parsed = ParseStamp(t)) return *parsed;
  throw UsageError("--clock: expected START[,SPEED] with START an ISO UTC time such as 2024-01-01T00:00:00 or 'now', "
                   "got '" + text + "'");
}

CliOptions ParseArgs(int argc, char** argv) {
  CliOptions o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i];
    std::optional<std::string> inline_value;
    if (opt.starts_with("--")) {
      if (const auto eq = opt.find('='); eq != std::string::npos) {
        inline_value = opt.substr(eq + 1);
        opt.resize(eq);
      }
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw UsageError(opt + ": needs a value");
      return args[++i];
    };
    if (opt == "-h" || opt == "--help") {
      o.help = true;
    } else if (opt == "-c" || opt == "--config-dir") {
      o.config_dir = value();
    } else if (opt == "--pull") {
      o.pull = value();
      if (o.pull->empty()) throw UsageError("--pull: expected a ZeroMQ endpoint, got ''");
    } else if (opt == "--modern-bus") {
      o.modern_bus = value();
      if (o.modern_bus->empty()) throw UsageError("--modern-bus: expected a socket path, got ''");
    } else if (opt == "--bus-framing") {
      const std::string v = value();
      const auto framing = wire::ParseFramingName(v);
      if (!framing) throw UsageError("--bus-framing: expected plain or prefixed, got '" + v + "'");
      o.bus_framing = *framing;
    } else if (opt == "--dry-run") {
      o.dry_run = value();
      if (o.dry_run->empty()) throw UsageError("--dry-run: expected a file name, got ''");
    } else if (opt == "--dry-run-format") {
      const std::string v = value();
      if (v == "jsonl") o.dry_run_format = DryRunFormat::kJsonl;
      else if (v == "frames") o.dry_run_format = DryRunFormat::kFrames;
      else throw UsageError("--dry-run-format: expected jsonl or frames, got '" + v + "'");
    } else if (opt == "--framing") {
      const std::string v = value();
      if (v == "new") o.framing = wire::Framing::kNew;
      else if (v == "old") o.framing = wire::Framing::kOld;
      else throw UsageError("--framing: expected new or old, got '" + v + "'");
    } else if (opt == "--minions") {
      o.minions = ParseInt(opt, value(), 1, 1000000);
    } else if (opt == "--jobs") {
      o.jobs = ParseInt(opt, value(), 0, std::int64_t{1} << 40);
    } else if (opt == "--duration") {
      o.duration_s = ParseDouble(opt, value(), 0, 1e9, Bound::kPositive, "a positive number of seconds");
    } else if (opt == "--rate") {
      const std::string v = value();
      if (v == "unlimited") o.rate.reset();
      else o.rate = ParseDouble(opt, v, 0, 1e9, Bound::kPositive, "a positive number of events per second, or 'unlimited'");
    } else if (opt == "--clock") {
      const auto parts = Split(value(), ',');
      if (parts.size() > 2) throw UsageError("--clock: expected START[,SPEED]");
      if (parts[0] != "now") o.start = ParseStart(parts[0]);
      if (parts.size() == 2) o.speed = ParseDouble(opt, parts[1], 0, 1e9, Bound::kPositive, "a positive SPEED after the comma");
    } else if (opt == "--seed") {
      const std::string v = value();
      std::uint64_t seed = 0;
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
      if (ec != std::errc() || p != v.data() + v.size()) {
        throw UsageError("--seed: expected a non-negative integer, got '" + v + "'");
      }
      o.seed = seed;
    } else if (opt == "--missing-rate") {
      o.missing_rate = ParseDouble(opt, value(), 0, 1, Bound::kInclusive, "a number from 0 to 1");
    } else if (opt == "--fail-rate") {
      o.fail_rate = ParseDouble(opt, value(), 0, 1, Bound::kInclusive, "a number from 0 to 1");
    } else if (opt == "--runner-rate") {
      o.runner_rate = ParseDouble(opt, value(), 0, 1, Bound::kInclusive, "a number from 0 to 1");
    } else if (opt == "--return-size") {
      const std::string v = value();
      const auto parts = Split(v, ',');
      constexpr std::int64_t kMax = 64 << 20;
      if (parts.size() == 1) {
        const auto n = ParseInt(opt, parts[0], 1, kMax);
        o.return_size = {n, n, n};
      } else if (parts.size() == 3) {
        o.return_size = {ParseInt(opt, parts[0], 1, kMax), ParseInt(opt, parts[1], 1, kMax),
                         ParseInt(opt, parts[2], 1, kMax)};
        if (o.return_size.small > o.return_size.median || o.return_size.median > o.return_size.large) {
          throw UsageError("--return-size: expected SMALL <= MEDIAN <= LARGE, got '" + v + "'");
        }
      } else {
        throw UsageError("--return-size: expected SMALL,MEDIAN,LARGE (bytes) or one size, got '" + v + "'");
      }
    } else if (opt == "--functions") {
      o.functions.clear();
      for (const auto& name : Split(value(), ',')) {
        const auto fun = FunctionByName(name);
        if (!fun) {
          throw UsageError("--functions: expected names from test.ping, cmd.run, grains.items, state.apply, got '" +
                           name + "'");
        }
        if (std::find(o.functions.begin(), o.functions.end(), *fun) == o.functions.end()) o.functions.push_back(*fun);
      }
    } else if (opt == "--progress") {
      if (inline_value) throw UsageError("--progress takes no value");
      o.progress = true;
    } else if (opt == "--summary-json") {
      if (inline_value) throw UsageError("--summary-json takes no value");
      o.summary_json = true;
    } else if (opt.starts_with("-")) {
      throw UsageError("unknown option '" + opt + "'");
    } else {
      throw UsageError("unexpected argument '" + opt + "'");
    }
  }
  if (o.pull && o.config_dir) throw UsageError("give -c CONFIG_DIR or --pull ENDPOINT, not both");
  return o;
}

std::atomic<int> g_signal{0};

extern "C" void OnSignal(int sig) { g_signal.store(sig); }

// Installs the SIGINT/SIGTERM flag for one run and puts the old handlers back.
class SignalScope {
 public:
  SignalScope() {
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void PrintSummary(std::ostream& out, const CliOptions& o, const Totals& t, double elapsed_s, const std::string& to,
                  const std::string& ended) {
  const double rate = elapsed_s > 0 ? static_cast<double>(t.events) / elapsed_s : 0.0;
  const std::string first = t.first ? FormatStamp(*t.first) : "";
  const std::string last = t.last ? FormatStamp(*t.last) : "";
  if (o.summary_json) {
    const Value v = Value::Map({{"events", static_cast<long long>(t.events)},
                                {"bytes", static_cast<long long>(t.bytes)},
                                {"jobs", static_cast<long long>(t.jobs)},
                                {"returns", static_cast<long long>(t.returns)},
                                {"failed", static_cast<long long>(t.failed)},
                                {"missing", static_cast<long long>(t.missing)},
                                {"find_job_polls", static_cast<long long>(t.find_job_polls)},
                                {"find_job_returns", static_cast<long long>(t.find_job_returns)},
                                {"find_job_missing", static_cast<long long>(t.find_job_missing)},
                                {"runner_jobs", static_cast<long long>(t.runner_jobs)},
                                {"elapsed_s", std::round(elapsed_s * 1000) / 1000},
                                {"events_per_s", std::round(rate * 10) / 10},
                                {"first_stamp", first},
                                {"last_stamp", last},
                                {"to", to},
                                {"dry_run", o.dry_run.has_value()},
                                {"ended", ended}});
    out << ToJson(v, JsonStyle::Python(-1)) << "\n";
    return;
  }
  out << "brine-sim: " << (o.dry_run ? "wrote " : "sent ") << t.events << " events ("
      << Fixed(static_cast<double>(t.bytes) / 1e6, 1) << " MB) to " << to << " in " << Fixed(elapsed_s, 2) << " s, "
      << Fixed(rate, 0) << " events/s: " << t.jobs << " jobs, " << t.returns << " returns (" << t.failed
      << " failed), " << t.missing << " missing minions, " << t.find_job_polls << " find_job polls ("
      << t.find_job_returns << " returns, " << t.find_job_missing << " missing), " << t.runner_jobs
      << " runner jobs; virtual time " << (first.empty() ? "-" : first) << " to " << (last.empty() ? "-" : last);
  if (ended != "stream") out << " (stopped: " << ended << ")";
  out << "\n";
}

// Jobs laid out older than the master's keep_jobs_seconds are archived and
// then deleted by its next retention pass, which looks like data loss.
void WarnIfRetentionDeletes(const CliOptions& o, const config::MasterConfig& cfg, std::ostream& err) {
  if (!o.start || cfg.keep_jobs_seconds <= 0) return;
  const auto cutoff = SystemClock().Now() - std::chrono::seconds(cfg.keep_jobs_seconds);
  if (*o.start >= cutoff) return;
  err << "brine-sim: warning: --clock starts at " << FormatStamp(*o.start) << ", older than the master's keep_jobs_seconds ("
      << cfg.keep_jobs_seconds << " s): its retention deletes these jobs at its next pass (every loop_interval, "
      << cfg.loop_interval_s << " s); raise keep_jobs_seconds (and brine.keep_events_seconds) or start later\n";
}

// One line, redrawn in place ("\r") at most twice a second, and ended with a
// newline when the run ends.
class Progress {
 public:
  Progress(bool on, std::ostream& err) : on_(on), err_(err), t0_(std::chrono::steady_clock::now()) {}

  void Update(const Tally& tally, bool final_line = false) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!final_line && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    const auto& t = tally.totals();
    const double s = std::chrono::duration<double>(now - t0_).count();
    err_ << "\rbrine-sim: " << t.events << " events, " << Fixed(s > 0 ? static_cast<double>(t.events) / s : 0, 0)
         << " events/s, virtual time " << (t.last ? FormatStamp(*t.last) : std::string("-"));
    if (final_line) err_ << "\n";
    err_.flush();
  }

 private:
  bool on_;
  std::ostream& err_;
  std::chrono::steady_clock::time_point t0_;
  std::chrono::steady_clock::time_point last_{};
};

int Run(const CliOptions& o, std::ostream& out, std::ostream& err) {
  FleetOptions fo;
  fo.start = o.start ? *o.start : SystemClock().Now();
  fo.speed = o.speed;
  fo.layout_rate = o.rate.value_or(kUnlimitedLayoutRate);
  fo.minions = o.minions;
  fo.jobs = o.jobs ? o.jobs : (o.duration_s ? std::nullopt : std::optional<std::int64_t>(kDefaultJobs));
  // A paced run stops publishing at the virtual time --duration reaches, so
  // its stream is the same every time; an unpaced one by the wall clock below.
  // Either way the jobs in flight then finish.
  if (o.duration_s && o.rate) {
    fo.publish_until =
        fo.start + std::chrono::microseconds(static_cast<std::int64_t>(std::llround(*o.duration_s * o.speed * 1e6)));
  }
  fo.seed = o.seed;
  fo.missing_rate = o.missing_rate;
  fo.fail_rate = o.fail_rate;
  fo.runner_rate = o.runner_rate;
  fo.return_size = o.return_size;
  if (!o.functions.empty()) fo.functions = o.functions;
  std::optional<Fleet> fleet;
  try {
    fleet.emplace(std::move(fo));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }

  std::unique_ptr<Sink> sink;
  try {
    if (o.dry_run) {
      sink = std::make_unique<FileSink>(*o.dry_run, o.dry_run_format);
    } else {
      std::string endpoint;
      std::optional<std::filesystem::path> modern = o.modern_bus;
      if (o.pull) {
        endpoint = *o.pull;
      } else if (!modern) {
        const auto cfg = config::LoadMasterConfig(o.config_dir.value_or(config::kDefaultConfigDir));
        endpoint = config::EndpointsFor(cfg).pull;
        // An attached brine-master reads the Salt master's bus: play that.
        if (cfg.brine.bus == config::MasterConfig::BusMode::kAttach && cfg.ipc_mode == config::MasterConfig::IpcMode::kIpc) {
          modern = config::SaltBusFor(cfg).pub_path;
        }
        WarnIfRetentionDeletes(o, cfg, err);
      }
      if (modern) {
        sink = std::make_unique<ModernBusSink>(*modern, ModernBusOptions{.framing = o.bus_framing});
      } else {
        sink = std::make_unique<PushSink>(endpoint, PushOptions{});
      }
    }
  } catch (const SinkError& e) {
    err << "brine-sim: " << e.what() << "\n";
    return kExitRuntime;
  }

  SignalScope signals;
  Pacer pacer(o.dry_run ? std::nullopt : o.rate);
  const bool wall_stop = o.duration_s && (!o.dry_run || !o.rate);
  const auto wall_limit = std::chrono::duration<double>(o.duration_s.value_or(0));
  Tally tally;
  std::string ended = "stream";
  int code = kExitOk;
  const auto t0 = std::chrono::steady_clock::now();
  Progress progress(o.progress || ::isatty(2) == 1, err);
  try {
    while (true) {
      if (g_signal.load() != 0) {
        ended = "signal";
        break;
      }
      if (wall_stop && ended == "stream" && std::chrono::steady_clock::now() - t0 >= wall_limit) {
        fleet->StopPublishing();
        ended = "duration";
      }
      std::optional<SimEvent> event = fleet->Next();
      if (!event) break;
      const std::string frame = wire::EncodeFrame(event->tag, event->data, o.framing);
      pacer.Wait();
      sink->Send(frame, *event);
      tally.Count(*event, frame.size());
      progress.Update(tally);
    }
    sink->Close();
  } catch (const SinkError& e) {
    err << "brine-sim: " << e.what() << "\n";
    code = kExitRuntime;
    ended = "error";
  }
  progress.Update(tally, true);
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  PrintSummary(out, o, tally.totals(), elapsed_s, sink->Describe(), ended);
  return code;
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  try {
    const CliOptions o = ParseArgs(argc, argv);
    if (o.help) {
      out << kUsage;
      return kExitOk;
    }
    return Run(o, out, err);
  } catch (const UsageError& e) {
    err << "brine-sim: " << e.what() << "\nTry 'brine-sim --help'.\n";
    return kExitUsage;
  } catch (const config::ConfigError& e) {
    err << "brine-sim: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "brine-sim: " << e.what() << "\n";
    return kExitRuntime;
  }
}

}  // namespace brine::sim
