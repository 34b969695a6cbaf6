// What brine-master does with one frame: decode it, archive the event when it
// passes event_return_whitelist/blacklist, feed the job cache whatever the
// filters say, or quarantine the frame with the reason it could not be read.
//
// Job-cache rules (spec salt-jobs.md sections 3, 7 and 9.5):
//   salt/job/<jid>/new, new_job     the publish load (data without _stamp and
//                                   minions) and its minions
//   <jid> with `minions`            the expected minions
//   salt/job/<jid>/ret/<minion>,    the return; first per minion wins; a repeat
//   <jid> with cmd "_return"        equal apart from _stamp is not a duplicate,
//                                   a different one is counted and logged as
//                                   Salt's replay warning
//   salt/run/<jid>/ret              with runner_returns, the runner job as
//                                   Salt's store_job stores it
// With job_cache false, loads and minions are stored and returns are not.
//
// Frames under the private prefix `brine/cache/` come from the Salt returner
// plug-in (contrib/salt/returners/brine.py, docs/salt.md) acting as a Salt
// master's master_job_cache. They are applied to the job cache and neither
// archived nor republished:
//   brine/cache/save_load     {jid, load, minions}  Store::SaveCacheLoad
//   brine/cache/save_minions  {jid, minions, syndic_id}
//   brine/cache/return        the return load itself (Store::Returner): the
//                             same return arriving as salt/job/<jid>/ret/<id>
//                             through event_return is a repeat, not a duplicate
//   brine/cache/endtime       {jid, endtime}
//   brine/cache/prep_jid      {jid, nocache: true}  (sent only for nocache)
// A private frame that is malformed, or names another operation, is quarantined.
//
// When the Salt master's config says `master_job_cache: brine`, the plug-in is
// the job cache's one authority: brine/cache/* frames count only from its own
// channels (the acknowledged socket and the spool; one on the pull socket is
// quarantined), and bus events fill no job cache at all. A return on the bus
// (salt/job/<jid>/ret/<minion>, a bare-jid _return, salt/run/<jid>/ret) is then
// archived as an event only: a forged one can no longer win "first return
// wins" over the return Salt itself stores. The archived event still shares
// the stored return's payload when it is the same return.
#pragma once

#include <chrono>
#include <deque>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "brine/store/store.h"
#include "frame.h"
#include "logger.h"
#include "prepared_frame.h"

namespace brine::master {

// The tag prefix of the Salt returner plug-in's job-cache writes.
inline constexpr std::string_view kCacheTagPrefix = "brine/cache/";

// How much of a frame over max_frame_bytes the quarantine keeps (with its
// length and CRC-32 in the reason).
inline constexpr std::size_t kQuarantineOversizeKeep = 64 * 1024;

// The bytes to quarantine for `frame`: all of it up to max_frame_bytes, else
// its first kQuarantineOversizeKeep bytes, and then `reason` gets
// " (N bytes, crc32 XXXXXXXX; the first K kept)" appended.
[[nodiscard]] std::string_view QuarantinedBytes(const Frame& frame, std::size_t max_frame_bytes, std::string& reason);

// True when the raw frame carries a private job-cache tag (it is then not
// republished on the bus).
[[nodiscard]] bool IsCacheFrame(std::string_view frame_bytes);

struct ArchiverOptions {
  std::vector<std::string> whitelist;  // fnmatch globs; non-empty: a tag must match one
  std::vector<std::string> blacklist;  // fnmatch globs; a match is not archived (deny wins)
  bool job_cache = true;
  bool runner_returns = true;
  // master_job_cache: brine (see above).
  bool plugin_is_job_cache = false;
  std::string master_id;               // the pseudo-minion runner results are filed under
  // brine.bus: attach. The bus already brings every event, so the plug-in's
  // event_return frames (acknowledged socket, spool) are acknowledged and
  // counted (event_return_seen, and filtered) but not archived again.
  bool attached = false;
  // Attached to one master of a 3007+ cluster with a shared (server) store:
  // an event carrying `__peer_id` came from a peer, whose own brine-master
  // archives it; counted as filtered here, so it is stored once.
  bool skip_peer_events = false;
  std::size_t max_frame_bytes = std::size_t{64} << 20;
};

// received = stored + filtered + quarantined + cache_writes, always.
struct Counters {
  std::int64_t received = 0;     // frames taken off the bus
  std::int64_t stored = 0;       // decoded events archived in salt_events
  std::int64_t filtered = 0;     // decoded events the filters kept out of the archive
  std::int64_t quarantined = 0;  // frames that could not be decoded
  std::int64_t duplicates = 0;   // returns whose payload differs from the stored first return
  std::int64_t trimmed = 0;      // events carrying Salt's VALUE_TRIMMED marker
  std::int64_t returns = 0;      // returns newly stored in the job cache
  std::int64_t cache_writes = 0; // brine/cache/* frames applied to the job cache
  std::int64_t event_return_seen = 0;  // attached: plug-in event_return frames not archived again (in filtered)
  // Arrival times more than brine.max_clock_skew_s ahead of the clock, stored
  // as the clock's time (store::OpenOptions::max_clock_skew)
  std::int64_t future_arrivals = 0;
  // For the hourly rollups (store::HourCounts), not written as counters:
  std::int64_t jobs = 0;      // publish loads filed (a job's save_load)
  std::int64_t failures = 0;  // returns among `returns` with retcode not 0 or success false
  Counters& operator+=(const Counters& o);
};

class Archiver {
 public:
  // `log` must outlive the Archiver.
  Archiver(ArchiverOptions options, Logger& log);

  // The one preparer: sets frame.prepared, unless it is set, to what Ingest
  // makes of `frame` before it touches the store: decoding, the tag, the
  // filters and the JSON text the store keeps (prepared_frame.h). Called where
  // a frame enters the pipeline: by brine-master's reader for a bus frame and
  // one back from the overflow file, by Ingest for every other (the
  // acknowledged lane, a spool file, the overflow read by the writer, a
  // replay). Reads nothing but the options, so any thread may call it while
  // another ingests. Never throws for a frame's content: an unreadable frame
  // gets a quarantine reason. Throws std::bad_alloc, the frame then left
  // unprepared.
  void Prepare(Frame& frame) const;

  // Files `frame` into `store`, which should have a batch open, and adds what
  // happened to `counts`. Uses frame.prepared when set and returns it (for
  // FrameQueue::Recycle; the frame keeps its bytes, so a replay prepares it
  // again), else prepares the frame itself (Prepare) and returns nullptr. Throws what
  // the store throws (the caller replays the batch after reopening).
  std::unique_ptr<PreparedFrame> Ingest(store::Store& store, Frame& frame, Counters& counts);

  // Quarantines `frame` with `reason`, counting it; of a frame over
  // max_frame_bytes only a prefix (QuarantinedBytes).
  void QuarantineFrame(store::Store& store, const Frame& frame, const std::string& reason,
                       Counters& counts);

  // Whether an event with this tag goes into the archive.
  [[nodiscard]] bool PassesFilters(const std::string& tag) const;

  [[nodiscard]] bool PluginIsJobCache() const { return options_.plugin_is_job_cache; }

  // Forgets which jids' loads were counted (Counters::jobs): a replayed
  // batch counts its jobs again.
  void ForgetCountedJobs();

 private:
  // What Prepare sets.
  [[nodiscard]] std::unique_ptr<PreparedFrame> MakePrepared(const Frame& frame) const;
  static constexpr std::chrono::seconds kQuarantineLogInterval{10};

  // Ingest with the preparation at hand.
  void File(store::Store& store, const Frame& frame, PreparedFrame& prepared, Counters& counts);
  // Applies one brine/cache/* frame; returns a reason when it is malformed.
  std::optional<std::string> ApplyCacheWrite(store::Store& store, const std::string& tag, const Value& data,
                                             Counters& counts);
  // Archives the event unless the filters keep it out; `payload_is_data`: the
  // return in `outcome` has exactly this payload (stored once, shared).
  // `prepared`: its tag, data and data_json go into the archive (and come
  // back, to be freed where they were made).
  void ArchiveEvent(store::Store& store, PreparedFrame& prepared, Micros received,
                    const std::optional<store::ReturnOutcome>& outcome, bool payload_is_data, Counters& counts);
  void CountReturn(const std::optional<store::ReturnOutcome>& outcome, const Value& data,
                   const std::string& minion, Counters& counts);

  // Counts a job (Counters::jobs) the first time its load is filed: Salt
  // announces a publish twice (`new_job` and `salt/job/<jid>/new`), and the
  // second must not count. The last kCountedJobs jids are remembered.
  void CountJob(const std::string& jid, Counters& counts);
  static constexpr std::size_t kCountedJobs = 4096;

  ArchiverOptions options_;
  Logger& log_;
  std::unordered_set<std::string> counted_jobs_;
  std::deque<std::string> counted_order_;  // counted_jobs_ oldest first
  std::int64_t quarantined_since_log_ = 0;
  bool event_return_logged_ = false;
  std::chrono::steady_clock::time_point last_quarantine_log_{};
};

}  // namespace brine::master
