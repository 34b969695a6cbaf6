// ingest_bench: a real brine-master fed at full speed, side by side with a
// fixed baseline; then the same master on a store that already holds ~10M
// returns, and the send-to-visible latency at a steady rate.
//
// brine: starts build/bin/brine-master on a temp config, a C++ sender pushes a
// Salt-like stream over the ipc bus as fast as ZeroMQ takes it (per job the
// bare-jid event, the `new` event and 10 returns of ~400 bytes of JSON from
// 1,000 interleaved minions), and the clock stops when the master's counters
// (committed with the data) show every frame. A thread polls those counters
// every 20 ms, so the rate is also reported per window of --window events
// (sustained or not). Also: the master's peak RSS (VmHWM) and the bytes on
// disk per event against the JSON sent.
//
// baseline: the same stream inserted by a minimal prepared-statement loop
// (WAL, synchronous=NORMAL, 1,000-row transactions, default cache) into a
// fixed layout with no secondary index:
//   jids(jid TEXT PRIMARY KEY, load TEXT NOT NULL)
//   salt_returns(fun, jid, return, id, success, full_ret, alter_time)
//   salt_events(id INTEGER PRIMARY KEY, tag, data, master_id, alter_time)
// (This program speaks SQL itself only to build that baseline, to read the
// master's counters and to count the returns of a --prefilled store.)
//
// prefilled (--prefilled DIR): DIR/cache/brine.sqlite (query_bench's store:
// 1M jobs, 10M returns) is copied and the first --window events of the stream
// are sent to a master on the copy; its rate is set beside the first window of
// the run on the empty store.
//
// queries (--queries 0 to skip): a fresh master fed the stream's first
// --window events while one thread runs brine-run as an operator would, back to
// back: jobs.list_jobs search_function=cmd.* limit=50, then jobs.lookup_jid of
// the first job, in turn, output to a file. Its rate is set beside the first
// window of the run without them (the same events into an empty store), with
// the number of queries; a query that fails (busy, locked, any exit code but 0)
// fails the bench. reliability_test checks that none fails; what they cost
// ingest is this figure, not a test's.
//
// latency (--latency SECONDS, 0 to skip): a fresh master fed at a steady
// --latency-rate events/s; the last return of every 5th job is a sample. A
// return is visible when the store API's GetJid (the read behind
// jobs.lookup_jid, on a read-only connection of this process) lists its
// minion. The store API rather than a brine-run process per check: starting
// brine-run costs milliseconds, which would blur a figure whose target is
// 150 ms and could not keep up with 167 samples/s; brine-run's own cost for
// lookup_jid is query_bench's figure. Commits are in arrival order, so one
// thread polls only the oldest pending sample (about every millisecond) and,
// once it is visible, goes straight to the next; a figure is thus at most a
// poll interval plus one GetJid late.
//
// latency beside brine.sql (--latency-sql 1): the latency run again, on a
// fresh master, while one thread runs `brine-run brine.sql` back to back (a
// one-hour failed_returns window, then one job's returns through
// salt_returns, in turn): what ad-hoc SQL on a live store adds to the commit
// lag (issue 27's target: < 100 ms at p99 at 10,000 events/s).
//
// latency beside browsers (--latency-web N): the latency run again, on a
// fresh master with brine.web_port: 0, while a brine-web process on its config
// serves N browsers: each holds an SSE stream on /events/stream (drained as it
// comes) and loads a page every 3 s (/, /jobs, /events, /minions, /failures,
// one job, in turn; the loads spread evenly over the browsers): what open
// browsers add to the commit lag (issue 28's target: 20 browsers, < 100 ms at
// p99 at 10,000 events/s).
//
// attached (--modern-bus 1): the same stream through a modern Salt master's
// bus to a brine-master with brine.bus: attach (IngestAttached), beside the
// bound run (issue 29's target: at least 0.9 x).
//
// usage: ingest_bench [--events N | --jobs N] [--window N] [--minions N] [--modern-bus 0|1]
//                     [--prefilled DIR] [--queries 0|1] [--latency SECONDS] [--latency-rate N]
//                     [--latency-sql 0|1] [--latency-web N]
//                     [--bin DIR] [--keep DIR]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include <zmq.hpp>

#include "bench_support.h"
#include "http_client.h"
#include "event_stream.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"
#include "brine/wire/salt_stream.h"

namespace {

using brine::bench::BuildStream;
using brine::bench::Counter;
using brine::bench::Median;
using brine::bench::PeakRssKib;
using brine::bench::RunOnce;
using brine::bench::Sample;
using brine::bench::Stream;

using brine::Value;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kEventsPerJob = 12;  // bare jid + new + 10 returns

struct Args {
  long events = 1200000;
  long window = 0;  // 0: 1,000,000, or a fifth of --events when that is less
  bool modern_bus = false;  // also the same stream through an attached master (IngestAttached)
  int minions = 1000;
  int returns_per_job = 10;
  fs::path prefilled;
  bool queries = true;
  double latency_s = 30;
  int latency_rate = 10000;
  bool latency_sql = false;
  int latency_web = 0;  // browsers beside the latency run (0: no such run)
  fs::path bin = fs::path(BRINE_BIN_DIR);
  fs::path keep;
};

// The master's counters, read on one read-only connection (opened once the
// store exists); 0 until then.
class Counters {
 public:
  explicit Counters(fs::path db) : path_(std::move(db)) {}
  std::int64_t Get(const char* name) {
    try {
      if (!db_) {
        if (!fs::exists(path_)) return 0;
        db_.emplace(path_.string(), SQLite::OPEN_READONLY, 5000);
      }
      SQLite::Statement q(*db_, "SELECT value FROM brine_counters WHERE name = ?");
      q.bind(1, name);
      return q.executeStep() ? q.getColumn(0).getInt64() : 0;
    } catch (const std::exception&) {
      db_.reset();
      return 0;
    }
  }

 private:
  fs::path path_;
  std::optional<SQLite::Database> db_;
};

struct Master {
  pid_t pid = -1;
  fs::path dir;
  [[nodiscard]] fs::path db() const { return dir / "cache" / "brine.sqlite"; }
  [[nodiscard]] std::string pull() const { return "ipc://" + (dir / "sock" / "master_event_pull.ipc").string(); }
};

Master StartMaster(const Args& args, const fs::path& dir, const std::string& extra = "") {
  return Master{brine::bench::StartBenchMaster(args.bin / "brine-master", dir, "bench_master", extra), dir};
}

// SIGTERM (the master drains and commits), then checkpoints the WAL into the
// file so its size is the store's.
void StopMaster(const Master& m) {
  kill(m.pid, SIGTERM);
  int status = 0;
  waitpid(m.pid, &status, 0);
  SQLite::Database d(m.db().string(), SQLite::OPEN_READWRITE);
  d.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

struct IngestResult {
  std::int64_t sent = 0;
  std::int64_t stored = 0;   // archived events (counter)
  std::int64_t returns = 0;  // returns in the job cache (counter)
  double seconds = 0;
  struct WindowEnd {
    std::int64_t events;  // frames committed at the end of the window
    double s;             // since the first send
  };
  std::vector<WindowEnd> windows;
  long rss_kib = 0;
  std::uintmax_t bytes = 0;
};

// Sends the first `count` frames at full speed to a running master and waits
// until its counters show them committed.
// `send(i)` sends frame i; nullptr: PUSH to the master's bound bus.
IngestResult Ingest(const Master& master, const Stream& stream, std::size_t count, long window,
                    const std::function<void(std::size_t)>& send = nullptr) {
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  // Bounded, so the sender waits for the master instead of queueing gigabytes.
  push.set(zmq::sockopt::sndhwm, 100000);
  push.set(zmq::sockopt::linger, -1);
  if (!send) push.connect(master.pull());
  IngestResult r;
  std::atomic<bool> done{false};
  const auto start = SteadyClock::now();
  std::thread poller([&] {
    Counters counters(master.db());
    std::int64_t next = window;
    const auto total = static_cast<std::int64_t>(count);
    for (;;) {
      const std::int64_t received = counters.Get("received");
      const double t = std::chrono::duration<double>(SteadyClock::now() - start).count();
      while (next <= received && next <= total) {
        r.windows.push_back({next, t});
        next += window;
      }
      if (received >= total) {
        // A remainder under half a window joins the last window, else it is one.
        if (total % window != 0) {
          if (r.windows.empty() || total % window >= window / 2) r.windows.push_back({total, t});
          else r.windows.back() = {total, t};
        }
        r.seconds = t;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    r.stored = counters.Get("stored");
    r.returns = counters.Get("returns");
    done = true;
  });
  for (std::size_t i = 0; i < count; ++i) {
    if (send) {
      send(i);
      continue;
    }
    const auto f = stream.frame(i);
    push.send(zmq::buffer(f.data(), f.size()), zmq::send_flags::none);
  }
  if (send) send(count);  // count: flush what is buffered
  poller.join();
  r.sent = static_cast<std::int64_t>(count);
  r.rss_kib = PeakRssKib(master.pid);
  return r;
}

// The same stream through a modern Salt master's bus (brine.bus: attach):
// the bench binds <dir>/salt/master_event_pub.ipc as the master's
// publisher, starts brine-master attached to it, and writes the frames at
// full speed in `framing`, blocking when brine does not keep up (a real
// master would drop it; the rate is what brine reads and commits).
IngestResult IngestAttached(const Args& args, const fs::path& dir, const Stream& stream, long window,
                            brine::wire::StreamFraming framing) {
  const fs::path pub = dir / "salt" / "master_event_pub.ipc";
  fs::create_directories(pub.parent_path());
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, pub.c_str(), sizeof addr.sun_path - 1);
  if (listener < 0 || ::bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 4) != 0) {
    std::fprintf(stderr, "ingest_bench: cannot bind %s\n", pub.c_str());
    std::exit(1);
  }
  const Master m{brine::bench::StartBenchMaster(args.bin / "brine-master", dir, "bench_master",
                                                "brine.bus: attach\nsock_dir: " + (dir / "salt").string() + "\n"),
                 dir};
  const int reader = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  std::string buffer;
  const auto flush = [&] {
    std::string_view left = buffer;
    while (!left.empty()) {
      const ssize_t w = ::send(reader, left.data(), left.size(), MSG_NOSIGNAL);
      if (w <= 0) {
        std::fprintf(stderr, "ingest_bench: the attached brine-master went away\n");
        std::exit(1);
      }
      left.remove_prefix(static_cast<std::size_t>(w));
    }
    buffer.clear();
  };
  IngestResult r = Ingest(m, stream, stream.size(), window, [&](std::size_t i) {
    if (i < stream.size()) buffer += brine::wire::EncodeStreamFrame(stream.frame(i), {.framing = framing});
    if (buffer.size() >= 64 * 1024 || i >= stream.size()) flush();
  });
  ::close(reader);
  ::close(listener);
  StopMaster(m);
  return r;
}

// brine-run back to back on `master`'s config until Stop(), each of
// `commands` (brine-run's arguments after the config) in turn, output to a
// file. A query that fails ends the loop (Stop() then says which); the bench
// stops its master and fails.
class QueryLoop {
 public:
  QueryLoop(const fs::path& exe, const Master& master, std::vector<std::vector<std::string>> commands)
      : thread_([this, exe = exe.string(), conf = (master.dir / "conf").string(),
                 out = (master.dir / "query.out").string(), commands = std::move(commands)] {
          for (std::size_t i = 0; !stop_; ++i) {
            const auto& command = commands[i % commands.size()];
            std::vector<std::string> argv = {exe, "-c", conf, "--out=json"};
            argv.insert(argv.end(), command.begin(), command.end());
            const int status = Run(argv, out);
            if (status != 0) {
              failure_ = command.front() + " exited with status " + std::to_string(status);
              return;
            }
            ++count_;
          }
        }) {}
  // The queries run, or the one that failed.
  std::pair<int, std::string> Stop() {
    stop_ = true;
    thread_.join();
    return {count_, failure_};
  }

 private:
  // The exit code, or 128 + the signal that ended it.
  static int Run(const std::vector<std::string>& argv, const std::string& out_file) {
    int status = 0;
    waitpid(brine::bench::Spawn(argv, out_file), &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> count_{0};
  std::string failure_;
  std::thread thread_;
};

// N browsers on a brine-web process: each logs in, holds an SSE stream on
// /events/stream (drained as it comes, as a browser does) and loads a page
// every kBrowserPageS seconds, in turn /, /jobs, /events, /minions, /failures
// and one job; the loads are spread evenly over the browsers.
class Browsers {
 public:
  static constexpr double kBrowserPageS = 3.0;
  Browsers(int port, const std::string& token, int n, const std::string& jid) {
    for (int i = 0; i < n; ++i) {
      sessions_.push_back(brine::bench::HttpLogin(port, token));
      if (sessions_.back().empty()) {
        std::fprintf(stderr, "ingest_bench: brine-web refused the login token\n");
        std::exit(1);
      }
      const int fd = brine::bench::ConnectLoopback(port);
      brine::bench::SendGet(fd, "/events/stream", sessions_.back(), false);
      fds_.push_back({fd, POLLIN, 0});
    }
    drainer_ = std::thread([this] {
      char buf[65536];
      while (!stop_) {
        if (::poll(fds_.data(), fds_.size(), 100) <= 0) continue;
        for (auto& p : fds_) {
          if (p.revents & POLLIN) {
            const ssize_t got = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
            if (got > 0) stream_bytes_ += got;
          }
        }
      }
    });
    loader_ = std::thread([this, port, jid] {
      const std::vector<std::string> pages = {"/", "/jobs", "/events", "/minions", "/failures", "/jobs/" + jid};
      const auto every = std::chrono::duration<double>(kBrowserPageS / static_cast<double>(sessions_.size()));
      auto next = SteadyClock::now();
      for (std::size_t i = 0; !stop_; ++i) {
        const auto t0 = SteadyClock::now();
        const std::string reply = brine::bench::HttpGet(port, pages[(i / sessions_.size()) % pages.size()],
                                                        sessions_[i % sessions_.size()]);
        ms_.push_back(std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
        if (!reply.starts_with("HTTP/1.1 200")) ++failed_;
        next += std::chrono::duration_cast<SteadyClock::duration>(every);
        std::this_thread::sleep_until(next);
      }
    });
  }
  // Stops the loads and closes the streams: the page times (ms) and the bytes
  // the streams brought.
  std::pair<std::vector<double>, std::int64_t> Stop() {
    stop_ = true;
    loader_.join();
    drainer_.join();
    for (const auto& p : fds_) ::close(p.fd);
    if (failed_ > 0) {
      std::fprintf(stderr, "ingest_bench: %d of %zu page loads on brine-web were not answered 200\n", failed_.load(),
                   ms_.size());
      std::exit(1);
    }
    std::sort(ms_.begin(), ms_.end());
    return {ms_, stream_bytes_};
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::string> sessions_;
  std::vector<pollfd> fds_;
  std::vector<double> ms_;  // the loader's
  std::int64_t stream_bytes_ = 0;  // the drainer's
  std::atomic<int> failed_{0};     // page loads not answered 200
  std::thread drainer_;
  std::thread loader_;
};

// brine-web on a master's config (brine.web_port: 0): its pid, port and token
// once it listens.
struct Web {
  pid_t pid = -1;
  int port = 0;
  std::string token;
};

Web StartWeb(const fs::path& exe, const fs::path& master_dir) {
  Web w;
  w.pid = brine::bench::Spawn({exe.string(), "-c", (master_dir / "conf").string()}, master_dir / "brine-web.out");
  const fs::path token_file = master_dir / "sock" / "brine_web.token";
  const fs::path port_file = master_dir / "sock" / "brine_web.token.port";
  for (int i = 0; i < 1000 && !(fs::exists(port_file) && fs::file_size(port_file) > 0); ++i) {
    int status = 0;
    if (waitpid(w.pid, &status, WNOHANG) == w.pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream port_in(port_file);
  std::ifstream token_in(token_file);
  if (!(port_in >> w.port) || !(token_in >> w.token)) {
    std::fprintf(stderr, "ingest_bench: brine-web did not start (see %s)\n", (master_dir / "brine-web.out").c_str());
    std::exit(1);
  }
  return w;
}

double RunBaseline(const Stream& stream, const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path db = dir / "baseline.sqlite";
  SQLite::Database d(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  d.exec("PRAGMA journal_mode = WAL");
  d.exec("PRAGMA synchronous = NORMAL");
  d.exec(
      "CREATE TABLE jids (jid TEXT PRIMARY KEY, load TEXT NOT NULL);"
      "CREATE TABLE salt_returns (fun TEXT, jid TEXT, return TEXT, id TEXT, success TEXT, full_ret TEXT,"
      " alter_time TEXT);"
      "CREATE TABLE salt_events (id INTEGER PRIMARY KEY, tag TEXT, data TEXT, master_id TEXT, alter_time TEXT);");
  SQLite::Statement job(d, "INSERT OR IGNORE INTO jids (jid, load) VALUES (?, ?)");
  SQLite::Statement ret(d,
                        "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret, alter_time)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)");
  SQLite::Statement ev(d, "INSERT INTO salt_events (tag, data, master_id, alter_time) VALUES (?, ?, ?, ?)");
  const auto start = SteadyClock::now();
  int rows = 0;
  d.exec("BEGIN");
  for (std::size_t i = 0; i < stream.size(); ++i) {
    // The same work brine does per frame: decode it, make JSON.
    auto decoded = brine::wire::DecodeFrame(stream.frame(i));
    const auto& event = std::get<brine::wire::DecodedEvent>(decoded);
    const std::string data = brine::ToJson(event.data);
    const std::string now = brine::FormatSqliteTime(brine::SystemClock().Now());
    ev.bind(1, event.tag);
    ev.bind(2, data);
    ev.bind(3, "bench_master");
    ev.bind(4, now);
    ev.exec();
    ev.reset();
    ++rows;
    if (event.tag.find("/new") != std::string::npos) {
      job.bind(1, *event.data.FindString("jid"));
      job.bind(2, data);
      job.exec();
      job.reset();
      ++rows;
    } else if (event.tag.find("/ret/") != std::string::npos) {
      ret.bind(1, *event.data.FindString("fun"));
      ret.bind(2, *event.data.FindString("jid"));
      ret.bind(3, brine::ToJson(*event.data.Find("return")));
      ret.bind(4, *event.data.FindString("id"));
      ret.bind(5, "True");
      ret.bind(6, data);
      ret.bind(7, now);
      ret.exec();
      ret.reset();
      ++rows;
    }
    if (rows >= 1000) {
      d.exec("COMMIT");
      d.exec("BEGIN");
      rows = 0;
    }
  }
  d.exec("COMMIT");
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

struct LatencyResult {
  std::vector<double> ms;  // sorted
  std::size_t lost = 0;    // samples not visible 30 s after they were sent
  double seconds = 0;
  std::int64_t received = 0;
};

// Sends `stream` at `rate` events/s to a running master while a thread
// measures when each sample becomes visible through the store API.
LatencyResult MeasureLatency(const Master& master, const Stream& stream, int rate) {
  struct Pending {
    std::size_t sample;
    SteadyClock::time_point sent;
  };
  std::mutex mu;
  std::deque<Pending> pending;  // guarded by mu
  std::atomic<bool> sending{true};
  LatencyResult r;
  std::thread poller([&] {
    std::unique_ptr<brine::store::Store> store;
    while (!store) {
      try {
        store = brine::store::OpenStore(master.db(), {.access = brine::store::OpenOptions::Access::kReadOnly});
      } catch (const std::exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    for (;;) {
      std::optional<Pending> next;
      {
        std::lock_guard lock(mu);
        if (!pending.empty()) next = pending.front();
      }
      if (!next) {
        if (!sending) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      const auto& s = stream.samples[next->sample];
      const Value ret = store->GetJid(s.jid);
      const auto now = SteadyClock::now();
      const bool visible = ret.is_map() && ret.Find(s.minion) != nullptr;
      if (visible || now - next->sent > std::chrono::seconds(30)) {
        if (visible) r.ms.push_back(std::chrono::duration<double, std::milli>(now - next->sent).count());
        else ++r.lost;
        std::lock_guard lock(mu);
        pending.pop_front();
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, -1);
  push.connect(master.pull());
  const auto start = SteadyClock::now();
  std::size_t next_sample = 0;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    // Holds the i-th event until i / rate s after the start, sleeping only when
    // more than a millisecond ahead: a steady rate at millisecond grain.
    const auto due = start + std::chrono::duration_cast<SteadyClock::duration>(
                                 std::chrono::duration<double>(static_cast<double>(i) / rate));
    if (due - SteadyClock::now() > std::chrono::milliseconds(1)) std::this_thread::sleep_until(due);
    const auto f = stream.frame(i);
    push.send(zmq::buffer(f.data(), f.size()), zmq::send_flags::none);
    if (next_sample < stream.samples.size() && stream.samples[next_sample].index == i) {
      std::lock_guard lock(mu);
      pending.push_back({next_sample++, SteadyClock::now()});
    }
  }
  r.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  sending = false;
  poller.join();
  Counters counters(master.db());
  r.received = counters.Get("received");
  std::sort(r.ms.begin(), r.ms.end());
  return r;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return -1;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// Each window's rate in events/s.
std::vector<double> WindowRates(const IngestResult& r) {
  std::vector<double> rates;
  IngestResult::WindowEnd prev{0, 0};
  for (const auto& w : r.windows) {
    rates.push_back(static_cast<double>(w.events - prev.events) / std::max(1e-9, w.s - prev.s));
    prev = w;
  }
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--events") args.events = std::stol(argv[i + 1]);
    else if (k == "--jobs") args.events = std::stol(argv[i + 1]) * kEventsPerJob;
    else if (k == "--window") args.window = std::stol(argv[i + 1]);
    else if (k == "--minions") args.minions = std::stoi(argv[i + 1]);
    else if (k == "--prefilled") args.prefilled = argv[i + 1];
    else if (k == "--queries") args.queries = std::stoi(argv[i + 1]) != 0;
    else if (k == "--latency") args.latency_s = std::stod(argv[i + 1]);
    else if (k == "--latency-rate") args.latency_rate = std::stoi(argv[i + 1]);
    else if (k == "--latency-sql") args.latency_sql = std::stoi(argv[i + 1]) != 0;
    else if (k == "--latency-web") args.latency_web = std::stoi(argv[i + 1]);
    else if (k == "--bin") args.bin = argv[i + 1];
    else if (k == "--keep") args.keep = argv[i + 1];
    else if (k == "--modern-bus") args.modern_bus = std::stoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "ingest_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const long jobs = std::max(1L, (args.events + kEventsPerJob - 1) / kEventsPerJob);  // whole jobs
  const long window = args.window > 0 ? args.window : std::min(1000000L, std::max(1L, jobs * kEventsPerJob / 5));
  if (!args.prefilled.empty() && !fs::exists(args.prefilled / "cache" / "brine.sqlite")) {
    std::fprintf(stderr, "ingest_bench: --prefilled %s: no cache/brine.sqlite there (query_bench builds one)\n",
                 args.prefilled.c_str());
    return 2;
  }
  const fs::path dir = args.keep.empty() ? fs::temp_directory_path() / ("brine-ingest-bench-" + std::to_string(getpid()))
                                         : args.keep;
  fs::remove_all(dir);
  std::fprintf(stderr, "building the stream (%ld jobs)...\n", jobs);
  const Stream stream = BuildStream(jobs, args.minions, args.returns_per_job, brine::SystemClock().Now());
  const double n = static_cast<double>(stream.size());
  bool lost = false;

  std::fprintf(stderr, "brine-master...\n");
  IngestResult brine;
  {
    const Master m = StartMaster(args, dir / "brine");
    brine = Ingest(m, stream, stream.size(), window);
    StopMaster(m);
    brine.bytes = fs::file_size(m.db());
    if (args.keep.empty()) fs::remove_all(dir / "brine");
  }
  // Every frame archived and every return in the job cache, or the run failed.
  const auto expected_returns = static_cast<std::int64_t>(jobs) * args.returns_per_job;
  if (brine.stored != brine.sent || brine.returns != expected_returns) {
    std::fprintf(stderr, "ingest_bench: LOST DATA: stored %lld of %lld events, %lld of %lld returns\n",
                 static_cast<long long>(brine.stored), static_cast<long long>(brine.sent),
                 static_cast<long long>(brine.returns), static_cast<long long>(expected_returns));
    lost = true;
  }
  std::optional<IngestResult> attached;
  if (args.modern_bus) {
    std::fprintf(stderr, "attached brine-master (a modern bus, bare frames)...\n");
    attached = IngestAttached(args, dir / "attached", stream, window, brine::wire::StreamFraming::kPlain);
    if (args.keep.empty()) fs::remove_all(dir / "attached");
    if (attached->stored != attached->sent) {
      std::fprintf(stderr, "ingest_bench: LOST DATA attached: stored %lld of %lld events\n",
                   static_cast<long long>(attached->stored), static_cast<long long>(attached->sent));
      lost = true;
    }
  }
  std::fprintf(stderr, "baseline...\n");
  const double base = RunBaseline(stream, dir / "baseline");
  const auto base_bytes = fs::file_size(dir / "baseline" / "baseline.sqlite");
  if (args.keep.empty()) fs::remove_all(dir / "baseline");

  std::optional<IngestResult> pre;
  std::int64_t pre_returns_before = 0;
  const std::size_t pre_count = std::min<std::size_t>(static_cast<std::size_t>(window), stream.size());
  if (!args.prefilled.empty()) {
    const fs::path from = args.prefilled / "cache" / "brine.sqlite";
    std::fprintf(stderr, "prefilled: copying %s...\n", from.c_str());
    fs::create_directories(dir / "prefilled" / "cache");
    fs::copy_file(from, dir / "prefilled" / "cache" / "brine.sqlite");
    {
      SQLite::Database d((dir / "prefilled" / "cache" / "brine.sqlite").string(), SQLite::OPEN_READONLY);
      pre_returns_before = d.execAndGet("SELECT count(*) FROM salt_returns").getInt64();
    }
    std::fprintf(stderr, "prefilled: %lld returns stored; brine-master...\n", static_cast<long long>(pre_returns_before));
    const Master m = StartMaster(args, dir / "prefilled");
    pre = Ingest(m, stream, pre_count, static_cast<long>(pre_count));
    StopMaster(m);
    if (args.keep.empty()) fs::remove_all(dir / "prefilled");
    if (pre->stored != pre->sent) {
      std::fprintf(stderr, "ingest_bench: LOST DATA on the prefilled store: stored %lld of %lld events\n",
                   static_cast<long long>(pre->stored), static_cast<long long>(pre->sent));
      lost = true;
    }
  }

  std::optional<IngestResult> queried;
  int query_count = 0;
  std::string query_failure;
  if (args.queries) {
    std::fprintf(stderr, "queries: %zu events with a brine-run loop...\n", pre_count);
    const Master m = StartMaster(args, dir / "queries");
    // brine-run from --bin when it has one (a wrapper dir may hold brine-master alone).
    const fs::path run = fs::exists(args.bin / "brine-run") ? args.bin / "brine-run" : fs::path(BRINE_BIN_DIR) / "brine-run";
    {
      QueryLoop loop(run, m,
                     {{"jobs.list_jobs", "search_function=cmd.*", "limit=50"},
                      {"jobs.lookup_jid", stream.samples.front().jid}});
      queried = Ingest(m, stream, pre_count, static_cast<long>(pre_count));
      std::tie(query_count, query_failure) = loop.Stop();
    }
    StopMaster(m);
    if (!query_failure.empty()) {
      std::fprintf(stderr, "ingest_bench: a query beside ingest failed: %s\n", query_failure.c_str());
      lost = true;
    }
    if (args.keep.empty()) fs::remove_all(dir / "queries");
    if (queried->stored != queried->sent) {
      std::fprintf(stderr, "ingest_bench: LOST DATA with the query loop: stored %lld of %lld events\n",
                   static_cast<long long>(queried->stored), static_cast<long long>(queried->sent));
      lost = true;
    }
  }

  // A latency run on a fresh master; beside a brine.sql loop (the queries
  // run, or the one that failed, in sql_count/sql_failure), or beside
  // --latency-web browsers on a brine-web process (their page times and stream
  // bytes in web_pages_ms/web_stream_bytes).
  enum class Beside { kNothing, kSql, kWeb };
  int sql_count = 0;
  std::string sql_failure;
  std::vector<double> web_pages_ms;
  std::int64_t web_stream_bytes = 0;
  const auto latency_run = [&](const char* name, Beside beside) {
    const long lat_jobs = std::max(1L, static_cast<long>(args.latency_s * args.latency_rate) / kEventsPerJob);
    std::fprintf(stderr, "%s: %ld jobs at %d events/s...\n", name, lat_jobs, args.latency_rate);
    const Stream ls = BuildStream(lat_jobs, args.minions, args.returns_per_job,
                                  brine::SystemClock().Now() + std::chrono::hours(1));
    const Master m = StartMaster(args, dir / name, beside == Beside::kWeb ? "brine.web_port: 0\n" : "");
    // brine-run and brine-web from --bin when there (a wrapper dir may hold brine-master alone).
    const auto binary = [&](const char* exe) {
      return fs::exists(args.bin / exe) ? args.bin / exe : fs::path(BRINE_BIN_DIR) / exe;
    };
    LatencyResult r;
    if (beside == Beside::kSql) {
      QueryLoop loop(binary("brine-run"), m,
                     {{"brine.sql", "SELECT jid, minion, fun, retcode FROM failed_returns"
                                    " WHERE recv_time >= datetime('now', '-1 hour')"},
                      {"brine.sql", "SELECT id, retcode, seconds_after_start FROM salt_returns WHERE jid = :jid",
                       "jid=" + ls.samples.front().jid}});
      r = MeasureLatency(m, ls, args.latency_rate);
      std::tie(sql_count, sql_failure) = loop.Stop();
    } else if (beside == Beside::kWeb) {
      const Web web = StartWeb(binary("brine-web"), m.dir);
      {
        Browsers browsers(web.port, web.token, args.latency_web, ls.samples.front().jid);
        r = MeasureLatency(m, ls, args.latency_rate);
        std::tie(web_pages_ms, web_stream_bytes) = browsers.Stop();
      }
      kill(web.pid, SIGTERM);
      int status = 0;
      waitpid(web.pid, &status, 0);
    } else {
      r = MeasureLatency(m, ls, args.latency_rate);
    }
    // The counters catch up within a flush interval of the last send.
    Counters counters(m.db());
    for (int i = 0; i < 500 && counters.Get("received") < static_cast<std::int64_t>(ls.size()); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    r.received = counters.Get("received");
    StopMaster(m);
    if (args.keep.empty()) fs::remove_all(dir / name);
    if (r.lost > 0 || r.received != static_cast<std::int64_t>(ls.size())) {
      std::fprintf(stderr, "ingest_bench: LOST DATA in the %s run: %zu samples never visible, %lld of %zu received\n",
                   name, r.lost, static_cast<long long>(r.received), ls.size());
      lost = true;
    }
    return r;
  };
  std::optional<LatencyResult> lat;
  std::optional<LatencyResult> lat_sql;
  std::optional<LatencyResult> lat_web;
  if (args.latency_s > 0) lat = latency_run("latency", Beside::kNothing);
  if (args.latency_s > 0 && args.latency_sql) {
    lat_sql = latency_run("latency-sql", Beside::kSql);
    if (!sql_failure.empty()) {
      std::fprintf(stderr, "ingest_bench: a brine.sql query beside ingest failed: %s\n", sql_failure.c_str());
      lost = true;
    }
  }
  if (args.latency_s > 0 && args.latency_web > 0) lat_web = latency_run("latency-web", Beside::kWeb);

  const double brine_rate = n / brine.seconds;
  const auto rates = WindowRates(brine);
  std::printf("ingest_bench: %zu events (%ld jobs x (bare + new + %d returns)), %d minions\n", stream.size(), jobs,
              args.returns_per_job, args.minions);
  std::printf("  %-44s %12s %10s\n", "", "events/s", "seconds");
  std::printf("  %-44s %12.0f %10.2f\n", "brine-master (send -> committed)", brine_rate, brine.seconds);
  std::printf("  %-44s %12.0f %10.2f\n", "baseline (prepared loop, no index)", n / base, base);
  std::printf("  brine / baseline: %.2f\n", brine_rate / (n / base));
  std::printf("  per window of %ld events:", window);
  for (const double r : rates) std::printf(" %.0f", r);
  if (!rates.empty()) {
    std::printf("  (min %.0f, last / first %.2f)", *std::min_element(rates.begin(), rates.end()),
                rates.back() / rates.front());
  }
  std::printf("\n");
  std::printf("  master peak RSS: %.1f MiB\n", static_cast<double>(brine.rss_kib) / 1024.0);
  std::printf("  disk: brine %.2f x JSON sent (%.0f B/event), baseline %.2f x\n",
              static_cast<double>(brine.bytes) / static_cast<double>(stream.json_bytes),
              static_cast<double>(brine.bytes) / n,
              static_cast<double>(base_bytes) / static_cast<double>(stream.json_bytes));
  std::printf("{\"bench\":\"ingest\",\"events\":%zu,\"brine_events_per_s\":%.0f,\"baseline_events_per_s\":%.0f,"
              "\"ratio\":%.3f,\"master_peak_rss_mib\":%.1f,\"disk_over_json\":%.3f,\"window\":%ld,\"window_events_per_s\":[",
              stream.size(), brine_rate, n / base, brine_rate / (n / base),
              static_cast<double>(brine.rss_kib) / 1024.0,
              static_cast<double>(brine.bytes) / static_cast<double>(stream.json_bytes), window);
  for (std::size_t k = 0; k < rates.size(); ++k) std::printf("%s%.0f", k ? "," : "", rates[k]);
  std::printf("]}\n");
  if (attached) {
    const double a_rate = n / attached->seconds;
    std::printf("  %-44s %12.0f %10.2f\n", "brine-master attached (modern bus, bare)", a_rate, attached->seconds);
    std::printf("  attached / bound: %.2f (target >= 0.9)\n", a_rate / brine_rate);
    std::printf("{\"bench\":\"ingest_attached\",\"events\":%zu,\"events_per_s\":%.0f,\"over_bound\":%.3f,"
                "\"master_peak_rss_mib\":%.1f}\n",
                stream.size(), a_rate, a_rate / brine_rate, static_cast<double>(attached->rss_kib) / 1024.0);
  }
  if (pre) {
    const double pre_rate = static_cast<double>(pre->sent) / pre->seconds;
    // The same events as the empty store's first window; the whole run's rate beside it.
    std::printf("  on a store already holding %lld returns: first %zu events at %.0f events/s = %.2f x the empty"
                " store's first window, %.2f x its whole run (peak RSS %.1f MiB)\n",
                static_cast<long long>(pre_returns_before), pre_count, pre_rate, pre_rate / rates.front(),
                pre_rate / brine_rate, static_cast<double>(pre->rss_kib) / 1024.0);
    std::printf("{\"bench\":\"ingest_prefilled\",\"returns_before\":%lld,\"events\":%zu,\"events_per_s\":%.0f,"
                "\"over_empty_first_window\":%.3f,\"over_empty_run\":%.3f,\"master_peak_rss_mib\":%.1f}\n",
                static_cast<long long>(pre_returns_before), pre_count, pre_rate, pre_rate / rates.front(),
                pre_rate / brine_rate, static_cast<double>(pre->rss_kib) / 1024.0);
  }
  if (queried && query_failure.empty()) {
    const double q_rate = static_cast<double>(queried->sent) / queried->seconds;
    std::printf("  with a brine-run loop (list_jobs, lookup_jid; %d queries, none failed): first %zu events at %.0f"
                " events/s = %.2f x the first window without it\n",
                query_count, pre_count, q_rate, q_rate / rates.front());
    std::printf("{\"bench\":\"ingest_queries\",\"events\":%zu,\"queries\":%d,\"events_per_s\":%.0f,"
                "\"over_first_window\":%.3f}\n",
                pre_count, query_count, q_rate, q_rate / rates.front());
  }
  if (lat) {
    std::printf("  send-to-visible at %d events/s for %.0f s (%zu samples, GetJid polled): p50 %.1f ms, p99 %.1f ms,"
                " max %.1f ms\n",
                args.latency_rate, lat->seconds, lat->ms.size(), Percentile(lat->ms, 0.5), Percentile(lat->ms, 0.99),
                lat->ms.empty() ? -1.0 : lat->ms.back());
    std::printf("{\"bench\":\"ingest_latency\",\"rate\":%d,\"seconds\":%.1f,\"samples\":%zu,\"p50_ms\":%.2f,"
                "\"p99_ms\":%.2f,\"max_ms\":%.2f}\n",
                args.latency_rate, lat->seconds, lat->ms.size(), Percentile(lat->ms, 0.5), Percentile(lat->ms, 0.99),
                lat->ms.empty() ? -1.0 : lat->ms.back());
  }
  if (lat && lat_sql && sql_failure.empty()) {
    const double p99 = Percentile(lat_sql->ms, 0.99);
    std::printf("  the same beside a brine.sql loop (%d queries, none failed): p50 %.1f ms, p99 %.1f ms, max %.1f ms;"
                " p99 %+.1f ms over the run without it\n",
                sql_count, Percentile(lat_sql->ms, 0.5), p99, lat_sql->ms.empty() ? -1.0 : lat_sql->ms.back(),
                p99 - Percentile(lat->ms, 0.99));
    std::printf("{\"bench\":\"ingest_latency_sql\",\"rate\":%d,\"seconds\":%.1f,\"samples\":%zu,\"queries\":%d,"
                "\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"p99_over_plain_ms\":%.2f}\n",
                args.latency_rate, lat_sql->seconds, lat_sql->ms.size(), sql_count, Percentile(lat_sql->ms, 0.5), p99,
                lat_sql->ms.empty() ? -1.0 : lat_sql->ms.back(), p99 - Percentile(lat->ms, 0.99));
  }
  if (lat && lat_web) {
    const double p99 = Percentile(lat_web->ms, 0.99);
    std::printf("  the same beside %d browsers on brine-web (an SSE stream each, %zu page loads, p50 %.1f ms, p99 %.1f ms;"
                " %.1f MB streamed): p50 %.1f ms, p99 %.1f ms, max %.1f ms; p99 %+.1f ms over the run without them"
                " (target < +100 ms)\n",
                args.latency_web, web_pages_ms.size(), Percentile(web_pages_ms, 0.5), Percentile(web_pages_ms, 0.99),
                static_cast<double>(web_stream_bytes) / 1e6, Percentile(lat_web->ms, 0.5), p99,
                lat_web->ms.empty() ? -1.0 : lat_web->ms.back(), p99 - Percentile(lat->ms, 0.99));
    std::printf("{\"bench\":\"ingest_latency_web\",\"rate\":%d,\"seconds\":%.1f,\"samples\":%zu,\"browsers\":%d,"
                "\"page_loads\":%zu,\"page_p50_ms\":%.2f,\"page_p99_ms\":%.2f,\"stream_bytes\":%lld,"
                "\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"p99_over_plain_ms\":%.2f}\n",
                args.latency_rate, lat_web->seconds, lat_web->ms.size(), args.latency_web, web_pages_ms.size(),
                Percentile(web_pages_ms, 0.5), Percentile(web_pages_ms, 0.99),
                static_cast<long long>(web_stream_bytes), Percentile(lat_web->ms, 0.5), p99,
                lat_web->ms.empty() ? -1.0 : lat_web->ms.back(), p99 - Percentile(lat->ms, 0.99));
  }
  if (args.keep.empty()) fs::remove_all(dir);
  return lost ? 1 : 0;
}
