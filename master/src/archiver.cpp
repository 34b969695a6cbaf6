#include "archiver.h"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "brine/core/glob.h"
#include "brine/core/json.h"
#include "spool.h"
#include "brine/wire/codec.h"
#include "brine/wire/tags.h"

namespace brine::master {
namespace {

std::vector<std::string> StringList(const Value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_list()) return out;
  for (const Value& item : v->as_list()) {
    if (item.is_string()) out.push_back(item.as_string());
  }
  return out;
}

bool IsReturnLoad(const Value& data) {
  const std::string* cmd = data.FindString("cmd");
  return cmd != nullptr && *cmd == "_return";
}

// A return whose `jid` is an int (a hand-made event, an old minion) is
// filed under str(jid), as Salt's string handling of the jid would: a copy
// with the jid as text in `scratch`; else nullptr (the data is used as is).
const Value* WithTextJid(const Value& data, Value& scratch) {
  const Value* jid = data.Find("jid");
  if (jid == nullptr) return nullptr;
  std::string text;
  if (jid->kind() == Value::Kind::kInt) {
    text = std::to_string(jid->as_int());
  } else if (jid->kind() == Value::Kind::kUint) {
    text = std::to_string(jid->as_uint());
  } else {
    return nullptr;
  }
  scratch = data;
  scratch.Set("jid", std::move(text));
  return &scratch;
}

// What one heap allocation costs beyond its bytes (glibc's chunk header).
constexpr std::size_t kAllocOverhead = 16;

// The heap bytes a string holds: none while it fits the small-string buffer.
std::size_t HeapBytes(const std::string& s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 + kAllocOverhead : 0;
}

// The heap bytes a Value tree holds (each node's own size is its parent's).
std::size_t HeapBytes(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return HeapBytes(v.as_string());
    case Value::Kind::kList: {
      const ValueList& list = v.as_list();
      std::size_t n = list.capacity() == 0 ? 0 : list.capacity() * sizeof(Value) + kAllocOverhead;
      for (const Value& item : list) n += HeapBytes(item);
      return n;
    }
    case Value::Kind::kMap: {
      const ValueMap& map = v.as_map();
      std::size_t n = map.capacity() == 0 ? 0 : map.capacity() * sizeof(ValueMap::value_type) + kAllocOverhead;
      for (const auto& [key, item] : map) n += HeapBytes(key) + HeapBytes(item);
      return n;
    }
    default:
      return 0;
  }
}

std::optional<std::vector<std::string>> OptionalStringList(const Value* v) {
  if (v == nullptr || !v->is_list()) return std::nullopt;
  return StringList(v);
}

}  // namespace

bool IsCacheFrame(std::string_view frame_bytes) {
  return frame_bytes.substr(0, kCacheTagPrefix.size()) == kCacheTagPrefix;
}

Counters& Counters::operator+=(const Counters& o) {
  received += o.received;
  stored += o.stored;
  filtered += o.filtered;
  quarantined += o.quarantined;
  duplicates += o.duplicates;
  trimmed += o.trimmed;
  returns += o.returns;
  cache_writes += o.cache_writes;
  event_return_seen += o.event_return_seen;
  future_arrivals += o.future_arrivals;
  jobs += o.jobs;
  failures += o.failures;
  return *this;
}

Archiver::Archiver(ArchiverOptions options, Logger& log) : options_(std::move(options)), log_(log) {}

bool Archiver::PassesFilters(const std::string& tag) const {
  // Salt's EventReturn: a non-empty whitelist must match, then any blacklist match drops.
  if (!options_.whitelist.empty()) {
    bool hit = false;
    for (const auto& g : options_.whitelist) hit = hit || FnMatch(g, tag);
    if (!hit) return false;
  }
  for (const auto& g : options_.blacklist) {
    if (FnMatch(g, tag)) return false;
  }
  return true;
}

std::string_view QuarantinedBytes(const Frame& frame, std::size_t max_frame_bytes, std::string& reason) {
  if (frame.bytes.size() <= max_frame_bytes) return frame.bytes;
  // Never the whole of a frame past the limit: a prefix, its length and a
  // checksum are enough to recognise it, and an insert of a gigabyte would
  // fail (SQLITE_TOOBIG) and hold up every frame behind it.
  const std::size_t keep = std::min(frame.bytes.size(), kQuarantineOversizeKeep);
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", Crc32(frame.bytes));
  reason += " (" + std::to_string(frame.bytes.size()) + " bytes, crc32 " + crc + "; the first " + std::to_string(keep) +
            " kept)";
  return std::string_view(frame.bytes).substr(0, keep);
}

void Archiver::QuarantineFrame(store::Store& store, const Frame& frame, const std::string& why,
                               Counters& counts) {
  std::string reason = why;
  const std::int64_t future_before = store.FutureArrivals();
  store.Quarantine(QuarantinedBytes(frame, options_.max_frame_bytes, reason), reason, frame.received);
  counts.future_arrivals += store.FutureArrivals() - future_before;
  ++counts.received;
  ++counts.quarantined;
  // Once per burst: a frame is logged when none was for kQuarantineLogInterval;
  // the line counts the frames since the previous line (the `quarantined`
  // counter has the exact total).
  ++quarantined_since_log_;
  const auto now = std::chrono::steady_clock::now();
  if (last_quarantine_log_ == std::chrono::steady_clock::time_point{} ||
      now - last_quarantine_log_ >= kQuarantineLogInterval) {
    log_.Log(LogLevel::kWarning,
             "quarantined " + std::to_string(quarantined_since_log_) + " undecodable frame" +
                 (quarantined_since_log_ == 1 ? "" : "s") + "; the latest: " + reason + " (" +
                 std::to_string(frame.bytes.size()) + " bytes; kept in the quarantine table)");
    last_quarantine_log_ = now;
    quarantined_since_log_ = 0;
  }
}

std::optional<std::string> Archiver::ApplyCacheWrite(store::Store& store, const std::string& tag,
                                                     const Value& data, Counters& counts) {
  const std::string op = tag.substr(kCacheTagPrefix.size());
  const std::string* jid = data.FindString("jid");
  if (op == "return") {
    if (jid == nullptr || data.FindString("id") == nullptr || data.Find("return") == nullptr) {
      return "brine/cache/return: the load lacks jid, id or return";
    }
    std::optional<store::ReturnOutcome> outcome;
    if (options_.job_cache) outcome = store.Returner(data);
    CountReturn(outcome, data, *data.FindString("id"), counts);
    return std::nullopt;
  }
  if (jid == nullptr || jid->empty()) return tag + ": no jid";
  if (op == "save_load") {
    const Value* load = data.Find("load");
    if (load == nullptr || !load->is_map()) return tag + ": the load is not a map";
    store.SaveCacheLoad(*jid, *load, OptionalStringList(data.Find("minions")));
    CountJob(*jid, counts);
  } else if (op == "save_minions") {
    const Value* minions = data.Find("minions");
    if (minions == nullptr || !minions->is_list()) return tag + ": minions is not a list";
    const std::string* syndic = data.FindString("syndic_id");
    store.SaveMinions(*jid, StringList(minions), syndic ? std::optional(*syndic) : std::nullopt);
  } else if (op == "endtime") {
    const std::string* endtime = data.FindString("endtime");
    if (endtime == nullptr) return tag + ": endtime is not a string";
    store.UpdateEndtime(*jid, *endtime);
  } else if (op == "prep_jid") {
    const Value* nocache = data.Find("nocache");
    (void)store.PrepJid(nocache != nullptr && nocache->Truthy() ? store::Store::Caching::kNoCache
                                                                 : store::Store::Caching::kCache,
                        *jid);
  } else {
    return "unknown job-cache operation " + tag;
  }
  return std::nullopt;
}

void Archiver::CountJob(const std::string& jid, Counters& counts) {
  if (!counted_jobs_.insert(jid).second) return;
  counted_order_.push_back(jid);
  if (counted_order_.size() > kCountedJobs) {
    counted_jobs_.erase(counted_order_.front());
    counted_order_.pop_front();
  }
  ++counts.jobs;
}

void Archiver::ForgetCountedJobs() {
  counted_jobs_.clear();
  counted_order_.clear();
}

void Archiver::CountReturn(const std::optional<store::ReturnOutcome>& outcome, const Value& data,
                           const std::string& minion, Counters& counts) {
  if (!outcome) return;
  switch (outcome->kind) {
    case store::ReturnOutcome::Kind::kStored: {
      ++counts.returns;
      // As the store's failed_returns judges the row (retcode <> 0 OR success = 0).
      const Value* rc = data.Find("retcode");
      const Value* ok = data.Find("success");
      if ((rc != nullptr && rc->kind() == Value::Kind::kInt && rc->as_int() != 0) ||
          (ok != nullptr && ok->is_bool() && !ok->as_bool())) {
        ++counts.failures;
      }
      break;
    }
    case store::ReturnOutcome::Kind::kConflict:
      ++counts.duplicates;
      log_.Log(LogLevel::kWarning,
               "An extra return was detected from minion " + (data.FindString("id") ? *data.FindString("id") : minion) +
                   " for job " + outcome->jid + " with a different payload; the first return is kept. "
                   "Please verify the minion, this could be a replay attack");
      break;
    default: break;
  }
}

void Archiver::Prepare(Frame& frame) const {
  if (!frame.prepared) frame.prepared = MakePrepared(frame);
}

std::unique_ptr<PreparedFrame> Archiver::MakePrepared(const Frame& frame) const {
  auto p = std::make_unique<PreparedFrame>();
  auto quarantine = [&p](std::string reason) {
    p->quarantine = std::move(reason);
    p->bytes = sizeof(PreparedFrame) + HeapBytes(p->quarantine);
    return std::move(p);
  };
  if (!frame.damage.empty()) return quarantine(frame.damage);
  if (frame.parts != 1) return quarantine("multi-part message of " + std::to_string(frame.parts) + " parts");
  auto decoded = wire::DecodeFrame(frame.bytes, {.max_frame_bytes = options_.max_frame_bytes});
  if (auto* bad = std::get_if<wire::Undecodable>(&decoded)) return quarantine(std::move(bad->reason));
  auto& event = std::get<wire::DecodedEvent>(decoded);
  p->tag = std::move(event.tag);
  p->data = std::move(event.data);
  p->trimmed = event.trimmed;
  if (p->tag.compare(0, kCacheTagPrefix.size(), kCacheTagPrefix) == 0) {
    p->cache_write = true;
    p->bytes = sizeof(PreparedFrame) + HeapBytes(p->tag) + HeapBytes(p->data);
    return p;
  }
  p->tag_info = wire::ParseTag(p->tag);
  p->archived = PassesFilters(p->tag);
  const Value& data = p->data;
  const auto kind = p->tag_info.kind;
  const bool is_return = kind == wire::TagInfo::Kind::kReturn ||
                         (kind == wire::TagInfo::Kind::kBareJid && IsReturnLoad(data));
  if (!options_.plugin_is_job_cache &&
      (kind == wire::TagInfo::Kind::kNew || kind == wire::TagInfo::Kind::kLegacyNewJob)) {
    // Salt's save_load of a publish: the data without _stamp and minions.
    const std::string* data_jid = data.FindString("jid");
    if (!p->tag_info.jid.empty() || data_jid != nullptr) {
      p->load_jid = !p->tag_info.jid.empty() ? p->tag_info.jid : *data_jid;
      p->load = data;
      p->load.Erase("_stamp");
      if (const Value* minions = data.Find("minions"); minions != nullptr && minions->is_list()) {
        p->minions = StringList(minions);
      }
      p->load.Erase("minions");
      p->load_json = ToJson(p->load);
    }
  }
  // The archive keeps the data as is unless it shares a stored return's
  // payload; a return is stored as is by the job cache.
  if (p->archived || (is_return && options_.job_cache && !options_.plugin_is_job_cache)) {
    p->data_json = ToJson(data);
  }
  p->bytes = sizeof(PreparedFrame) + HeapBytes(p->tag) + HeapBytes(p->data) + HeapBytes(p->tag_info.jid) +
             HeapBytes(p->tag_info.minion) + HeapBytes(p->data_json) + HeapBytes(p->load) + HeapBytes(p->load_json) +
             (p->load_jid ? HeapBytes(*p->load_jid) : 0);
  if (p->minions) {
    p->bytes += kAllocOverhead + p->minions->capacity() * sizeof(std::string);
    for (const std::string& m : *p->minions) p->bytes += HeapBytes(m);
  }
  return p;
}

std::unique_ptr<PreparedFrame> Archiver::Ingest(store::Store& store, Frame& frame, Counters& counts) {
  const bool by_caller = frame.prepared != nullptr;
  if (!by_caller) Prepare(frame);
  std::unique_ptr<PreparedFrame> owned = std::move(frame.prepared);
  File(store, frame, *owned, counts);
  if (!by_caller) owned.reset();
  return owned;
}

void Archiver::File(store::Store& store, const Frame& frame, PreparedFrame& p, Counters& counts) {
  if (!p.quarantine.empty()) {
    QuarantineFrame(store, frame, p.quarantine, counts);
    return;
  }
  if (p.cache_write) {
    if (options_.plugin_is_job_cache && frame.source == Frame::Source::kBus) {
      QuarantineFrame(store, frame,
                      p.tag + " on the bus: with master_job_cache: brine, job-cache writes are taken only "
                              "from the plug-in's acknowledged socket and spool",
                      counts);
      return;
    }
    if (auto bad = ApplyCacheWrite(store, p.tag, p.data, counts)) {
      QuarantineFrame(store, frame, *bad, counts);
      return;
    }
    ++counts.received;
    ++counts.cache_writes;
    return;
  }
  if (options_.attached && frame.source != Frame::Source::kBus) {
    ++counts.received;
    ++counts.filtered;
    ++counts.event_return_seen;
    if (!event_return_logged_) {
      event_return_logged_ = true;
      log_.Log(LogLevel::kWarning,
               "the Salt plug-in's event_return frames are acknowledged but not archived: attached, brine-master "
               "reads every event from the master's bus already; drop `event_return: brine` from the master's config");
    }
    return;
  }
  if (options_.skip_peer_events && p.data.is_map() && p.data.Find("__peer_id") != nullptr) {
    ++counts.received;
    ++counts.filtered;
    return;
  }
  ++counts.received;
  if (p.trimmed) ++counts.trimmed;

  const wire::TagInfo& tag = p.tag_info;
  std::optional<store::ReturnOutcome> outcome;
  bool payload_is_data = false;  // the return stored is exactly this event's data
  bool outcome_counted = false;
  const Value& data = p.data;
  // The data as is to the job cache, with its JSON text when prepared.
  auto return_data = [&] { return p.data_json.empty() ? store.Returner(data) : store.Returner(data, p.data_json); };
  if (options_.plugin_is_job_cache) {
    // The plug-in alone fills the job cache; a return event only shares the
    // payload of the same return when the plug-in stored it.
    const bool is_return = tag.kind == wire::TagInfo::Kind::kReturn ||
                           (tag.kind == wire::TagInfo::Kind::kBareJid && IsReturnLoad(data));
    if (is_return && data.Find("jid") != nullptr && data.Find("id") != nullptr) {
      outcome = store.FindSameReturn(data);
      payload_is_data = outcome.has_value();
    }
    ArchiveEvent(store, p, frame.received, outcome, payload_is_data, counts);
    return;
  }
  switch (tag.kind) {
    case wire::TagInfo::Kind::kNew:
    case wire::TagInfo::Kind::kLegacyNewJob:
      if (p.load_jid) {
        store.SaveLoad(*p.load_jid, p.load, p.load_json, p.minions);
        CountJob(*p.load_jid, counts);
      }
      break;
    case wire::TagInfo::Kind::kBareJid:
      if (IsReturnLoad(data)) {
        if (options_.job_cache) {
          Value scratch;
          const Value* text_jid = WithTextJid(data, scratch);
          outcome = text_jid != nullptr ? store.Returner(*text_jid) : return_data();
          payload_is_data = text_jid == nullptr;
        }
      } else if (const Value* minions = data.Find("minions"); minions != nullptr && minions->is_list()) {
        store.SaveMinions(tag.jid, StringList(minions), std::nullopt);
      }
      break;
    case wire::TagInfo::Kind::kReturn:
      if (options_.job_cache) {
        if (data.Find("jid") == nullptr || data.Find("id") == nullptr) {
          Value filled = data;
          if (filled.Find("jid") == nullptr) filled.Set("jid", tag.jid);
          if (filled.Find("id") == nullptr) filled.Set("id", tag.minion);
          outcome = store.Returner(filled);
        } else if (Value scratch; const Value* text_jid = WithTextJid(data, scratch)) {
          outcome = store.Returner(*text_jid);
        } else {
          outcome = return_data();
          payload_is_data = true;
        }
      }
      break;
    case wire::TagInfo::Kind::kRunReturn:
      if (options_.runner_returns && options_.job_cache) {
        // Salt's store_job for a runner: the load names the master as target and
        // carries the whole runner data as its return; the result is filed under
        // one pseudo-minion, the master id. (Runner results are small, so this
        // one copy in the load is kept for Salt's shape.)
        Value load = Value::EmptyMap();
        load.Set("id", options_.master_id);
        load.Set("tgt", options_.master_id);
        load.Set("jid", tag.jid);
        load.Set("return", data);
        load.Set("arg", Value::EmptyList());
        load.Set("tgt_type", "glob");
        if (const Value* fun = data.Find("fun")) load.Set("fun", *fun);
        if (const Value* user = data.Find("user")) load.Set("user", *user);
        store.SaveLoad(tag.jid, load, std::nullopt);
        CountJob(tag.jid, counts);
        outcome = store.Returner(load);
        // Counted as the store judges the load it stored (no retcode or success).
        CountReturn(outcome, load, tag.minion, counts);
        outcome_counted = true;
      }
      break;
    default:
      break;
  }
  if (!outcome_counted) CountReturn(outcome, data, tag.minion, counts);
  if (outcome && outcome->kind == store::ReturnOutcome::Kind::kNotCached &&
      (tag.kind == wire::TagInfo::Kind::kReturn || tag.kind == wire::TagInfo::Kind::kBareJid)) {
    const Value* jid = data.Find("jid");
    if (jid != nullptr && !jid->is_string()) {
      // Never silently: the event is archived, the job cache says why not.
      log_.Log(LogLevel::kWarning, "a return under " + p.tag + " is not filed in the job cache: its jid is " +
                                       ToJson(*jid) + ", neither text nor an integer");
    }
  }
  ArchiveEvent(store, p, frame.received, outcome, payload_is_data, counts);
}

void Archiver::ArchiveEvent(store::Store& store, PreparedFrame& prepared, Micros received,
                            const std::optional<store::ReturnOutcome>& outcome, bool payload_is_data,
                            Counters& counts) {
  if (!prepared.archived) {
    ++counts.filtered;
    return;
  }
  store::Event archived{.tag = std::move(prepared.tag),
                        .data = std::move(prepared.data),
                        .received = received,
                        .data_json = std::move(prepared.data_json)};
  struct GiveBack {  // whatever EventReturn does, also when it throws
    store::Event& from;
    PreparedFrame& to;
    ~GiveBack() {
      to.tag = std::move(from.tag);
      to.data = std::move(from.data);
      to.data_json = std::move(from.data_json);
    }
  } give_back{archived, prepared};
  if (outcome && payload_is_data &&
      (outcome->kind == store::ReturnOutcome::Kind::kStored ||
       outcome->kind == store::ReturnOutcome::Kind::kRepeat)) {
    // The payload is the stored return's: keep a reference, not a second copy.
    archived.same_as_return = outcome->id;
    archived.own_stamp = outcome->kind == store::ReturnOutcome::Kind::kRepeat && outcome->stamp_differs;
  }
  const std::int64_t future_before = store.FutureArrivals();
  store.EventReturn(std::span<const store::Event>(&archived, 1));
  counts.future_arrivals += store.FutureArrivals() - future_before;
  ++counts.stored;
}

}  // namespace brine::master
