// brine-master's process: configuration, ownership, the bus, the threads and
// the signals. The reader (this thread) owns both ZeroMQ sockets; the writer
// thread owns the store connection; they meet only in the FrameQueue.
#include "brine/master/daemon.h"

#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "brine/config/master_config.h"
#include "ack.h"
#include "archiver.h"
#include "attached_bus.h"
#include "bus_gaps.h"
#include "bus.h"
#include "cache_socket.h"
#include "frame_queue.h"
#include "logger.h"
#include "reporter.h"
#include "service_notify.h"
#include "signals.h"
#include "ownership.h"
#include "reader.h"
#include "store_lock.h"
#include "writer.h"

namespace brine::master {
namespace {

// Frames one connection may have waiting in ZeroMQ's receive pipe. Kept far
// above one short-lived sender's burst: libzmq drops what a sender had in
// flight when it disconnects while its pipe is at the mark (measured: at 16
// frames, 50 senders of 2,000 frames each lost 9,601). The reader keeps the
// pipes near empty anyway, into the overflow file while the store is slow;
// they fill only once that is full too (docs/reliability.md, "Memory").
constexpr int kPullHighWaterMark = 20000;

// Exit codes.
constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

class StartupError : public std::runtime_error {
 public:
  StartupError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] int code() const { return code_; }

 private:
  int code_;
};

struct Account {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

Account LookUpUser(const std::string& name) {
  errno = 0;
  const passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) throw StartupError(kExitUsage, "user: no such user '" + name + "' (the config's `user`)");
  return {pw->pw_uid, pw->pw_gid, name};
}

void DropPrivileges(const Account& to) {
  if (::geteuid() != 0 || to.uid == 0) return;
  if (::initgroups(to.name.c_str(), to.gid) != 0 || ::setgid(to.gid) != 0 || ::setuid(to.uid) != 0) {
    throw StartupError(kExitRuntime, "cannot switch to user " + to.name + ": " + std::strerror(errno));
  }
}

struct Folder {
  std::filesystem::path dir;
  const char* what;
};

std::vector<Folder> FoldersOf(const config::MasterConfig& cfg) {
  std::vector<Folder> folders = {{cfg.brine.log_file.parent_path(), "brine.log_file's folder"}};
  // A server database (PostgreSQL URI) has no folder on this machine.
  if (const auto where = store::Describe(cfg.brine.database); where.kind == store::StoreLocation::Kind::kLocalFiles) {
    folders.push_back({where.folder, "brine.database's folder"});
  }
  if (cfg.ipc_mode == config::MasterConfig::IpcMode::kIpc) folders.push_back({cfg.brine.sock_dir, "brine.sock_dir"});
  if (cfg.ipc_mode == config::MasterConfig::IpcMode::kTcp) {
    folders.push_back({cfg.brine.cache_key_file.parent_path(), "brine.cache_key_file's folder"});
  }
  return folders;
}

// As root: makes the missing folders and gives the service user only those
// (ownership.h).
void CreateFolders(const config::MasterConfig& cfg, const Account& owner) {
  for (const Folder& f : FoldersOf(cfg)) {
    try {
      CreateOwnedDirs(f.dir, owner.uid, owner.gid);
    } catch (const std::exception& e) {
      throw StartupError(kExitRuntime, std::string(f.what) + ": " + e.what());
    }
  }
}

// As the service user: an existing folder it cannot write is refused, named.
void CheckFolders(const config::MasterConfig& cfg, const Account& owner) {
  for (const Folder& f : FoldersOf(cfg)) {
    // An existing log file the user may append to needs no writable folder.
    if (f.dir == cfg.brine.log_file.parent_path() && ::access(cfg.brine.log_file.c_str(), W_OK) == 0) continue;
    if (auto bad = CheckWritableDir(f.dir, f.what, owner.name)) throw StartupError(kExitUsage, *bad);
  }
}

// Descriptors kept back from the acknowledged socket's connections: the bus's
// connections and libzmq's own, the store, the log, the metrics and overflow
// files, the spool being filed. Without it a flood of connections took the
// last one, and libzmq aborted the process at its next bus connection.
constexpr rlim_t kDescriptorReserve = 64;

// Raises the soft RLIMIT_NOFILE to the hard one (systemd's default soft limit
// is 1,024; the unit sets LimitNOFILE=65536) and returns the connections the
// acknowledged socket may hold.
std::size_t RaiseDescriptorLimit(std::string& notice) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    notice = std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno) + "; assuming 1024 descriptors";
    limit.rlim_cur = 1024;
  } else if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const rlim_t soft = limit.rlim_cur == RLIM_INFINITY ? rlim_t{1} << 20 : limit.rlim_cur;
  if (soft <= kDescriptorReserve + 16) {
    notice = "RLIMIT_NOFILE is " + std::to_string(soft) + ": the acknowledged socket takes 16 connections at most";
    return 16;
  }
  return static_cast<std::size_t>(soft - kDescriptorReserve);
}

struct Args {
  std::filesystem::path config_dir = config::kDefaultConfigDir;
};

constexpr const char* kUsage =
    "usage: brine-master [-c CONFIG_DIR]\n"
    "\n"
    "Archive a Salt master's event bus: every job, return and event into the brine store.\n"
    "\n"
    "  -c, --config-dir DIR  the Salt master's config folder (default /etc/salt): reads\n"
    "                        DIR/master and DIR/master.d/*.conf, Salt keys and brine.* keys\n"
    "  -h, --help            this help\n"
    "      --version         brine's version\n";

std::optional<int> ParseArgs(int argc, char** argv, Args& args, std::ostream& out, std::ostream& err) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return kExitOk;
    }
    if (a == "--version") {
      out << "brine-master " << BRINE_VERSION << "\n";
      return kExitOk;
    }
    if (a == "-c" || a == "--config-dir") {
      if (i + 1 >= argc) {
        err << "brine-master: " << a << " needs a folder\n";
        return kExitUsage;
      }
      args.config_dir = argv[++i];
    } else if (a.rfind("--config-dir=", 0) == 0) {
      args.config_dir = a.substr(13);
    } else {
      err << "brine-master: unknown argument '" << a << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  return std::nullopt;
}

// An idle job-cache connection is closed after this many send timeouts (60 s
// by default): a Salt process keeps one per process, and makes a new one
// with its next write.
constexpr int kIdleTimeoutsPerSendTimeout = 30;

// How long after SIGTERM brine-master still reads the bus, whatever the
// senders do; then the writer commits what was read (docs/reliability.md,
// promise 2).
constexpr std::chrono::seconds kStopReadingFor{10};
// How long after that the writer may go on committing the overflow file's
// frames; the rest is saved for the next start (overflow.h), so a full file
// never stretches a stop past systemd's patience.
constexpr std::chrono::seconds kStopCommittingOverflowFor{10};

// Everything a running brine-master holds, made by Start in the order of its
// members and unmade in reverse. Members refer to one another, so a Daemon
// never moves (it lives behind a unique_ptr).
struct Daemon {
  config::MasterConfig cfg;
  config::BusEndpoints endpoints;
  // The socket files brine-master made and removes at its stop: all three
  // when it is the bus (bind), only the acknowledged socket's otherwise.
  std::vector<std::filesystem::path> own_paths;
  GapMailbox gaps;
  AttachStatus attach_status;
  std::optional<Logger> log;
  std::optional<StoreLock> store_lock;  // one writer per SQLite file
  SystemClock clock;
  std::optional<Archiver> archiver;
  std::optional<FrameQueue> queue;
  std::optional<AckMailbox> acks;  // an eventfd, made where Run made it
  LiveStatus status;
  WriterOptions writer_options;
  std::optional<Writer> writer;
  std::optional<zmq::context_t> ctx;
  zmq::socket_t pull;
  zmq::socket_t pub;
  std::optional<CacheSocket> cache;
  std::optional<AttachedBus> attached;  // brine.bus: attach
  std::optional<Reader> reader;
  std::optional<Signals> signals;  // blocked from before the first thread of ours
  std::atomic<bool> writer_done{false};
  std::thread writer_thread;
  std::optional<Reporter> reporter;

  // Past the writer's start, an exception that ends the process (one the
  // reader throws, say) comes here with the writer still running: it
  // commits what was read, then the members go. Unjoined, the thread's
  // destructor would abort the process instead.
  ~Daemon() {
    if (!writer_thread.joinable()) return;
    queue->Close();
    writer_thread.join();
  }
};

// The overflow file (overflow.h) the config asks for, or the one the last
// stop saved; nullptr: none (a folder that cannot be used is logged, not fatal).
std::unique_ptr<DiskOverflow> OpenOverflow(const config::MasterConfig& cfg, Logger& log) {
  std::error_code saved_ec;
  // Frames the last stop saved are taken even with the overflow now off.
  if (cfg.brine.overflow_mb <= 0 && !std::filesystem::exists(cfg.brine.overflow_dir / DiskOverflow::kSavedName, saved_ec)) {
    return nullptr;
  }
  try {
    auto overflow = std::make_unique<DiskOverflow>(cfg.brine.overflow_dir, static_cast<std::size_t>(cfg.brine.overflow_mb)
                                                                               << 20);
    if (!overflow->notice().empty()) {
      log.Log(overflow->adopted_frames() > 0 && overflow->adopted_damaged() == 0 ? LogLevel::kInfo
                                                                                 : LogLevel::kWarning,
              overflow->notice() + (overflow->adopted_frames() > 0 ? "; they are filed first" : ""));
    }
    return overflow;
  } catch (const std::system_error& e) {
    // Not fatal: without it a full queue holds the senders back in ZeroMQ,
    // as with brine.overflow_mb: 0.
    log.Log(LogLevel::kWarning, std::string("brine.overflow_dir: ") + e.what() + "; running without an overflow file");
    return nullptr;
  }
}

ArchiverOptions ArchiverOptionsFor(const config::MasterConfig& cfg) {
  return {.whitelist = cfg.event_return_whitelist,
          .blacklist = cfg.event_return_blacklist,
          .job_cache = cfg.job_cache,
          .runner_returns = cfg.runner_returns,
          .plugin_is_job_cache = cfg.PluginIsJobCache(),
          .master_id = cfg.id,
          .attached = cfg.brine.bus == config::MasterConfig::BusMode::kAttach,
          .skip_peer_events = cfg.brine.bus == config::MasterConfig::BusMode::kAttach &&
                              store::Describe(cfg.brine.database).kind == store::StoreLocation::Kind::kServer,
          .max_frame_bytes = static_cast<std::size_t>(cfg.brine.max_frame_bytes)};
}

WriterOptions WriterOptionsFor(const config::MasterConfig& cfg, LiveStatus& status) {
  WriterOptions wopts;
  wopts.database = cfg.brine.database;
  wopts.open.master_id = cfg.id;
  wopts.open.max_clock_skew = std::chrono::seconds(cfg.brine.max_clock_skew_s);
  wopts.open.sync = cfg.brine.sync;
  wopts.batch_max_events = static_cast<std::size_t>(cfg.brine.batch_max_events);
  wopts.batch_max_bytes = static_cast<std::size_t>(cfg.brine.max_queue_mb) << 20;
  wopts.flush_interval = std::chrono::milliseconds(cfg.brine.flush_interval_ms);
  wopts.loop_interval = std::chrono::seconds(cfg.loop_interval_s);
  wopts.keep_jobs_seconds = cfg.keep_jobs_seconds;
  wopts.keep_events_seconds = cfg.brine.keep_events_seconds;
  wopts.keep_jobs_by_fun = cfg.brine.keep_jobs_by_fun;
  wopts.keep_events_by_tag = cfg.brine.keep_events_by_tag;
  wopts.max_store_bytes = cfg.brine.max_store_mb * 1048576;
  wopts.spool_dir = cfg.cachedir / "brine-spool";
  wopts.spool_batch_bytes = std::min(wopts.spool_batch_bytes, wopts.batch_max_bytes);
  wopts.spool_max_record_bytes = static_cast<std::size_t>(cfg.brine.max_frame_bytes);
  wopts.status = &status;
  return wopts;
}

CacheSocketOptions CacheSocketOptionsFor(const config::MasterConfig& cfg, const std::string& endpoint,
                                         std::size_t max_connections, const std::string& cache_key) {
  // Unfinished requests may hold the queue's budget, or two whole requests of
  // the largest size, whichever is more: one big write always gets through.
  const std::size_t max_request_bytes = static_cast<std::size_t>(cfg.brine.max_frame_bytes) + (1u << 20);
  const std::size_t max_partial_bytes =
      std::max(static_cast<std::size_t>(cfg.brine.max_queue_mb) << 20, 2 * max_request_bytes);
  return {.endpoint = endpoint,
          .send_timeout = std::chrono::milliseconds(cfg.brine.send_timeout_ms),
          .max_request_bytes = max_request_bytes,
          .max_connections = max_connections,
          .key = cache_key,
          .idle_timeout = kIdleTimeoutsPerSendTimeout * std::chrono::milliseconds(cfg.brine.send_timeout_ms),
          .max_partial_bytes = max_partial_bytes};
}

// Start: reads the config, makes the folders, switches user, opens the log
// and the store, binds the bus and the acknowledged socket, starts the writer
// thread and the reporter, and tells systemd it is ready. Returns the exit
// code when brine-master must not run (the message is on `err`); nullopt
// once it runs. Throws StartupError, StoreHeld, BusConflict (Main maps them).
std::optional<int> Start(const Args& args, std::ostream& err, Daemon& d) {
  config::MasterConfig& cfg = d.cfg;
  try {
    cfg = config::LoadMasterConfig(args.config_dir);
  } catch (const config::ConfigError& e) {
    err << "brine-master: " << e.what() << "\n";
    return kExitUsage;
  }
  // The store's rule that a URI holds no secret (store.h), checked before
  // anything starts: a config mistake exits 2, which the unit does not
  // restart (RestartPreventExitStatus), rather than 1 at the store's open.
  try {
    store::CheckServerDatabase(cfg.brine.database);
  } catch (const store::StoreError& e) {
    err << "brine-master: brine.database: " << e.what() << "\n";
    return kExitUsage;
  }

  ::umask(0077);
  std::string descriptor_notice;
  const std::size_t max_connections = RaiseDescriptorLimit(descriptor_notice);
  Logger& log = d.log.emplace(ParseLogLevel(cfg.brine.log_level));
  const Account owner = LookUpUser(cfg.user);
  // As root only the missing folders are made (and given to `user`); every
  // file is created after the switch, as that user (ownership.h).
  CreateFolders(cfg, owner);
  DropPrivileges(owner);
  CheckFolders(cfg, owner);
  try {
    log.Open(cfg.brine.log_file);
  } catch (const std::exception& e) {
    err << "brine-master: brine.log_file: " << e.what() << "\n";
    return kExitUsage;
  }
  for (const auto& w : cfg.warnings) log.Log(LogLevel::kWarning, w);
  if (!descriptor_notice.empty()) log.Log(LogLevel::kWarning, descriptor_notice);
  // ipc_mode tcp: both ends of each job-cache connection prove they hold this
  // key (cache_socket.h); made here, as the service user, at the first start.
  std::string cache_key;
  if (cfg.ipc_mode == config::MasterConfig::IpcMode::kTcp) {
    try {
      cache_key = LoadOrCreateCacheKey(cfg.brine.cache_key_file);
    } catch (const std::exception& e) {
      throw StartupError(kExitUsage, e.what());
    }
  }

  d.endpoints = config::EndpointsFor(cfg);
  const config::BusEndpoints& endpoints = d.endpoints;
  using BusMode = config::MasterConfig::BusMode;
  const BusMode bus_mode = cfg.brine.bus;
  for (const auto& path : endpoints.ipc_paths) {
    // Attached, Salt's sockets may share the folder: only brine's own is touched.
    if (bus_mode == BusMode::kBind || path.filename() == "brine_cache.ipc") d.own_paths.push_back(path);
  }
  for (const auto& path : d.own_paths) ClaimIpcPath(path);
  // One writer per SQLite file; a server database takes several masters.
  if (store::Describe(cfg.brine.database).lock_file) d.store_lock.emplace(cfg.brine.database, cfg.id);

  std::unique_ptr<DiskOverflow> overflow = OpenOverflow(cfg, log);
  d.archiver.emplace(ArchiverOptionsFor(cfg), log);
  // The reader prepares each bus frame before it queues it (Drain).
  d.queue.emplace(static_cast<std::size_t>(cfg.brine.max_queue_mb) << 20, std::move(overflow));
  d.writer_options = WriterOptionsFor(cfg, d.status);
  if (bus_mode == BusMode::kAttach) {
    d.writer_options.gaps = &d.gaps;
    d.writer_options.attach_status = &d.attach_status;
  }
  d.acks.emplace();
  Writer& writer = d.writer.emplace(d.writer_options, *d.archiver, log, *d.queue, d.clock, *d.acks);
  try {
    writer.Open();
  } catch (const std::exception& e) {
    err << "brine-master: the store " << store::RedactDatabase(cfg.brine.database) << " is unavailable: " << e.what() << "\n";
    log.Log(LogLevel::kCritical, std::string("the store is unavailable: ") + e.what());
    return kExitRuntime;
  }

  d.ctx.emplace(1);
  d.pull = zmq::socket_t(*d.ctx, zmq::socket_type::pull);
  d.pub = zmq::socket_t(*d.ctx, zmq::socket_type::pub);
  // The mark counts messages, not bytes, and is per connection: what ZeroMQ
  // parks is bounded in bytes only by mark x max_frame_bytes x connections. So
  // the reader keeps the pipes empty while it can, spilling to the overflow
  // file when the store is slow; the mark matters only once that is full too,
  // and then holds the senders back. docs/reliability.md says more.
  d.pull.set(zmq::sockopt::rcvhwm, kPullHighWaterMark);
  // A message over brine.max_frame_bytes is refused by libzmq as it arrives
  // (the connection that sent it is dropped), so it is never read whole.
  d.pull.set(zmq::sockopt::maxmsgsize, cfg.brine.max_frame_bytes);
  d.pub.set(zmq::sockopt::sndhwm, 100000);
  d.pull.set(zmq::sockopt::linger, 0);
  d.pub.set(zmq::sockopt::linger, 0);
  try {
    const mode_t old = ::umask(0177);  // socket files 0600 from the start
    // Attached or without a bus the ZeroMQ sockets stay unbound: the
    // plug-in's event_return frames republished on PUB then reach no one.
    if (bus_mode == BusMode::kBind) {
      d.pull.bind(endpoints.pull);
      d.pub.bind(endpoints.pub);
    }
    // A tcp port another process holds is retried, not fatal (cache_socket.h).
    d.cache.emplace(CacheSocketOptionsFor(cfg, endpoints.cache, max_connections, cache_key), *d.queue, *d.acks, d.pub,
                    d.clock, log, [&writer] { return writer.Failing(); });
    ::umask(old);
  } catch (const zmq::error_t& e) {
    err << "brine-master: cannot bind the event bus (" << endpoints.pull << ", " << endpoints.pub << ", "
        << endpoints.cache << "): " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::system_error& e) {
    err << "brine-master: cannot listen for acknowledged job-cache writes at " << endpoints.cache << ": "
        << e.what() << "\n";
    return kExitUsage;
  }
  const config::SaltBus salt_bus = config::SaltBusFor(cfg);
  if (bus_mode == BusMode::kAttach) {
    d.attached.emplace(AttachOptions{.bus = salt_bus,
                                     .framing_file = config::BusFramingFile(cfg),
                                     .max_frame_bytes = static_cast<std::size_t>(cfg.brine.max_frame_bytes)},
                       d.gaps, d.attach_status, log, d.clock);
  }
  // Before the writer's thread and the reporter's, which inherit the mask;
  // libzmq's own threads block every signal.
  d.signals.emplace();
  d.reader.emplace(ReaderOptions{.max_frame_bytes = static_cast<std::size_t>(cfg.brine.max_frame_bytes),
                                 .source = bus_mode == BusMode::kBind     ? ReaderOptions::Source::kBound
                                           : bus_mode == BusMode::kAttach ? ReaderOptions::Source::kAttached
                                                                          : ReaderOptions::Source::kNone,
                                 .wake_fd = d.signals->fd()},
                   d.pull, d.pub, *d.cache, *d.acks, *d.queue, *d.archiver, d.clock,
                   d.attached ? &*d.attached : nullptr);

  d.writer_thread = std::thread([&d] {
    d.writer->Run();
    d.writer_done = true;
  });
  d.reporter.emplace(ReporterOptions{.metrics_file = cfg.brine.metrics_file,
                                     .database = cfg.brine.database,
                                     .spool_dir = d.writer_options.spool_dir,
                                     .master_id = cfg.id,
                                     .queue_capacity_bytes = cfg.brine.max_queue_mb << 20,
                                     .lag_warning = std::chrono::seconds(cfg.brine.lag_warning_s),
                                     .attach = d.attached ? &d.attach_status : nullptr},
                     d.status, *d.queue, log, d.clock);
  // READY in every mode: the store is open and brine's own sockets are
  // bound (docs/master.md). Attached, the master's bus may come later: the
  // reader waits for it and Salt may start in any order.
  const std::string bus_text = bus_mode == BusMode::kBind
                                   ? "pull " + endpoints.pull + ", pub " + endpoints.pub
                                   : bus_mode == BusMode::kAttach ? "attached to the Salt master's bus " + salt_bus.PubName()
                                                                  : "no bus (brine.bus: none)";
  (void)NotifyServiceManager("READY=1\nSTATUS=archiving " +
                             (bus_mode == BusMode::kBind ? endpoints.pull : bus_text));
  log.Log(LogLevel::kInfo, "brine-master " BRINE_VERSION " started: " + bus_text + ", acknowledged job-cache writes " +
                               endpoints.cache + ", store " + store::RedactDatabase(cfg.brine.database));
  log.Log(LogLevel::kInfo, cfg.PluginIsJobCache()
                               ? "master_job_cache is brine: the job cache is filled by the Salt plug-in only; "
                                 "bus returns are archived as events"
                               : "the job cache is filled from the bus (master_job_cache is " + cfg.master_job_cache +
                                     ")");
  if (!cfg.job_cache) {
    log.Log(LogLevel::kWarning, "job_cache is False: job loads and minions are stored, returns are not");
  }
  return std::nullopt;
}

// The loop: reads the bus and serves the acknowledged socket until SIGTERM or
// SIGINT; SIGHUP reopens the log.
void Loop(Daemon& d) {
  while (true) {
    if (d.signals->Take()) d.log->Reopen();
    if (d.signals->stop_signal() != 0) return;
    d.reader->Turn(std::chrono::milliseconds(100));
  }
}

// The two-phase stop after SIGTERM or SIGINT (docs/reliability.md, promise 2).
// Reading: keep reading until the bus has been quiet for 200 ms, so a
// sender's last frames are not left behind; then unbind, which ends every
// sender's connection so their next frames wait (the Salt plug-in spools
// them, and its next request spools at once instead of waiting out
// brine.send_timeout_ms), and read what had already arrived. Both parts end
// kStopReadingFor after the signal at the latest (2 s of it kept for the
// second), since senders that never pause would keep the first busy for ever.
// Committing: the queue is closed and the writer commits everything read,
// while the reader serves the acknowledged replies; what still waits in the
// overflow file kStopCommittingOverflowFor later is saved for the next start.
class Stop {
 public:
  // `d` must outlive the Stop; its writer thread runs.
  explicit Stop(Daemon& d) : d_(d), started_(std::chrono::steady_clock::now()) {
    (void)NotifyServiceManager("STOPPING=1");
    d_.log->Log(LogLevel::kInfo, std::string("signal ") + std::to_string(d_.signals->stop_signal()) + ": draining the bus");
  }

  // Runs both phases, then closes the sockets. Returns the exit code.
  int Run() {
    Read();
    Commit();
    return Finish();
  }

 private:
  void Read() {
    ReadUntilQuiet(std::chrono::milliseconds(200), started_ + kStopReadingFor - std::chrono::seconds(2));
    // Attached: the master's bus has no senders to hold back; what is fired
    // from here on is the gap "brine-master stopped".
    if (d_.attached) d_.attached->Stop();
    try {
      if (d_.cfg.brine.bus == config::MasterConfig::BusMode::kBind) d_.pull.unbind(d_.endpoints.pull);
      d_.cache->Unbind();
    } catch (const zmq::error_t& e) {
      d_.log->Log(LogLevel::kWarning, std::string("unbinding the pull socket: ") + e.what());
    }
    ReadUntilQuiet(std::chrono::milliseconds(100), started_ + kStopReadingFor);
  }

  void ReadUntilQuiet(std::chrono::milliseconds quiet, std::chrono::steady_clock::time_point until) {
    auto quiet_since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < until && std::chrono::steady_clock::now() - quiet_since < quiet) {
      // A full queue is not a quiet bus: the frames wait in libzmq's pipes.
      if (d_.reader->Turn(std::chrono::milliseconds(20)) > 0 || !d_.reader->polled_bus()) {
        quiet_since = std::chrono::steady_clock::now();
      }
    }
  }

  void Commit() {
    d_.queue->Close();
    // Acknowledged requests are answered as the writer commits them; serve
    // the replies while it finishes, then the last ones.
    const auto save_at = std::chrono::steady_clock::now() + kStopCommittingOverflowFor;
    bool saved = false;
    while (!d_.writer_done) {
      d_.reader->Turn(std::chrono::milliseconds(20), Reader::Bus::kLeave);
      if (saved || std::chrono::steady_clock::now() < save_at) continue;
      saved = true;
      try {
        if (const std::size_t n = saved_frames_ = d_.queue->SaveOverflow(); n > 0) {
          d_.log->Log(LogLevel::kWarning, std::to_string(n) + " frames still in the overflow file saved to " +
                                              (d_.cfg.brine.overflow_dir / DiskOverflow::kSavedName).string() +
                                              "; they are filed first at the next start");
        }
      } catch (const std::system_error& e) {
        d_.log->Log(LogLevel::kError, std::string("the overflow file could not be saved (") + e.what() +
                                          "): committing its frames instead");
      }
    }
    d_.writer_thread.join();
    d_.cache->SendReplies();
  }

  int Finish() {
    d_.reporter.reset();
    d_.pull.close();
    d_.pub.close();
    d_.cache.reset();
    for (const auto& path : d_.own_paths) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
    d_.log->Log(LogLevel::kInfo, saved_frames_ == 0
                                     ? std::string("stopped; everything read was committed")
                                     : "stopped; everything read was committed, except the " +
                                           std::to_string(saved_frames_) + " frames saved for the next start");
    return kExitOk;
  }

  Daemon& d_;
  const std::chrono::steady_clock::time_point started_;
  std::size_t saved_frames_ = 0;
};

int Run(const Args& args, std::ostream& err) {
  auto daemon = std::make_unique<Daemon>();
  if (auto code = Start(args, err, *daemon)) return *code;
  Loop(*daemon);
  return Stop(*daemon).Run();
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Args args;
  if (auto code = ParseArgs(argc, argv, args, out, err)) return *code;
  try {
    return Run(args, err);
  } catch (const StartupError& e) {
    err << "brine-master: " << e.what() << "\n";
    return e.code();
  } catch (const StoreHeld& e) {
    err << "brine-master: " << e.what() << "\n";
    return kExitUsage;
  } catch (const BusConflict& e) {
    err << "brine-master: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "brine-master: " << e.what() << "\n";
    return kExitRuntime;
  }
}

}  // namespace brine::master
