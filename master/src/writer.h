// brine-master's writer thread: the one owner of the store connection.
//
// It moves frames from the FrameQueue into an open BEGIN IMMEDIATE batch and
// commits when the batch holds batch_max_events frames or batch_max_bytes of
// them, when the queue runs empty, or when the transaction has been open flush_interval, whichever comes
// first. The age counts from the transaction's start, never from a frame's
// arrival: under a backlog every frame is older than the interval, and an
// arrival rule would commit one frame at a time and never catch up.
//
// A batch leaves memory only after its COMMIT returned OK. When a write or the
// commit fails (disk full, I/O error), the writer logs once, reopens the store
// with backoff (1 s doubling to 30 s) and replays the same frames until they
// commit; meanwhile the queue fills and the reader stops reading. A frame that
// fails for a reason of its own (not I/O) is quarantined instead of replayed.
//
// Acknowledged requests (the Salt plug-in's writes, cache_socket.h) come first:
// whenever one waits, the writer files every request waiting, then commits at
// once (group commit: the open batch's bus frames go along), and posts each
// request's token to the AckMailbox only after that COMMIT returned OK. Bus
// frames are taken a few hundred at a time, so a request waits behind at most
// one such chunk, never behind the backlog. A request that has expired (its
// caller has spooled it) is not filed. When a write or commit fails, the
// requests in the batch are answered "not taken" at once and dropped from it
// (their callers spool them, so nothing is filed twice), and while the store
// is failing new requests are refused by the reader (Failing()).
//
// Between batches it runs maintenance every loop_interval (first pass at
// start): the Salt plug-in's spool files (spool.h) are streamed and filed
// like the bus's, a batch of at most batch_max_events frames or
// spool_batch_bytes per step (bus frames and acknowledged requests are taken
// between the steps); each batch's commit also records the offset it reached
// (Store::PutSpoolProgress), so after a crash the file is resumed there and
// no frame is filed twice or lost; each file is removed once all of it
// committed, then its progress is forgotten; retention in transactions of at most 5,000 rows that yield to
// incoming frames, incremental_vacuum while free pages pass 10% of the file,
// and a wal_checkpoint(TRUNCATE).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "brine/core/time.h"
#include "brine/store/store.h"
#include "ack.h"
#include "archiver.h"
#include "bus_gaps.h"
#include "frame_queue.h"
#include "live_status.h"
#include "logger.h"
#include "spool.h"

namespace brine::master {

struct WriterOptions {
  std::filesystem::path database;
  store::OpenOptions open;
  std::size_t batch_max_events = 10000;
  // The batch's frames stay in memory until it commits: big frames commit in
  // smaller batches (brine-master passes brine.max_queue_mb).
  std::size_t batch_max_bytes = std::size_t{32} << 20;
  std::chrono::milliseconds flush_interval{100};
  std::chrono::seconds loop_interval{60};
  std::int64_t keep_jobs_seconds = 86400;    // 0: keep forever
  std::int64_t keep_events_seconds = 86400;  // 0: keep forever
  // Retention by class (brine.keep_jobs_by_fun, brine.keep_events_by_tag):
  // globs to seconds, the first that matches decides; 0 keeps forever.
  std::vector<std::pair<std::string, std::int64_t>> keep_jobs_by_fun;
  std::vector<std::pair<std::string, std::int64_t>> keep_events_by_tag;
  // brine.max_store_mb in bytes: above it the oldest of everything is pruned; 0: no cap.
  std::int64_t max_store_bytes = 0;
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{30000};
  // Where the Salt plug-in spools frames (<cachedir>/brine-spool); empty: none.
  std::filesystem::path spool_dir;
  // A spool batch's frames (kept in memory until it commits) stop at this
  // many bytes, so filing a spool of any size stays within a bounded memory.
  std::size_t spool_batch_bytes = std::size_t{8} << 20;
  // A spool record bigger than this (brine.max_frame_bytes) is quarantined as
  // its first 64 KiB, length and CRC-32, never read whole.
  std::size_t spool_max_record_bytes = std::size_t{64} << 20;
  // Where the writer shows its progress to the reporter (reporter.h); must
  // outlive the Writer. nullptr: nowhere.
  LiveStatus* status = nullptr;
  // brine.bus: attach (attached_bus.h): the gaps to file, and the bus's
  // status filed with the counters. nullptr otherwise; both outlive the Writer.
  GapMailbox* gaps = nullptr;
  const AttachStatus* attach_status = nullptr;
};

class Writer {
 public:
  // All references must outlive the Writer.
  Writer(WriterOptions options, Archiver& archiver, Logger& log, FrameQueue& queue, const Clock& clock,
         AckMailbox& acks);

  // Opens the store (applying migrations) and resets this run's counters.
  // Throws the store's errors; brine-master exits on them at start.
  void Open();

  // Processes frames until the queue is closed and drained, then commits and
  // returns. Never throws for store failures: it retries until they pass.
  void Run();

  // True while a failed write is being retried. Any thread.
  [[nodiscard]] bool Failing() const { return failing_.load(std::memory_order_relaxed); }

 private:
  // Adds `frame` to the open batch. False when a failure made the writer
  // replay and commit the batch (acknowledged frames were then refused).
  bool Ingest(Frame frame);
  void IngestAcked(AckRequest request);
  void RefuseAcked(const std::string& why);
  void Commit();
  void ReplayUntilCommitted(const std::string& why);
  // Writes the counters that differ from the committed ones into the open
  // batch (or a transaction of its own); CountersCommitted() after the commit.
  void PutCounters(const Counters& pending);
  void CountersCommitted();
  // Commits the status counters alone when the writer has been idle for
  // kHeartbeatInterval, so a reader of the store sees it alive.
  void IdleHeartbeat();
  // Files the gaps the reader posted (WriterOptions::gaps), each in a
  // transaction of its own, between batches; on a failure they wait for the
  // next try.
  void FileGaps();
  void MaintenanceStep();
  // Files one batch of the spool pass in progress (taking the files first).
  // True when the pass is done.
  bool SpoolStep();
  void EndSpoolPass();
  void Reopen();

  WriterOptions options_;
  Archiver& archiver_;
  Logger& log_;
  FrameQueue& queue_;
  const Clock& clock_;
  AckMailbox& acks_;
  std::unique_ptr<store::Store> store_;
  std::optional<store::Batch> batch_handle_;
  std::vector<Frame> batch_;
  // Preparations of the frames filed since the last pop, handed back to the
  // queue for the reader to free (FrameQueue::Recycle).
  std::vector<std::unique_ptr<PreparedFrame>> spent_;
  std::size_t batch_bytes_ = 0;  // of batch_'s frames, from its first Ingest to its commit
  Counters batch_counts_;
  // The open batch's hourly rollups (store::AddHourlyCounts): what each
  // frame added to the counts, by the hour it arrived; committed with it.
  std::vector<store::HourCounts> batch_hours_;
  // When the status counters (heartbeat_us) last committed: an idle writer
  // commits them alone every kHeartbeatInterval (writer.cpp).
  std::chrono::steady_clock::time_point status_written_;
  Counters totals_;
  std::int64_t batches_ = 0;
  // The counters as the store holds them, and as the open batch writes them.
  std::vector<std::pair<std::string, std::int64_t>> counters_in_store_;
  std::vector<std::pair<std::string, std::int64_t>> counters_pending_;
  std::vector<std::uint64_t> acked_in_batch_;  // tokens of the requests in the open batch
  std::int64_t acked_ = 0;                     // requests answered "stored"
  std::int64_t acked_refused_ = 0;             // requests answered "not taken"
  std::atomic<bool> failing_{false};
  // The store's totals since it was created, as of this start (the *_total
  // counters brine.stats shows beside the counts since start).
  Counters base_totals_;
  std::int64_t base_batches_ = 0;
  std::int64_t started_us_ = 0;
  std::int64_t stopped_us_ = 0;  // set when Run returns after a clean stop
  // What the retention run in progress removed so far (logged once at its
  // end), and whether a run has finished since start (the first is judged
  // against the store's size: more than half is a warning).
  store::CleanResult retention_run_;
  bool retention_ran_ = false;
  store::Store::RowCounts before_first_run_;
  std::int64_t last_commit_us_ = 0;
  std::int64_t oldest_event_us_ = 0;
  std::chrono::steady_clock::time_point batch_started_;

  // The size cap's pass: what it must free (bytes over the cap when it
  // started) and what it pruned so far.
  std::optional<std::int64_t> prune_target_;
  std::int64_t prune_used_ = 0;
  store::CleanResult prune_run_;

  // The spool pass in progress: the files taken (filed front to back), the
  // reader of the one being filed, and the progress the open batch commits
  // with its frames (file key, offset), written by Commit and by a replay.
  std::vector<TakenSpoolFile> spool_files_;
  std::size_t spool_next_ = 0;  // index in spool_files_ of the file being filed
  bool spool_pass_open_ = false;
  std::optional<SpoolReader> spool_reader_;
  std::vector<std::pair<std::string, std::int64_t>> spool_offsets_;  // as the store held them at the pass's start
  std::optional<std::pair<std::string, std::int64_t>> spool_progress_;
  std::int64_t spool_file_frames_ = 0;
  std::int64_t spool_file_damaged_ = 0;
  std::vector<std::string> spool_skips_logged_;  // each skipped file is logged once per run

  enum class Phase { kIdle, kSpool, kClean, kPrune, kVacuum, kStatistics, kCheckpoint };
  Phase phase_ = Phase::kSpool;  // first pass at start
  std::chrono::steady_clock::time_point next_maintenance_;
};

}  // namespace brine::master
