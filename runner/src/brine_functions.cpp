// jobs.master and brine's own functions: brine.stats, brine.health, brine.web_url, ...
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "brine/config/bus_endpoints.h"
#include "brine/core/jid.h"
#include "functions.h"
#include "export.h"
#include "import_local_cache.h"
#include "master_status.h"
#include "proc_file.h"

namespace brine::runner {
namespace {

constexpr const char* kCounterNames[] = {"received", "stored",  "filtered", "quarantined", "cache_writes",
                                         "duplicates", "trimmed", "returns",  "batches",     "acked",
                                         "acked_refused", "future_arrivals"};

// Salt's time format ("2024, Jan 01 12:00:00.123456"), as jobs show StartTime.
std::string SaltTime(std::int64_t us) {
  if (us <= 0) return "";
  return JidToTime(FormatJid(FromUnixMicros(us)));
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

double Metric(const std::map<std::string, double>& m, const std::string& name) {
  const auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

// The metrics file when it was written in the last 10 s (the master rewrites
// it every second), else nullopt.
std::optional<std::map<std::string, double>> FreshMetrics(Context& ctx, double* age_s = nullptr) {
  auto m = ReadMetricsFile(ctx.config().brine.metrics_file);
  if (!m) return std::nullopt;
  const double age = static_cast<double>(ToUnixMicros(ctx.clock().Now())) / 1e6 - Metric(*m, "brine_metrics_timestamp_seconds");
  if (age_s != nullptr) *age_s = age;
  if (age > 10) return std::nullopt;
  return m;
}

// A status counter of `counters` (GetCounters' shape), 0 when absent.
std::int64_t Counter(const Value& counters, const std::string& name) {
  const Value* v = counters.Find(name);
  return v != nullptr && v->kind() == Value::Kind::kInt ? v->as_int() : 0;
}

// A master is alive by the store when its heartbeat (written every commit,
// and every 5 s when idle) is this recent and it has not stopped since it
// started (docs/day-two.md, "brine.stats").
constexpr std::int64_t kHeartbeatFreshUs = 15'000'000;

bool AliveByStore(Context& ctx, const Value& counters) {
  const std::int64_t heartbeat = Counter(counters, "heartbeat_us");
  if (heartbeat <= 0) return false;
  const std::int64_t stopped = Counter(counters, "stopped_us");
  if (stopped > 0 && stopped >= Counter(counters, "started_us")) return false;
  return ToUnixMicros(ctx.clock().Now()) - heartbeat <= kHeartbeatFreshUs;
}

// An attached master's bus as its counters (written with every commit and
// heartbeat) and brine_bus_gaps show it.
struct AttachedState {
  bool attached = false;
  std::int64_t since_us = 0;
  std::int64_t reconnects = 0;
  std::string framing = "no frame seen yet";
  std::int64_t gaps_last_hour = 0;
  std::string last_gap_reason;  // of the last hour's newest gap
  std::string gap_reason;       // of the open gap
};

AttachedState ReadAttachedState(Context& ctx, const Value& counters, const std::string& master) {
  AttachedState a;
  a.attached = Counter(counters, "bus_attached") != 0;
  a.since_us = Counter(counters, "bus_since_us");
  a.reconnects = Counter(counters, "bus_reconnects");
  const std::int64_t framing = Counter(counters, "bus_framing");
  if (framing == 1) a.framing = "plain";
  if (framing == 2) a.framing = "prefixed";
  const Micros hour_ago = ctx.clock().Now() - std::chrono::hours(1);
  for (const store::BusGap& g : ctx.Store().GetBusGaps(hour_ago)) {
    if (g.master_id != master) continue;
    ++a.gaps_last_hour;
    a.last_gap_reason = g.reason;
    if (!g.end) a.gap_reason = g.reason;
  }
  return a;
}

AttachedState ReadAttachedState(Context& ctx) {
  for (store::MasterStatus& s : ctx.Store().GetMasterStatus()) {
    if (s.master_id == ctx.config().id) return ReadAttachedState(ctx, s.counters, s.master_id);
  }
  return {};
}

Value Stats(Context& ctx) {
  const bool raw = ctx.outputter_option() == "json";
  const BusProbe bus = ProbeBus(ctx.config());
  const auto metrics = bus.listening ? FreshMetrics(ctx) : std::nullopt;
  // A store on a server is read from any host: there, a master's bus and
  // metrics file are not this host's to read, and its status row says
  // whether it runs.
  const bool local_store = store::Describe(ctx.config().brine.database).kind == store::StoreLocation::Kind::kLocalFiles;
  Value out = Value::EmptyMap();
  for (store::MasterStatus& status : ctx.Store().GetMasterStatus()) {
    const std::string& master = status.master_id;
    const Value& counters = status.counters;
    auto get = [&](const std::string& name) { return Counter(counters, name); };
    Value m = Value::EmptyMap();
    // The bus and the metrics belong to this config's master.
    const bool mine = master == ctx.config().id;
    const bool by_metrics = mine && bus.listening && metrics.has_value();
    // Locally, a master that does not hold its bus is not running, whatever
    // its last heartbeat says (a kill -9 writes no stop).
    m.Set("running", by_metrics || ((!mine || !local_store) && AliveByStore(ctx, counters)));
    // docs/salt.md, "Which mode a master is in".
    m.Set("job_cache_source", get("plugin_is_job_cache") != 0 ? "the Salt plug-in (master_job_cache: brine)"
                                                                : "the bus");
    Value since = Value::EmptyMap();
    Value totals = Value::EmptyMap();
    for (const char* name : kCounterNames) {
      since.Set(name, static_cast<long long>(get(name)));
      const Value* total = counters.Find(std::string(name) + "_total");
      totals.Set(name, static_cast<long long>(total != nullptr ? get(std::string(name) + "_total") : get(name)));
    }
    // Any other count the master keeps (e.g. the acknowledged lane's), since start.
    for (const auto& [name, value] : counters.as_map()) {
      const bool special = name.ends_with("_us") || name.ends_with("_total") || name == "queue_depth" ||
                           name.starts_with("bus_") ||
                           since.Find(name) != nullptr;
      if (!special) since.Set(name, value);
    }
    for (const char* t : {"started", "last_commit", "oldest_event"}) {
      const std::int64_t us = get(std::string(t) + "_us");
      m.Set(t, SaltTime(us));
      if (raw) m.Set(std::string(t) + "_us", static_cast<long long>(us));
    }
    // An attached master's bus (docs/master.md, "Attach").
    if (counters.Find("bus_attached") != nullptr) {
      const AttachedState a = ReadAttachedState(ctx, counters, master);
      Value b = Value::EmptyMap();
      b.Set("state", a.attached ? "attached" : "detached");
      b.Set("since", SaltTime(a.since_us));
      b.Set("reconnects", static_cast<long long>(a.reconnects));
      b.Set("framing", a.framing);
      b.Set("gaps_last_hour", static_cast<long long>(a.gaps_last_hour));
      b.Set("gaps_since_start", static_cast<long long>(Counter(counters, "bus_gaps")));
      if (a.gaps_last_hour > 0) b.Set("warning", "a bus gap in the last hour (" + a.last_gap_reason + ")");
      m.Set("bus", std::move(b));
    }
    m.Set("since_start", std::move(since));
    m.Set("since_created", std::move(totals));
    if (mine && metrics) {
      Value rates = Value::EmptyMap();
      rates.Set("received", std::round(Metric(*metrics, "brine_events_received_per_second") * 10) / 10);
      rates.Set("stored", std::round(Metric(*metrics, "brine_events_stored_per_second") * 10) / 10);
      rates.Set("returns", std::round(Metric(*metrics, "brine_returns_stored_per_second") * 10) / 10);
      m.Set("per_second_last_minute", std::move(rates));
      m.Set("pending_frames", static_cast<long long>(Metric(*metrics, "brine_pending_frames")));
      m.Set("commit_lag_s", std::round(Metric(*metrics, "brine_commit_lag_seconds") * 1000) / 1000);
    } else {
      m.Set("queue_depth_at_last_commit", static_cast<long long>(get("queue_depth")));
      // From the status row (a master from before migration 0011 has none).
      if (counters.Find("commit_lag_us") != nullptr) {
        m.Set("commit_lag_s", std::round(static_cast<double>(get("commit_lag_us")) / 1000.0) / 1000);
      }
    }
    // The status row's own fields, when the master wrote them.
    if (counters.Find("heartbeat_us") != nullptr) {
      for (const char* t : {"heartbeat", "stopped"}) {
        const std::int64_t us = get(std::string(t) + "_us");
        m.Set(t, SaltTime(us));
        if (raw) m.Set(std::string(t) + "_us", static_cast<long long>(us));
      }
    }
    if (status.info) {
      m.Set("version", status.info->version);
      m.Set("host", status.info->host);
      m.Set("pid", static_cast<long long>(status.info->pid));
    }
    out.Set(master, std::move(m));
  }
  // Where the store and the spool stand, whoever writes them.
  std::error_code ec;
  const auto& db = ctx.config().brine.database;
  const auto size = [&](const std::filesystem::path& p) {
    const auto n = std::filesystem::file_size(p, ec);
    return ec ? 0LL : static_cast<long long>(n);
  };
  long long spool_files = 0, spool_bytes = 0;
  const auto spool = ctx.config().cachedir / "brine-spool";
  if (std::filesystem::is_directory(spool, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(spool, ec)) {
      if (!e.is_regular_file(ec)) continue;
      ++spool_files;
      spool_bytes += size(e.path());
    }
  }
  Value store = Value::EmptyMap();
  store.Set("path", store::RedactDatabase(db));
  // On disk: the file and its WAL; a server's size is not read here (0).
  store.Set("bytes", static_cast<long long>(store::Describe(db).bytes.value_or(0)));
  store.Set("spool_files", spool_files);
  store.Set("spool_bytes", spool_bytes);
  out.Set("store", std::move(store));
  return out;
}

// brine.health from the store alone: a server's store read from a host
// where brine-master's bus is not (its status row: heartbeat, queue depth,
// last commit). `fail` sets the exit code.
template <typename Fail>
Value HealthFromStore(Context& ctx, std::int64_t stall_factor, const Fail& fail) {
  const auto& cfg = ctx.config();
  std::optional<store::MasterStatus> mine;
  for (store::MasterStatus& s : ctx.Store().GetMasterStatus()) {
    if (s.master_id == cfg.id) mine = std::move(s);
  }
  if (!mine || mine->counters.Find("heartbeat_us") == nullptr) {
    return fail("brine-master " + cfg.id + " is not reporting: the store holds no status row of it");
  }
  const Value& c = mine->counters;
  const std::int64_t now = ToUnixMicros(ctx.clock().Now());
  if (Counter(c, "stopped_us") > 0) return fail("brine-master " + cfg.id + " is not running: it stopped at " + SaltTime(Counter(c, "stopped_us")));
  const double heartbeat_age = static_cast<double>(now - Counter(c, "heartbeat_us")) / 1e6;
  if (!AliveByStore(ctx, c)) {
    return fail("brine-master " + cfg.id + " is not reporting: its heartbeat in the store is " + Fixed(heartbeat_age, 0) +
                " s old (written every commit and every 5 s when idle)");
  }
  const auto pending = static_cast<long long>(Counter(c, "queue_depth"));
  const std::int64_t last = Counter(c, "last_commit_us");
  const double lag = last > 0 ? static_cast<double>(now - last) / 1e6 : 0;
  const double stall_s = static_cast<double>(stall_factor * cfg.brine.flush_interval_ms) / 1000.0;
  if (pending > 0 && lag > stall_s) {
    return fail("brine-master is stalled: no commit for " + Fixed(lag, 1) + " s with " + std::to_string(pending) +
                " frames pending (limit " + std::to_string(stall_factor) + " x brine.flush_interval_ms = " +
                Fixed(stall_s, 1) + " s)");
  }
  const std::string where = mine->info ? " on " + mine->info->host : "";
  return Value("brine-master " + cfg.id + where + " is running and keeps up (by its status row in the store): " +
               std::to_string(pending) + " pending at the last commit, last commit " + SaltTime(last));
}

// One line: why brine-master is not keeping up, or that it is.
Value Health(Context& ctx, std::int64_t stall_factor, std::int64_t queue_percent) {
  const auto& cfg = ctx.config();
  auto fail = [&](const std::string& why) {
    ctx.SetExitCode(1);
    return Value(why);
  };
  const BusProbe bus = ProbeBus(cfg);
  ctx.Debug("bus " + bus.where + (bus.listening ? ": a process listens" : ": nothing listens"));
  if (!bus.listening) {
    // A server's store from another host (or an attached master on one): the store says.
    if (store::Describe(cfg.brine.database).kind == store::StoreLocation::Kind::kServer) {
      return HealthFromStore(ctx, stall_factor, fail);
    }
    return fail("brine-master is not running: " + bus.absent);
  }
  double age = 0;
  const auto m = ReadMetricsFile(cfg.brine.metrics_file);
  if (!m) {
    return fail("brine-master is not reporting: cannot read " + cfg.brine.metrics_file.string() +
                " (brine.metrics_file; another process may hold the bus)");
  }
  const auto fresh = FreshMetrics(ctx, &age);
  if (!fresh) {
    return fail("brine-master is not reporting: " + cfg.brine.metrics_file.string() + " was written " + Fixed(age, 0) +
                " s ago (it is rewritten every second)");
  }
  const double lag = Metric(*m, "brine_commit_lag_seconds");
  const auto pending = static_cast<long long>(Metric(*m, "brine_pending_frames"));
  const double stall_s = static_cast<double>(stall_factor * cfg.brine.flush_interval_ms) / 1000.0;
  if (pending > 0 && lag > stall_s) {
    return fail("brine-master is stalled: no commit for " + Fixed(lag, 1) + " s with " + std::to_string(pending) +
                " frames pending (limit " + std::to_string(stall_factor) + " x brine.flush_interval_ms = " +
                Fixed(stall_s, 1) + " s)");
  }
  const double spool_age = Metric(*m, "brine_spool_oldest_age_seconds");
  if (spool_age > 2.0 * cfg.loop_interval_s) {
    return fail("spool backlog: " + std::to_string(static_cast<long long>(Metric(*m, "brine_spool_files"))) +
                " files (" + std::to_string(static_cast<long long>(Metric(*m, "brine_spool_bytes"))) +
                " bytes) in " + (cfg.cachedir / "brine-spool").string() + ", the oldest " + Fixed(spool_age, 0) +
                " s old (filed every loop_interval, " + std::to_string(cfg.loop_interval_s) + " s)");
  }
  const double queue = Metric(*m, "brine_queue_bytes");
  const double capacity = Metric(*m, "brine_queue_capacity_bytes");
  if (capacity > 0 && queue * 100 > capacity * static_cast<double>(queue_percent)) {
    return fail("queue depth over " + std::to_string(queue_percent) + "% of brine.max_queue_mb: " +
                std::to_string(static_cast<long long>(Metric(*m, "brine_queue_frames"))) + " frames, " +
                Fixed(queue / 1048576.0, 1) + " MiB");
  }
  // Attached: detached is a failure; a gap in the last hour a warning (exit 0).
  std::string bus_note;
  if (cfg.brine.bus == config::MasterConfig::BusMode::kAttach) {
    const AttachedState a = ReadAttachedState(ctx);
    if (!a.attached) {
      return fail("brine-master runs but is detached from the Salt master's event bus " +
                  config::SaltBusFor(cfg).PubName() + " since " + SaltTime(a.since_us) +
                  (a.gap_reason.empty() ? std::string() : " (" + a.gap_reason + ")"));
    }
    bus_note = "; attached to " + config::SaltBusFor(cfg).PubName() + " since " + SaltTime(a.since_us) + " (" +
               a.framing + ")";
    if (a.gaps_last_hour > 0) {
      bus_note += "; warning: " + std::to_string(a.gaps_last_hour) + " bus gap(s) in the last hour (" +
                  a.last_gap_reason + "), see brine_bus_gaps";
    }
  }
  // Writable: a read-only or full filesystem, or a file the master cannot
  // write. A server database has no file here; the master's commits (the lag
  // above) are its health.
  const auto& db = cfg.brine.database;
  const store::StoreLocation where = store::Describe(db);
  if (where.kind == store::StoreLocation::Kind::kLocalFiles) {
    struct statvfs fs {};
    if (::statvfs(where.folder.c_str(), &fs) == 0) {
      if ((fs.f_flag & ST_RDONLY) != 0) return fail("the store is not writable: " + where.folder.string() + " is mounted read-only");
      const double free_mib = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) / 1048576.0;
      if (free_mib < 64) return fail("the store is not writable: " + Fixed(free_mib, 1) + " MiB free on its filesystem");
    }
    struct stat st {};
    if (::stat(db.c_str(), &st) != 0) return fail("the store is not writable: " + store::RedactDatabase(db) + " does not exist");
    if ((::geteuid() == 0 || ::geteuid() == st.st_uid) && ::access(db.c_str(), W_OK) != 0) {
      return fail("the store is not writable: " + store::RedactDatabase(db) + " denies writing");
    }
  }
  return Value("brine-master is running and keeps up: " + Fixed(Metric(*m, "brine_events_received_per_second"), 1) +
               " frames/s over the last minute, " + std::to_string(pending) + " pending, last commit " +
               SaltTime(static_cast<std::int64_t>(Metric(*m, "brine_last_commit_timestamp_seconds") * 1e6)) +
               bus_note);
}

// An online copy of the store and the copy's integrity_check.
Value Backup(Context& ctx, const std::string& path) {
  const std::filesystem::path to = std::filesystem::absolute(path);
  const auto started = std::chrono::steady_clock::now();
  ctx.Debug("backing the store up to " + to.string());
  try {
    // The store brine-master writes, never brine.read_database: a backup of
    // a copy would carry the copy's lag.
    const auto& cfg = ctx.config().brine;
    // A server's database is backed up with the server's tools (pg_dump,
    // pg_basebackup, WAL archiving), not file by file: docs/scaling.md.
    const auto backup = [&](store::Store& s) {
      store::StoreMaintenance* maintenance = s.Maintenance();
      if (maintenance == nullptr) {
        throw RuntimeFailure("backup: a PostgreSQL store is backed up with pg_dump or pg_basebackup, not brine.backup");
      }
      maintenance->BackupTo(to);
    };
    if (cfg.read_database) {
      backup(*store::OpenStore(cfg.database, {.access = store::OpenOptions::Access::kReadOnly}));
    } else {
      backup(ctx.Store());
    }
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string verdict;
  try {
    // The copy is a SQLite file, which has maintenance.
    verdict = store::OpenStore(to, {.access = store::OpenOptions::Access::kReadOnly})->Maintenance()->IntegrityCheck();
  } catch (const store::StoreError& e) {
    verdict = e.what();
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(to, ec);
  Value out = Value::EmptyMap();
  out.Set("backup", to.string());
  out.Set("bytes", ec ? 0LL : static_cast<long long>(bytes));
  out.Set("seconds", std::round(seconds * 1000) / 1000);
  out.Set("integrity_check", verdict);
  if (verdict != "ok") ctx.SetExitCode(1);
  return out;
}

// brine-web's login URL: the token file and the port file brine-web wrote
// (config::WebPortFile), so the port is the one in use even with
// brine.web_port 0. Read here, not through web/, which sits above runner.
Value WebUrl(Context& ctx) {
  const auto& b = ctx.config().brine;
  auto read = [](const std::filesystem::path& path, const char* what) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) {
      throw RuntimeFailure(std::string(what) + " " + path.string() +
                           " cannot be read: is brine-web running, and is this its user (or root)?");
    }
    return line;
  };
  const std::string token = read(b.web_token_file, "brine.web_token_file");
  if (token.size() != 64 || token.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw RuntimeFailure("brine.web_token_file " + b.web_token_file.string() + " does not hold a token");
  }
  const std::string port = read(config::WebPortFile(b.web_token_file), "brine-web's port file");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    throw RuntimeFailure("brine-web's port file " + config::WebPortFile(b.web_token_file).string() +
                         " does not hold a port");
  }
  std::string host = b.web_bind;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return Value("http://" + host + ":" + port + b.web_base_path + "login?token=" + token);
}

}  // namespace

void AddBrineFunctions(std::vector<FunctionSpec>& out) {
  out.push_back({
      "jobs.master",
      {},
      [](Context& ctx, const Args&) { return RunningCalls(ctx.config().cachedir); },
  });
  out.push_back({
      "brine.stats",
      {},
      [](Context& ctx, const Args&) { return Stats(ctx); },
  });
  out.push_back({
      "brine.backup",
      {{"path", std::nullopt}},
      [](Context& ctx, const Args& a) { return Backup(ctx, StringArg(a["path"], "path")); },
  });
  out.push_back({
      "brine.import_local_cache",
      {{"jobs_dir", Value()}},
      [](Context& ctx, const Args& a) {
        const Value& jobs_dir = a["jobs_dir"];
        const auto dir =
            jobs_dir.is_null() ? ctx.config().cachedir / "jobs" : std::filesystem::path(StringArg(jobs_dir, "jobs_dir"));
        return ImportLocalCache(ctx, dir);
      },
  });
  out.push_back({
      "brine.export",
      {{"file", std::nullopt}, {"since", Value()}, {"until", Value()}},
      [](Context& ctx, const Args& a) {
        std::optional<Micros> since, until;
        if (!a["since"].is_null()) since = TimeArg(a["since"], "since");
        if (!a["until"].is_null()) until = TimeArg(a["until"], "until");
        return Export(ctx, StringArg(a["file"], "file"), since, until);
      },
  });
  out.push_back({
      "brine.import_export",
      {{"file", std::nullopt}},
      [](Context& ctx, const Args& a) { return ImportExport(ctx, StringArg(a["file"], "file")); },
  });
  out.push_back({
      "brine.health",
      {{"stall_factor", Value(50)}, {"queue_percent", Value(80)}},
      [](Context& ctx, const Args& a) {
        const std::int64_t stall = IntArg(a["stall_factor"], "stall_factor");
        const std::int64_t percent = IntArg(a["queue_percent"], "queue_percent");
        if (stall <= 0) throw UsageError("stall_factor must be positive");
        if (percent <= 0 || percent > 100) throw UsageError("queue_percent must be from 1 to 100");
        return Health(ctx, stall, percent);
      },
  });
  out.push_back({
      "brine.web_url",
      {},
      [](Context& ctx, const Args&) { return WebUrl(ctx); },
  });
}

}  // namespace brine::runner
