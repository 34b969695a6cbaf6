#include "brine/master/archiver.h"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "brine/core/glob.h"
#include "brine/core/json.h"
#include "brine/master/spool.h"
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
  store.Quarantine(QuarantinedBytes(frame, options_.max_frame_bytes, reason), reason, frame.received);
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

void Archiver::CountReturn(const std::optional<store::ReturnOutcome>& outcome, const Value& data,
                           const std::string& minion, Counters& counts) {
  if (!outcome) return;
  switch (outcome->kind) {
    case store::ReturnOutcome::Kind::kStored: ++counts.returns; break;
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

void Archiver::Ingest(store::Store& store, const Frame& frame, Counters& counts) {
  if (!frame.damage.empty()) {
    QuarantineFrame(store, frame, frame.damage, counts);
    return;
  }
  if (frame.parts != 1) {
    QuarantineFrame(store, frame, "multi-part message of " + std::to_string(frame.parts) + " parts", counts);
    return;
  }
  auto decoded = wire::DecodeFrame(frame.bytes, {.max_frame_bytes = options_.max_frame_bytes});
  if (auto* bad = std::get_if<wire::Undecodable>(&decoded)) {
    QuarantineFrame(store, frame, bad->reason, counts);
    return;
  }
  auto& event = std::get<wire::DecodedEvent>(decoded);
  if (event.tag.compare(0, kCacheTagPrefix.size(), kCacheTagPrefix) == 0) {
    if (options_.plugin_is_job_cache && frame.source == Frame::Source::kBus) {
      QuarantineFrame(store, frame,
                      event.tag + " on the bus: with master_job_cache: brine, job-cache writes are taken only "
                                  "from the plug-in's acknowledged socket and spool",
                      counts);
      return;
    }
    if (auto bad = ApplyCacheWrite(store, event.tag, event.data, counts)) {
      QuarantineFrame(store, frame, *bad, counts);
      return;
    }
    ++counts.received;
    ++counts.cache_writes;
    return;
  }
  ++counts.received;
  if (event.trimmed) ++counts.trimmed;

  const wire::TagInfo tag = wire::ParseTag(event.tag);
  std::optional<store::ReturnOutcome> outcome;
  bool payload_is_data = false;  // the return stored is exactly this event's data
  const Value& data = event.data;
  if (options_.plugin_is_job_cache) {
    // The plug-in alone fills the job cache; a return event only shares the
    // payload of the same return when the plug-in stored it.
    const bool is_return = tag.kind == wire::TagInfo::Kind::kReturn ||
                           (tag.kind == wire::TagInfo::Kind::kBareJid && IsReturnLoad(data));
    if (is_return && data.Find("jid") != nullptr && data.Find("id") != nullptr) {
      outcome = store.FindSameReturn(data);
      payload_is_data = outcome.has_value();
    }
    ArchiveEvent(store, std::move(event.tag), std::move(event.data), frame.received, outcome, payload_is_data,
                 counts);
    return;
  }
  switch (tag.kind) {
    case wire::TagInfo::Kind::kNew:
    case wire::TagInfo::Kind::kLegacyNewJob: {
      std::string jid = tag.jid;
      if (jid.empty()) {
        const std::string* j = data.FindString("jid");
        if (j == nullptr) break;
        jid = *j;
      }
      Value load = data;
      load.Erase("_stamp");
      const Value* minions = data.Find("minions");
      std::optional<std::vector<std::string>> minion_list;
      if (minions != nullptr && minions->is_list()) minion_list = StringList(minions);
      load.Erase("minions");
      store.SaveLoad(jid, load, minion_list);
      break;
    }
    case wire::TagInfo::Kind::kBareJid:
      if (IsReturnLoad(data)) {
        if (options_.job_cache) {
          Value scratch;
          const Value* text_jid = WithTextJid(data, scratch);
          outcome = store.Returner(text_jid != nullptr ? *text_jid : data);
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
          outcome = store.Returner(data);
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
        outcome = store.Returner(load);
      }
      break;
    default:
      break;
  }
  CountReturn(outcome, data, tag.minion, counts);
  if (outcome && outcome->kind == store::ReturnOutcome::Kind::kNotCached &&
      (tag.kind == wire::TagInfo::Kind::kReturn || tag.kind == wire::TagInfo::Kind::kBareJid)) {
    const Value* jid = data.Find("jid");
    if (jid != nullptr && !jid->is_string()) {
      // Never silently: the event is archived, the job cache says why not.
      log_.Log(LogLevel::kWarning, "a return under " + event.tag + " is not filed in the job cache: its jid is " +
                                       ToJson(*jid) + ", neither text nor an integer");
    }
  }
  ArchiveEvent(store, std::move(event.tag), std::move(event.data), frame.received, outcome, payload_is_data, counts);
}

void Archiver::ArchiveEvent(store::Store& store, std::string tag, Value data, Micros received,
                            const std::optional<store::ReturnOutcome>& outcome, bool payload_is_data,
                            Counters& counts) {
  if (!PassesFilters(tag)) {
    ++counts.filtered;
    return;
  }
  store::Event archived{.tag = std::move(tag), .data = std::move(data), .received = received};
  if (outcome && payload_is_data &&
      (outcome->kind == store::ReturnOutcome::Kind::kStored ||
       outcome->kind == store::ReturnOutcome::Kind::kRepeat)) {
    // The payload is the stored return's: keep a reference, not a second copy.
    archived.same_as_return = outcome->id;
    archived.own_stamp = outcome->kind == store::ReturnOutcome::Kind::kRepeat && outcome->stamp_differs;
  }
  store.EventReturn(std::span<const store::Event>(&archived, 1));
  ++counts.stored;
}

}  // namespace brine::master
