#include "writer.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <unistd.h>

namespace brine::master {

using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::int64_t kMaintenanceRows = 5000;
constexpr std::int64_t kVacuumPagesPerStep = 2000;
// Bus frames taken per pop: an acknowledged request waits behind at most this
// many (a few ms of filing), and a pop costs one lock.
constexpr std::size_t kBusChunk = 256;
// An idle writer commits its status counters (heartbeat_us, queue_depth)
// this often, in a transaction of their own: the store's readers judge it
// alive by heartbeat_us (brine.stats, brine.health, brine-web).
constexpr auto kHeartbeatInterval = std::chrono::seconds(5);

// Adds what one frame added to the counts (`before` to `after`) to the hour
// it arrived in.
void CountHour(const Counters& before, const Counters& after, Micros received, std::vector<store::HourCounts>& hours) {
  const std::int64_t jobs = after.jobs - before.jobs;
  const std::int64_t returns = after.returns - before.returns;
  const std::int64_t failures = after.failures - before.failures;
  const std::int64_t events = after.stored - before.stored;
  if (jobs == 0 && returns == 0 && failures == 0 && events == 0) return;
  constexpr std::int64_t kHour = 3'600'000'000;
  const std::int64_t us = ToUnixMicros(received);
  const Micros hour = FromUnixMicros((us / kHour - (us % kHour < 0 ? 1 : 0)) * kHour);
  auto it = std::find_if(hours.begin(), hours.end(), [&](const store::HourCounts& h) { return h.hour == hour; });
  if (it == hours.end()) it = hours.insert(hours.end(), store::HourCounts{.hour = hour});
  it->jobs += jobs;
  it->returns += returns;
  it->failures += failures;
  it->events += events;
}

// What the reporter thread sees (live_status.h).
void PublishStatus(LiveStatus* status, const Counters& totals, std::int64_t batches, std::int64_t last_commit_us,
                   std::size_t batch_frames) {
  if (status == nullptr) return;
  status->received = totals.received;
  status->stored = totals.stored;
  status->filtered = totals.filtered;
  status->quarantined = totals.quarantined;
  status->duplicates = totals.duplicates;
  status->returns = totals.returns;
  status->cache_writes = totals.cache_writes;
  status->future_arrivals = totals.future_arrivals;
  status->batches = batches;
  status->last_commit_us = last_commit_us;
  status->batch_frames = static_cast<std::int64_t>(batch_frames);
  status->heartbeat_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

// A counter of a previous run as stored, 0 when absent.
std::int64_t StoredCounter(const Value& mine, const std::string& name) {
  const Value* v = mine.Find(name);
  return v != nullptr && v->kind() == Value::Kind::kInt ? v->as_int() : 0;
}

// One line per retention run at info; a first run since start that removed
// more than half the jobs or events it found at warning.
void LogRetentionRun(Logger& log, const store::CleanResult& run, const store::Store::RowCounts* before_first) {
  if (run.jobs + run.events + run.quarantined + run.bus_gaps == 0) return;
  std::string line = "retention removed " + std::to_string(run.jobs) + " jobs, " + std::to_string(run.returns) +
                     " returns, " + std::to_string(run.events) + " events, " + std::to_string(run.quarantined) +
                     " quarantined frames";
  if (run.bus_gaps > 0) line += ", " + std::to_string(run.bus_gaps) + " bus gaps";
  if (before_first != nullptr && (run.jobs * 2 > before_first->jobs || run.events * 2 > before_first->events)) {
    log.Log(LogLevel::kWarning, line + ": more than half of the " + std::to_string(before_first->jobs) + " jobs and " +
                                    std::to_string(before_first->events) +
                                    " events the store held at start (check keep_jobs_seconds, "
                                    "brine.keep_events_seconds, brine.keep_jobs_by_fun and "
                                    "brine.keep_events_by_tag)");
    return;
  }
  log.Log(LogLevel::kInfo, line);
}

// Adds one step's counts to its pass's.
void AddCounts(store::CleanResult& pass, const store::CleanResult& step) {
  pass.jobs += step.jobs;
  pass.returns += step.returns;
  pass.events += step.events;
  pass.quarantined += step.quarantined;
  pass.bytes += step.bytes;
}

std::string Mib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / 1048576.0);
  return text;
}

bool IsStorageFailure(const std::exception& e) {
  return dynamic_cast<const store::WriteFailedError*>(&e) != nullptr ||
         dynamic_cast<const store::BusyError*>(&e) != nullptr;
}

}  // namespace

Writer::Writer(WriterOptions options, Archiver& archiver, Logger& log, FrameQueue& queue, const Clock& clock,
               AckMailbox& acks)
    : options_(std::move(options)), archiver_(archiver), log_(log), queue_(queue), clock_(clock), acks_(acks) {}

void Writer::Open() {
  store_ = store::OpenStore(options_.database, options_.open);
  started_us_ = ToUnixMicros(clock_.Now());
  if (auto oldest = store_->OldestEvent()) oldest_event_us_ = ToUnixMicros(*oldest);
  // Totals since the store was created: the last run's *_total, or (a store
  // from before they existed) its counts since its start.
  const Value all = store_->GetCounters();
  if (const Value* mine = all.Find(options_.open.master_id)) {
    auto base = [&](const std::string& name) {
      return mine->Find(name + "_total") != nullptr ? StoredCounter(*mine, name + "_total") : StoredCounter(*mine, name);
    };
    base_totals_ = {.received = base("received"),
                    .stored = base("stored"),
                    .filtered = base("filtered"),
                    .quarantined = base("quarantined"),
                    .duplicates = base("duplicates"),
                    .trimmed = base("trimmed"),
                    .returns = base("returns"),
                    .cache_writes = base("cache_writes"),
                    .future_arrivals = base("future_arrivals")};
    base_batches_ = base("batches");
  }
  // The status row: what a counter cannot hold, once per start (each in a
  // transaction of its own).
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  store_->PutMasterInfo({.version = BRINE_VERSION, .host = host, .pid = ::getpid(), .started_us = started_us_});
  PutCounters({});
  CountersCommitted();  // written in a transaction of its own
  status_written_ = SteadyClock::now();
  next_maintenance_ = SteadyClock::now();
}

void Writer::PutCounters(const Counters& pending) {
  Counters t = totals_;
  t += pending;
  counters_pending_ = {
      {"received", t.received},
      {"stored", t.stored},
      {"filtered", t.filtered},
      {"quarantined", t.quarantined},
      {"duplicates", t.duplicates},
      {"trimmed", t.trimmed},
      {"returns", t.returns},
      {"cache_writes", t.cache_writes},
      {"future_arrivals", t.future_arrivals},
      {"acked", acked_ + static_cast<std::int64_t>(acked_in_batch_.size())},
      {"acked_refused", acked_refused_},
      {"plugin_is_job_cache", archiver_.PluginIsJobCache() ? 1 : 0},
      {"batches", batches_},
      {"queue_depth", static_cast<std::int64_t>(queue_.depth_frames())},
      {"last_commit_us", last_commit_us_},
      {"oldest_event_us", oldest_event_us_},
      {"started_us", started_us_},
      // When this was written, and how long the open batch's oldest frame
      // waited for its commit (0 when it holds none).
      {"heartbeat_us", ToUnixMicros(clock_.Now())},
      {"stopped_us", stopped_us_},
      {"commit_lag_us", batch_.empty() ? 0 : std::max<std::int64_t>(0, ToUnixMicros(clock_.Now()) -
                                                                         ToUnixMicros(batch_.front().received))},
      {"received_total", base_totals_.received + t.received},
      {"stored_total", base_totals_.stored + t.stored},
      {"filtered_total", base_totals_.filtered + t.filtered},
      {"quarantined_total", base_totals_.quarantined + t.quarantined},
      {"duplicates_total", base_totals_.duplicates + t.duplicates},
      {"trimmed_total", base_totals_.trimmed + t.trimmed},
      {"returns_total", base_totals_.returns + t.returns},
      {"cache_writes_total", base_totals_.cache_writes + t.cache_writes},
      {"future_arrivals_total", base_totals_.future_arrivals + t.future_arrivals},
      {"batches_total", base_batches_ + batches_},
  };
  if (const AttachStatus* a = options_.attach_status) {
    counters_pending_.insert(counters_pending_.end(), {{"bus_attached", a->attached.load()},
                                                       {"bus_since_us", a->since_us.load()},
                                                       {"bus_reconnects", a->reconnects.load()},
                                                       {"bus_framing", a->framing.load()},
                                                       {"bus_gaps", a->gaps.load()},
                                                       {"event_return_seen", t.event_return_seen}});
  }
  // Only what changed since the last commit: a commit of one acknowledged
  // request would otherwise rewrite every counter row.
  std::vector<std::pair<std::string, std::int64_t>> changed;
  for (std::size_t i = 0; i < counters_pending_.size(); ++i) {
    if (i >= counters_in_store_.size() || counters_in_store_[i].second != counters_pending_[i].second) {
      changed.push_back(counters_pending_[i]);
    }
  }
  if (!changed.empty()) store_->PutCounters(changed);
}

void Writer::CountersCommitted() {
  counters_in_store_ = counters_pending_;
  status_written_ = SteadyClock::now();
}

void Writer::FileGaps() {
  if (options_.gaps == nullptr || !store_ || failing_ || batch_handle_) return;
  std::vector<GapOp> ops = options_.gaps->Take();
  if (ops.empty()) return;
  std::size_t done = 0;
  try {
    for (const GapOp& op : ops) {
      if (op.kind == GapOp::Kind::kOpen) {
        store_->OpenBusGap(op.reason, op.at, op.last_frame);
      } else {
        store_->CloseBusGap(op.at);
      }
      ++done;
    }
  } catch (const std::exception& e) {
    log_.Log(LogLevel::kDebug, std::string("a bus gap was not filed yet: ") + e.what());
    options_.gaps->PutBack(std::vector<GapOp>(ops.begin() + static_cast<std::ptrdiff_t>(done), ops.end()));
  }
}

void Writer::IdleHeartbeat() {
  if (!store_ || failing_ || SteadyClock::now() - status_written_ < kHeartbeatInterval) return;
  try {
    PutCounters({});
    CountersCommitted();
  } catch (const std::exception& e) {
    // The next batch's commit finds the failure and retries; a reader sees
    // an old heartbeat meanwhile, which is the truth.
    status_written_ = SteadyClock::now();
    log_.Log(LogLevel::kDebug, std::string("heartbeat not written: ") + e.what());
  }
}

void Writer::Reopen() {
  batch_handle_.reset();
  store_.reset();
  store_ = store::OpenStore(options_.database, options_.open);
}

bool Writer::Ingest(Frame frame) {
  const bool opens_batch = batch_.empty();
  if (opens_batch) {
    batch_started_ = SteadyClock::now();
    batch_bytes_ = 0;
  }
  batch_bytes_ += frame.bytes.size();
  batch_.push_back(std::move(frame));
  try {
    // Inside the try: a store another process holds locked past the busy
    // timeout is backpressure like a full disk, never fatal. So is a store
    // left closed by a reopen that failed (MaintenanceStep).
    if (!store_) throw store::WriteFailedError("the store is not open: reopening it failed");
    if (opens_batch) batch_handle_.emplace(store_->BeginBatch());
    const Counters before = batch_counts_;
    if (auto spent = archiver_.Ingest(*store_, batch_.back(), batch_counts_)) spent_.push_back(std::move(spent));
    CountHour(before, batch_counts_, batch_.back().received, batch_hours_);
    return true;
  } catch (const std::exception& e) {
    ReplayUntilCommitted(e.what());
    return false;
  }
}

void Writer::IngestAcked(AckRequest request) {
  if (clock_.Now() > request.expires) {
    // Its caller has given up waiting and spooled the frames.
    ++acked_refused_;
    acks_.Post({{request.token, AckStatus::kNotTaken, "the request expired before it was filed"}});
    return;
  }
  acked_in_batch_.push_back(request.token);
  for (Frame& f : request.frames) {
    if (!Ingest(std::move(f))) return;  // refused, with the rest of the batch's requests
  }
}

void Writer::RefuseAcked(const std::string& why) {
  if (acked_in_batch_.empty()) return;
  std::erase_if(batch_, [](const Frame& f) { return f.ack_token != 0; });
  std::vector<AckDone> done;
  done.reserve(acked_in_batch_.size());
  for (std::uint64_t token : acked_in_batch_) done.push_back({token, AckStatus::kNotTaken, "store write failed: " + why});
  acked_refused_ += static_cast<std::int64_t>(acked_in_batch_.size());
  acked_in_batch_.clear();
  acks_.Post(std::move(done));
}

void Writer::Commit() {
  if (batch_.empty()) return;
  try {
    const std::int64_t now_us = ToUnixMicros(clock_.Now());
    const std::int64_t saved = last_commit_us_;
    last_commit_us_ = now_us;
    ++batches_;
    if (oldest_event_us_ == 0 && batch_counts_.stored > 0) oldest_event_us_ = ToUnixMicros(batch_.front().received);
    try {
      PutCounters(batch_counts_);
      store_->AddHourlyCounts(batch_hours_);
      if (spool_progress_) store_->PutSpoolProgress(spool_progress_->first, spool_progress_->second);
      batch_handle_->Commit();
      CountersCommitted();
      spool_progress_.reset();
      batch_hours_.clear();
    } catch (...) {
      last_commit_us_ = saved;
      --batches_;
      throw;
    }
    batch_handle_.reset();
    totals_ += batch_counts_;
    batch_counts_ = {};
    batch_.clear();
  } catch (const std::exception& e) {
    ReplayUntilCommitted(e.what());
    return;
  }
  if (!acked_in_batch_.empty()) {
    std::vector<AckDone> done;
    done.reserve(acked_in_batch_.size());
    for (std::uint64_t token : acked_in_batch_) done.push_back({token, AckStatus::kStored, {}});
    acked_ += static_cast<std::int64_t>(acked_in_batch_.size());
    acked_in_batch_.clear();
    acks_.Post(std::move(done));
  }
}

void Writer::ReplayUntilCommitted(const std::string& why) {
  failing_ = true;
  // Callers waiting on acknowledged frames spool them now rather than wait out
  // the retries; the batch goes on without them.
  RefuseAcked(why);
  log_.Log(LogLevel::kError, "store write failed (" + why + "); keeping the batch of " + std::to_string(batch_.size()) +
                                 " frames and retrying with backoff");
  auto backoff = options_.backoff_initial;
  std::vector<std::pair<Frame, std::string>> poisoned;
  int attempts = 0;
  while (true) {
    PublishStatus(options_.status, totals_, batches_, last_commit_us_, batch_.size());
    if (batch_.empty()) FileGaps();
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, options_.backoff_max);
    ++attempts;
    try {
      Reopen();
      batch_handle_.emplace(store_->BeginBatch());
      Counters counts;
      std::vector<store::HourCounts> hours;
      archiver_.ForgetCountedJobs();  // the batch's jobs count again
      for (std::size_t i = 0; i < batch_.size(); ++i) {
        try {
          const Counters before = counts;
          (void)archiver_.Ingest(*store_, batch_[i], counts);  // replayed frames are no longer prepared
          CountHour(before, counts, batch_[i].received, hours);
        } catch (const std::exception& e) {
          if (IsStorageFailure(e)) throw;
          // This frame fails on its own: set it aside, quarantine it on the next try.
          poisoned.emplace_back(std::move(batch_[i]), e.what());
          batch_.erase(batch_.begin() + static_cast<std::ptrdiff_t>(i));
          throw;
        }
      }
      for (auto& [frame, reason] : poisoned) {
        try {
          archiver_.QuarantineFrame(*store_, frame, "could not be archived: " + reason, counts);
        } catch (const std::exception& e) {
          if (IsStorageFailure(e) || frame.bytes.empty()) throw;
          // Failing for a reason of this frame's own (too big for SQLite):
          // the next try keeps its reason and length, not its bytes, so it
          // never holds up the frames behind it.
          reason += "; its " + std::to_string(frame.bytes.size()) + " bytes could not be kept either (" + e.what() + ")";
          frame.bytes.clear();
          throw;
        }
      }
      last_commit_us_ = ToUnixMicros(clock_.Now());
      ++batches_;
      PutCounters(counts);
      store_->AddHourlyCounts(hours);
      // A spool batch's offset goes with its frames, replayed or not.
      if (spool_progress_) store_->PutSpoolProgress(spool_progress_->first, spool_progress_->second);
      batch_handle_->Commit();
      CountersCommitted();
      spool_progress_.reset();
      batch_hours_.clear();
      batch_handle_.reset();
      totals_ += counts;
      batch_counts_ = {};
      batch_.clear();
      log_.Log(LogLevel::kWarning, "store writable again after " + std::to_string(attempts) +
                                       " attempts; the batch was replayed and committed");
      failing_ = false;
      return;
    } catch (const std::exception& e) {
      batch_handle_.reset();
      log_.Log(LogLevel::kDebug, std::string("retry failed: ") + e.what());
    }
  }
}

void Writer::EndSpoolPass() {
  spool_reader_.reset();
  spool_files_.clear();  // closing them releases their locks
  spool_next_ = 0;
  spool_pass_open_ = false;
  spool_progress_.reset();
}

bool Writer::SpoolStep() {
  if (options_.spool_dir.empty()) return true;
  if (!spool_pass_open_) {
    std::vector<std::string> skipped;
    try {
      spool_files_ = TakeSpoolFiles(options_.spool_dir, skipped);
    } catch (const std::exception& e) {
      log_.Log(LogLevel::kError, std::string("cannot read the spool: ") + e.what());
    }
    for (const std::string& line : skipped) {
      if (std::find(spool_skips_logged_.begin(), spool_skips_logged_.end(), line) != spool_skips_logged_.end()) continue;
      spool_skips_logged_.push_back(line);
      log_.Log(LogLevel::kError, "spool: " + line);
    }
    spool_offsets_ = store_->GetSpoolProgress();
    // Progress of a file that is gone (removed, then a crash before its row
    // went): no file of that name is left to resume.
    for (const auto& [key, offset] : spool_offsets_) {
      std::string name = key;  // name:device:inode:size:mtime, and a name may hold ':'
      for (int i = 0; i < 4 && name.rfind(':') != std::string::npos; ++i) name.resize(name.rfind(':'));
      std::error_code ec;
      if (!std::filesystem::exists(std::filesystem::symlink_status(options_.spool_dir / name, ec))) {
        store_->ForgetSpoolProgress(key);
      }
    }
    spool_next_ = 0;
    spool_pass_open_ = true;
  }
  while (spool_next_ < spool_files_.size()) {
    TakenSpoolFile& file = spool_files_[spool_next_];
    const std::string name = file.path().filename().string();
    if (!spool_reader_) {
      std::int64_t offset = 0;
      for (const auto& [key, at] : spool_offsets_) {
        if (key == file.key()) offset = at;
      }
      if (offset > 0) {
        log_.Log(LogLevel::kInfo, "spool " + name + ": resuming at byte " + std::to_string(offset) + " of " +
                                      std::to_string(file.size()) + ", where the last committed batch ended");
      }
      spool_reader_.emplace(file.fd(), file.size(), static_cast<std::uint64_t>(offset), options_.spool_max_record_bytes);
      spool_file_frames_ = 0;
      spool_file_damaged_ = 0;
    }
    // One batch: its frames, and the offset just past the last of them,
    // commit together. The offset is set before each frame joins the batch,
    // so a replay of a failed commit writes it with exactly those frames.
    bool done = false;
    try {
      const Micros now = clock_.Now();
      // (batch_bytes_ counts from a batch's first frame: the last batch's until then.)
      while (batch_.empty() ||
             (batch_.size() < options_.batch_max_events && batch_bytes_ < options_.spool_batch_bytes)) {
        std::optional<SpoolItem> item = spool_reader_->Next();
        if (!item) {
          done = true;
          break;
        }
        Frame frame{.bytes = std::move(item->bytes), .received = now, .source = Frame::Source::kSpool};
        if (item->kind == SpoolItem::Kind::kDamage) {
          frame.damage = "spool " + name + ": " + std::to_string(item->length) +
                         " bytes that are not a complete record (a writer killed mid-append)";
          if (item->length > frame.bytes.size()) frame.damage += " (the first " + std::to_string(frame.bytes.size()) + " kept)";
          ++spool_file_damaged_;
        } else if (item->kind == SpoolItem::Kind::kOversize) {
          char crc[9];
          std::snprintf(crc, sizeof crc, "%08x", item->crc);
          frame.damage = "frame of " + std::to_string(item->length) + " bytes exceeds max_frame_bytes " +
                         std::to_string(options_.spool_max_record_bytes) + " (" + std::to_string(item->length) +
                         " bytes, crc32 " + crc + "; the first " + std::to_string(frame.bytes.size()) + " kept)";
        } else {
          ++spool_file_frames_;
        }
        spool_progress_ = {file.key(), static_cast<std::int64_t>(item->end)};
        (void)Ingest(std::move(frame));
      }
    } catch (const std::exception& e) {
      // A read error: what was filed commits with its offset; the file stays
      // `.taken` and is resumed at the next pass.
      log_.Log(LogLevel::kError, "cannot read the spool file " + name + ": " + e.what());
      Commit();
      spool_reader_.reset();
      ++spool_next_;
      continue;
    }
    Commit();
    if (!done) return false;  // the next batch at the next step, after the bus's frames
    spool_reader_.reset();
    ++spool_next_;
    try {
      file.Remove();
      store_->ForgetSpoolProgress(file.key());
    } catch (const std::exception& e) {
      // Left as .taken, it is resumed at its end: nothing is filed again.
      log_.Log(LogLevel::kCritical, std::string("spool frames committed but the file stays: ") + e.what());
      continue;
    }
    log_.Log(LogLevel::kInfo, "spool " + name + ": " + std::to_string(spool_file_frames_) + " frames filed" +
                                  (spool_file_damaged_ == 0
                                       ? ""
                                       : ", " + std::to_string(spool_file_damaged_) + " damaged runs quarantined"));
  }
  EndSpoolPass();
  return true;
}

void Writer::MaintenanceStep() {
  const auto now = clock_.Now();
  try {
    if (!store_) Reopen();  // a reopen after a failed step failed too
    switch (phase_) {
      case Phase::kIdle:
        return;
      case Phase::kSpool:
        if (SpoolStep()) phase_ = Phase::kClean;
        return;
      case Phase::kClean: {
        store::Retention retention;
        auto cut = [&](std::int64_t seconds) -> std::optional<Micros> {
          if (seconds <= 0) return std::nullopt;
          return now - std::chrono::seconds(seconds);
        };
        retention.jobs_before = cut(options_.keep_jobs_seconds);
        retention.events_before = cut(options_.keep_events_seconds);
        bool any_cut = retention.jobs_before || retention.events_before;
        for (const auto& [glob, seconds] : options_.keep_jobs_by_fun) {
          retention.jobs_by_fun.push_back({.glob = glob, .before = cut(seconds)});
          any_cut = any_cut || seconds > 0;
        }
        for (const auto& [glob, seconds] : options_.keep_events_by_tag) {
          retention.events_by_tag.push_back({.glob = glob, .before = cut(seconds)});
          any_cut = any_cut || seconds > 0;
        }
        if (!any_cut) {
          phase_ = Phase::kPrune;
          return;
        }
        // The first pass since start that deletes anything is judged against
        // the store's size before it (a keep_jobs typo deletes history).
        const auto r = store_->ApplyRetention(retention, kMaintenanceRows);
        if (!retention_ran_ && retention_run_.jobs + retention_run_.events == 0 && r.jobs + r.events > 0) {
          before_first_run_ = store_->CountRows();
          before_first_run_.jobs += r.jobs;
          before_first_run_.events += r.events;
        }
        AddCounts(retention_run_, r);
        if (!r.more) {
          // The hourly rollups go with the rows they count: an hour once it
          // lies before every cut (none while some class is kept forever).
          std::int64_t longest = std::max(options_.keep_jobs_seconds, options_.keep_events_seconds);
          bool all_cut = options_.keep_jobs_seconds > 0 && options_.keep_events_seconds > 0;
          for (const auto& by_class : {&options_.keep_jobs_by_fun, &options_.keep_events_by_tag}) {
            for (const auto& [glob, seconds] : *by_class) {
              all_cut = all_cut && seconds > 0;
              longest = std::max(longest, seconds);
            }
          }
          if (all_cut) store_->ForgetHoursBefore(now - std::chrono::seconds(longest));
          LogRetentionRun(log_, retention_run_, retention_ran_ ? nullptr : &before_first_run_);
          retention_run_ = {};
          retention_ran_ = true;
          phase_ = Phase::kPrune;
        }
        return;
      }
      case Phase::kPrune: {
        // The size cap, after retention: the target is fixed when the pass
        // starts (what the store held over the cap), so a measure that lags
        // the deletes (PostgreSQL's statistics) never prunes twice for it.
        if (options_.max_store_bytes <= 0) {
          phase_ = Phase::kVacuum;
          return;
        }
        if (!prune_target_) {
          prune_used_ = store_->UsedBytes();
          if (prune_used_ <= options_.max_store_bytes) {
            phase_ = Phase::kVacuum;
            return;
          }
          prune_target_ = prune_used_ - options_.max_store_bytes;
          prune_run_ = {};
        }
        const auto r = store_->PruneOldest(*prune_target_ - prune_run_.bytes, kMaintenanceRows);
        AddCounts(prune_run_, r);
        if (!r.more) {
          log_.Log(LogLevel::kInfo, "brine.max_store_mb: the store held " + Mib(prune_used_) + " MiB, over the cap of " +
                                        Mib(options_.max_store_bytes) + " MiB; pruned the oldest " +
                                        std::to_string(prune_run_.jobs) + " jobs, " + std::to_string(prune_run_.returns) +
                                        " returns, " + std::to_string(prune_run_.events) + " events, " +
                                        std::to_string(prune_run_.quarantined) + " quarantined frames (" +
                                        Mib(prune_run_.bytes) + " MiB of payload)");
          prune_target_.reset();
          phase_ = Phase::kVacuum;
        }
        return;
      }
      // Vacuum, statistics and checkpoint are the store's maintenance, which
      // a server database does without (store.h, StoreMaintenance).
      case Phase::kVacuum: {
        store::StoreMaintenance* maintenance = store_->Maintenance();
        const auto space = maintenance != nullptr ? maintenance->Space() : store::StoreMaintenance::SpaceInfo{};
        if (space.page_count > 0 && space.freelist_count * 10 > space.page_count) {
          maintenance->IncrementalVacuum(std::min(space.freelist_count, kVacuumPagesPerStep));
        } else {
          phase_ = Phase::kStatistics;
        }
        return;
      }
      case Phase::kStatistics:
        // Keeps the views' index plans as the store grows (issue 15); sampled, so milliseconds.
        if (store::StoreMaintenance* maintenance = store_->Maintenance()) maintenance->RefreshStatistics();
        phase_ = Phase::kCheckpoint;
        return;
      case Phase::kCheckpoint:
        if (store::StoreMaintenance* maintenance = store_->Maintenance()) maintenance->Checkpoint();
        if (auto oldest = store_->OldestEvent()) {
          oldest_event_us_ = ToUnixMicros(*oldest);
        } else {
          oldest_event_us_ = 0;
        }
        phase_ = Phase::kIdle;
        next_maintenance_ = SteadyClock::now() + options_.loop_interval;
        return;
    }
  } catch (const std::exception& e) {
    log_.Log(LogLevel::kError, std::string("maintenance failed: ") + e.what());
    EndSpoolPass();  // its files are taken again, and resumed, at the next pass
    phase_ = Phase::kIdle;
    next_maintenance_ = SteadyClock::now() + options_.loop_interval;
    try {
      Reopen();
    } catch (const std::exception& again) {
      log_.Log(LogLevel::kError, std::string("reopening the store failed: ") + again.what());
    }
  }
}

void Writer::Run() {
  std::vector<Frame> incoming;
  std::vector<AckRequest> acked;
  while (true) {
    PublishStatus(options_.status, totals_, batches_, last_commit_us_, batch_.size());
    if (batch_.empty()) FileGaps();
    const auto now = SteadyClock::now();
    if (phase_ == Phase::kIdle && now >= next_maintenance_) phase_ = Phase::kSpool;
    SteadyClock::time_point deadline;
    if (!batch_.empty()) {
      deadline = batch_started_ + options_.flush_interval;
    } else if (phase_ != Phase::kIdle) {
      deadline = now;  // maintenance waits only for frames already here
    } else {
      deadline = std::min(next_maintenance_, now + std::chrono::milliseconds(200));
    }
    incoming.clear();
    acked.clear();
    const std::size_t room = std::min(options_.batch_max_events - batch_.size(), kBusChunk);
    queue_.PopUpTo(room, deadline, incoming, acked);
    // Popped frames are pending too until they commit (the reporter's lag).
    if (options_.status != nullptr) {
      options_.status->batch_frames = static_cast<std::int64_t>(batch_.size() + incoming.size() + acked.size());
    }
    if (!acked.empty()) {
      // Group commit: every request that arrives while these are filed joins
      // the same commit.
      do {
        for (AckRequest& r : acked) IngestAcked(std::move(r));
        acked.clear();
      } while (queue_.PopAcked(acked) > 0);
      Commit();
      continue;
    }
    if (incoming.empty()) {
      if (!batch_.empty()) {
        Commit();
      } else if (queue_.ClosedAndEmpty()) {
        // A reader of the store sees the stop (brine.stats' running).
        stopped_us_ = ToUnixMicros(clock_.Now());
        FileGaps();
        try {
          if (store_ && !failing_) {
            PutCounters({});
            CountersCommitted();
          }
        } catch (const std::exception& e) {
          log_.Log(LogLevel::kDebug, std::string("the stop was not recorded in the store: ") + e.what());
        }
        return;
      } else {
        // Between maintenance steps too: a long retention pass keeps the heartbeat.
        if (phase_ != Phase::kIdle) MaintenanceStep();
        IdleHeartbeat();
      }
      continue;
    }
    for (Frame& f : incoming) (void)Ingest(std::move(f));
    queue_.Recycle(spent_);  // freed by the reader, which made them
    if (batch_.size() >= options_.batch_max_events || batch_bytes_ >= options_.batch_max_bytes ||
        queue_.depth_frames() == 0 ||
        SteadyClock::now() - batch_started_ >= options_.flush_interval) {
      Commit();
    }
  }
}

}  // namespace brine::master
