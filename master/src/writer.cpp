#include "brine/master/writer.h"

#include <thread>

#include "brine/master/spool.h"

namespace brine::master {

using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::int64_t kMaintenanceRows = 5000;
constexpr std::int64_t kVacuumPagesPerStep = 2000;

bool IsStorageFailure(const std::exception& e) {
  return dynamic_cast<const store::WriteFailedError*>(&e) != nullptr ||
         dynamic_cast<const store::BusyError*>(&e) != nullptr;
}

}  // namespace

Writer::Writer(WriterOptions options, Archiver& archiver, Logger& log, FrameQueue& queue, const Clock& clock)
    : options_(std::move(options)), archiver_(archiver), log_(log), queue_(queue), clock_(clock) {}

void Writer::Open() {
  store_ = store::OpenStore(options_.database, options_.open);
  if (auto oldest = store_->OldestEvent()) oldest_event_us_ = ToUnixMicros(*oldest);
  PutCounters({});
  next_maintenance_ = SteadyClock::now();
}

void Writer::PutCounters(const Counters& pending) {
  Counters t = totals_;
  t += pending;
  store_->PutCounters({
      {"received", t.received},
      {"stored", t.stored},
      {"filtered", t.filtered},
      {"quarantined", t.quarantined},
      {"duplicates", t.duplicates},
      {"trimmed", t.trimmed},
      {"returns", t.returns},
      {"cache_writes", t.cache_writes},
      {"batches", batches_},
      {"queue_depth", static_cast<std::int64_t>(queue_.depth_frames())},
      {"last_commit_us", last_commit_us_},
      {"oldest_event_us", oldest_event_us_},
  });
}

void Writer::Reopen() {
  batch_handle_.reset();
  store_.reset();
  store_ = store::OpenStore(options_.database, options_.open);
}

void Writer::Ingest(Frame frame) {
  const bool opens_batch = batch_.empty();
  if (opens_batch) batch_started_ = SteadyClock::now();
  batch_.push_back(std::move(frame));
  try {
    // Inside the try: a store another process holds locked past the busy
    // timeout is backpressure like a full disk, never fatal.
    if (opens_batch) batch_handle_.emplace(store_->BeginBatch());
    archiver_.Ingest(*store_, batch_.back(), batch_counts_);
  } catch (const std::exception& e) {
    ReplayUntilCommitted(e.what());
  }
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
      batch_handle_->Commit();
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
  }
}

void Writer::ReplayUntilCommitted(const std::string& why) {
  log_.Log(LogLevel::kError, "store write failed (" + why + "); keeping the batch of " + std::to_string(batch_.size()) +
                                 " frames and retrying with backoff");
  auto backoff = options_.backoff_initial;
  std::vector<std::pair<Frame, std::string>> poisoned;
  int attempts = 0;
  while (true) {
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, options_.backoff_max);
    ++attempts;
    try {
      Reopen();
      batch_handle_.emplace(store_->BeginBatch());
      Counters counts;
      for (std::size_t i = 0; i < batch_.size(); ++i) {
        try {
          archiver_.Ingest(*store_, batch_[i], counts);
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
      batch_handle_->Commit();
      batch_handle_.reset();
      totals_ += counts;
      batch_counts_ = {};
      batch_.clear();
      log_.Log(LogLevel::kWarning, "store writable again after " + std::to_string(attempts) +
                                       " attempts; the batch was replayed and committed");
      return;
    } catch (const std::exception& e) {
      batch_handle_.reset();
      log_.Log(LogLevel::kDebug, std::string("retry failed: ") + e.what());
    }
  }
}

void Writer::IngestSpool() {
  if (options_.spool_dir.empty()) return;
  std::vector<TakenSpoolFile> files;
  try {
    files = TakeSpoolFiles(options_.spool_dir);
  } catch (const std::exception& e) {
    log_.Log(LogLevel::kError, std::string("cannot read the spool: ") + e.what());
  }
  for (TakenSpoolFile& file : files) {
    SpoolContents contents;
    try {
      contents = ParseSpool(file.ReadAll());
    } catch (const std::exception& e) {
      log_.Log(LogLevel::kError, std::string("cannot read the spool: ") + e.what());
      continue;
    }
    // One file is one batch: it is removed only after all of it committed,
    // so a crash in between reads it whole again and nothing is filed twice
    // by halves.
    const Micros now = clock_.Now();
    for (std::string& bytes : contents.frames) Ingest(Frame{.bytes = std::move(bytes), .received = now});
    for (std::string& bytes : contents.damaged) {
      const std::string reason = "spool " + file.path().filename().string() + ": " + std::to_string(bytes.size()) +
                                 " bytes that are not a complete record (a writer killed mid-append)";
      Ingest(Frame{.bytes = std::move(bytes), .received = now, .damage = reason});
    }
    Commit();
    try {
      file.Remove();
    } catch (const std::exception& e) {
      // Left as .taken, it would be read again: stop here and say so.
      log_.Log(LogLevel::kCritical, std::string("spool frames committed but the file stays: ") + e.what());
      return;
    }
    log_.Log(LogLevel::kInfo, "spool " + file.path().filename().string() + ": " +
                                  std::to_string(contents.frames.size()) + " frames filed" +
                                  (contents.damaged.empty() ? "" : ", " + std::to_string(contents.damaged.size()) +
                                                                       " damaged runs quarantined"));
  }
}

void Writer::MaintenanceStep() {
  const auto now = clock_.Now();
  try {
    switch (phase_) {
      case Phase::kIdle:
        return;
      case Phase::kSpool:
        phase_ = Phase::kClean;
        IngestSpool();
        return;
      case Phase::kClean: {
        std::optional<Micros> jobs_before, events_before;
        if (options_.keep_jobs_seconds > 0) jobs_before = now - std::chrono::seconds(options_.keep_jobs_seconds);
        if (options_.keep_events_seconds > 0) events_before = now - std::chrono::seconds(options_.keep_events_seconds);
        if (!jobs_before && !events_before) {
          phase_ = Phase::kVacuum;
          return;
        }
        const auto r = store_->CleanOldJobs(jobs_before, events_before, kMaintenanceRows);
        if (r.jobs + r.events + r.quarantined > 0) {
          log_.Log(LogLevel::kInfo, "retention removed " + std::to_string(r.jobs) + " jobs, " + std::to_string(r.returns) +
                                        " returns, " + std::to_string(r.events) + " events, " +
                                        std::to_string(r.quarantined) + " quarantined frames");
        }
        if (!r.more) phase_ = Phase::kVacuum;
        return;
      }
      case Phase::kVacuum: {
        const auto space = store_->Space();
        if (space.page_count > 0 && space.freelist_count * 10 > space.page_count) {
          store_->IncrementalVacuum(std::min(space.freelist_count, kVacuumPagesPerStep));
        } else {
          phase_ = Phase::kCheckpoint;
        }
        return;
      }
      case Phase::kCheckpoint:
        store_->Checkpoint();
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
  while (true) {
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
    const std::size_t room = options_.batch_max_events - batch_.size();
    queue_.PopUpTo(room, deadline, incoming);
    if (incoming.empty()) {
      if (!batch_.empty()) {
        Commit();
      } else if (queue_.ClosedAndEmpty()) {
        return;
      } else if (phase_ != Phase::kIdle) {
        MaintenanceStep();
      }
      continue;
    }
    for (Frame& f : incoming) Ingest(std::move(f));
    if (batch_.size() >= options_.batch_max_events || queue_.depth_frames() == 0 ||
        SteadyClock::now() - batch_started_ >= options_.flush_interval) {
      Commit();
    }
  }
}

}  // namespace brine::master
