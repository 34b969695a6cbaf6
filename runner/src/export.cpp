#include "export.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <set>
#include <tuple>

#include "brine/core/atomic_file.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/wire/tags.h"

namespace brine::runner {
namespace {

namespace fs = std::filesystem;

constexpr int kFormatVersion = 1;
constexpr int kRecordsPerBatch = 1000;
// Stores open at once during an import (each holds a few descriptors).
constexpr std::size_t kOpenStores = 8;

std::string Quoted(const std::string& s) { return ToJson(Value(s)); }

std::string OptionalText(const std::optional<std::string>& json) { return json ? *json : "null"; }

const char* OriginName(store::StoredJob::Origin o) {
  switch (o) {
    case store::StoredJob::Origin::kStub: return "stub";
    case store::StoredJob::Origin::kEvent: return "event";
    case store::StoredJob::Origin::kMaster: return "master";
    case store::StoredJob::Origin::kNone: break;
  }
  return "none";
}

std::optional<store::StoredJob::Origin> OriginNamed(const std::string& name) {
  if (name == "none") return store::StoredJob::Origin::kNone;
  if (name == "stub") return store::StoredJob::Origin::kStub;
  if (name == "event") return store::StoredJob::Origin::kEvent;
  if (name == "master") return store::StoredJob::Origin::kMaster;
  return std::nullopt;
}

double SecondsSince(std::chrono::steady_clock::time_point started) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return std::round(s * 1000) / 1000;
}

// One line of the file, checked against the grammar in export.h.
class Line {
 public:
  Line(Value v, std::size_t number) : v_(std::move(v)), number_(number) {}
  [[nodiscard]] const Value& value() const { return v_; }
  [[nodiscard]] const std::string& Str(const char* key) const {
    const std::string* s = v_.FindString(key);
    if (s == nullptr) Fail(std::string("\"") + key + "\" must be a string");
    return *s;
  }
  [[nodiscard]] std::optional<std::string> OptionalStr(const char* key) const {
    const Value* v = v_.Find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return Str(key);
  }
  [[nodiscard]] std::int64_t Int(const char* key) const {
    const Value* v = v_.Find(key);
    if (v == nullptr || v->kind() != Value::Kind::kInt) Fail(std::string("\"") + key + "\" must be an integer");
    return v->as_int();
  }
  [[nodiscard]] const Value& Map(const char* key) const {
    const Value* v = v_.Find(key);
    if (v == nullptr || !v->is_map()) Fail(std::string("\"") + key + "\" must be a map");
    return *v;
  }
  [[noreturn]] void Fail(const std::string& why) const {
    throw RuntimeFailure("line " + std::to_string(number_) + ": " + why);
  }

 private:
  Value v_;
  std::size_t number_;
};

// The stores the import writes through, one per master id (an archived
// event records the master that archived it, and a Store archives under its
// OpenOptions::master_id). At most one holds an open batch, and at most
// kOpenStores are open: a file from 2,000 masters ran a store per id out of
// descriptors partway (issue 25, item 15), so the least recently used closes.
class Importer {
 public:
  explicit Importer(Context& ctx) : ctx_(ctx) {}

  // The store for events archived by `master_id` ("" for jobs and returns:
  // the config's id, as brine-master would open it), with the batch open on it.
  store::Store& For(const std::string& master_id) {
    const std::string& key = master_id.empty() ? ctx_.config().id : master_id;
    if (current_ != nullptr && current_key_ == key) return *current_;
    Commit();
    auto it = std::find_if(open_.begin(), open_.end(), [&](const auto& e) { return e.first == key; });
    if (it != open_.end()) {
      open_.splice(open_.begin(), open_, it);
    } else {
      if (open_.size() >= kOpenStores) {
        // No batch is open on it (Commit() above); its count outlives it.
        closed_future_arrivals_ += open_.back().second->FutureArrivals();
        open_.pop_back();
      }
      // Arrival times are checked against the real clock, not the file's
      // (a line stamped in 2100 would push every later live event there).
      store::OpenOptions o{.master_id = key,
                           .clock = &clock_,
                           .max_clock_skew = std::chrono::seconds(ctx_.config().brine.max_clock_skew_s),
                           .skew_clock = &ctx_.clock()};
      open_.emplace_front(key, OpenWritableStore(ctx_.config(), o));
    }
    current_ = open_.front().second.get();
    current_key_ = key;
    batch_.emplace(BeginBatchPatiently(*current_));
    return *current_;
  }
  // Counts a record, committing every kRecordsPerBatch.
  void Wrote() {
    if (++in_batch_ >= kRecordsPerBatch) Commit();
  }
  void Commit() {
    if (batch_) batch_->Commit();
    batch_.reset();
    current_ = nullptr;
    in_batch_ = 0;
  }
  // What the store's time is during the next write (arrival and first-seen times).
  void At(Micros t) { clock_.Set(t); }
  // Arrival times taken as now, being further ahead of the real clock than
  // brine.max_clock_skew_s (store::OpenOptions::max_clock_skew).
  std::int64_t FutureArrivals() const {
    std::int64_t n = closed_future_arrivals_;
    for (const auto& [key, store] : open_) n += store->FutureArrivals();
    return n;
  }

 private:
  Context& ctx_;
  FakeClock clock_{Micros{}};  // outlives the stores below
  // Most recently used first.
  std::list<std::pair<std::string, std::unique_ptr<store::Store>>> open_;
  store::Store* current_ = nullptr;
  std::string current_key_;
  std::optional<store::Batch> batch_;  // destroyed (rolled back) before open_
  int in_batch_ = 0;
  std::int64_t closed_future_arrivals_ = 0;  // of the stores closed to stay within kOpenStores
};

}  // namespace

Value Export(Context& ctx, const fs::path& file, std::optional<Micros> since, std::optional<Micros> until) {
  const auto started = std::chrono::steady_clock::now();
  store::Store& store = ctx.Store();
  // A private temp file (0600, like the store: every return is in it) under a
  // random name beside `file`, renamed into place (core/atomic_file.h): a
  // predictable FILE.tmp<pid> was a link another account could plant
  // (issue 25, items 9 and 10). A destination that is a symlink is refused.
  std::optional<AtomicFile> out;
  try {
    out.emplace(file, AtomicFile::Options{.mode = 0600});
  } catch (const FileError& e) {
    throw RuntimeFailure(e.what());
  }
  long long jobs = 0, returns = 0, events = 0;
  auto bound = [](const std::optional<Micros>& t) { return t ? Quoted(FormatStamp(*t)) : std::string("null"); };
  out->Write("{\"brine_export\":" + std::to_string(kFormatVersion) + ",\"schema\":" +
             std::to_string(store.SchemaVersion()) + ",\"since\":" + bound(since) + ",\"until\":" + bound(until) +
             "}\n");
  // A jid is its UTC start time: [since, until) is a range of jid text.
  // until's bound is the jid of the microsecond before it with every suffix.
  std::optional<std::string> jid_min, jid_max;
  if (since) jid_min = FormatJid(*since);
  if (until) jid_max = FormatJid(*until - std::chrono::microseconds(1)) + "~";
  ctx.Debug("exporting jobs with jids from " + jid_min.value_or("the first") + " to " + jid_max.value_or("the last") +
            " to " + file.string());
  try {
    std::string line;
    store.ForEachStoredJob(jid_min, jid_max, [&](store::StoredJob&& job) {
      line = "{\"job\":" + Quoted(job.jid) + ",\"origin\":\"" + OriginName(job.origin) +
             "\",\"load\":" + OptionalText(job.load_json) + ",\"metadata\":" + OptionalText(job.metadata_json) +
             ",\"minions\":" + ToJson(Value([&] {
               ValueList l;
               for (auto& m : job.minions) l.emplace_back(std::move(m));
               return l;
             }())) +
             ",\"nocache\":" + (job.nocache ? "true" : "false") +
             ",\"endtime\":" + (job.endtime ? Quoted(*job.endtime) : "null") +
             ",\"seen_us\":" + std::to_string(ToUnixMicros(job.seen)) + "}\n";
      out->Write(line);
      ++jobs;
      for (const store::StoredReturn& r : job.returns) {
        line = "{\"return\":" + Quoted(job.jid) + ",\"minion\":" + Quoted(r.minion) +
               ",\"received_us\":" + std::to_string(ToUnixMicros(r.received)) + ",\"load\":";
        line += r.full_ret_json;
        line += "}\n";
        out->Write(line);
        ++returns;
      }
    });
    store.ForEachEvent(since, until, [&](store::ArchivedEvent&& e) {
      line = "{\"event\":" + Quoted(e.tag) + ",\"master_id\":" + Quoted(e.master_id) +
             ",\"received_us\":" + std::to_string(ToUnixMicros(e.received)) + ",\"data\":";
      line += e.data_json;
      line += "}\n";
      out->Write(line);
      ++events;
    });
    out->Commit();
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());  // the temp file goes with `out`
  } catch (const FileError& e) {
    throw RuntimeFailure(e.what());
  }
  std::error_code ec;
  Value result = Value::EmptyMap();
  result.Set("file", fs::absolute(file).string());
  result.Set("jobs", jobs);
  result.Set("returns", returns);
  result.Set("events", events);
  result.Set("bytes", static_cast<long long>(fs::file_size(file, ec)));
  result.Set("seconds", SecondsSince(started));
  return result;
}

Value ImportExport(Context& ctx, const fs::path& file) {
  const auto started = std::chrono::steady_clock::now();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw RuntimeFailure(file.string() + ": cannot be read");
  Importer imp(ctx);
  long long jobs = 0, jobs_present = 0, returns = 0, returns_present = 0, events = 0, events_present = 0;
  // Events already archived around the ones being read: (arrival, master, tag),
  // looked up a window at a time.
  std::set<std::tuple<std::int64_t, std::string, std::string>> archived;
  std::int64_t archived_until = std::numeric_limits<std::int64_t>::min();
  std::string text;
  std::size_t number = 0;
  bool header = false;
  try {
    while (std::getline(in, text)) {
      ++number;
      if (text.empty()) continue;
      Value parsed;
      try {
        parsed = ParseJson(text);
      } catch (const std::exception& e) {
        throw RuntimeFailure("line " + std::to_string(number) + ": not JSON (" + e.what() + ")");
      }
      const Line line(std::move(parsed), number);
      if (!line.value().is_map()) line.Fail("not a JSON object");
      if (!header) {
        if (line.Int("brine_export") != kFormatVersion) line.Fail("not a brine.export file of version 1");
        header = true;
        continue;
      }
      if (line.value().Find("job") != nullptr) {
        const std::string& jid = line.Str("job");
        const auto origin = OriginNamed(line.Str("origin"));
        if (!origin) line.Fail("unknown origin");
        std::vector<std::string> minions;
        const Value* list = line.value().Find("minions");
        if (list == nullptr || !list->is_list()) line.Fail("\"minions\" must be a list");
        for (const Value& m : list->as_list()) {
          if (!m.is_string()) line.Fail("\"minions\" must hold strings");
          minions.push_back(m.as_string());
        }
        store::Store& s = imp.For("");
        imp.At(FromUnixMicros(line.Int("seen_us")));
        const bool present = !s.GetLoad(jid).as_map().empty();
        const Value* nocache = line.value().Find("nocache");
        (void)s.PrepJid(nocache != nullptr && nocache->Truthy() ? store::Store::Caching::kNoCache
                                                                : store::Store::Caching::kCache,
                        jid);
        const auto expected = minions.empty() ? std::nullopt : std::optional(minions);
        switch (*origin) {
          case store::StoredJob::Origin::kMaster: s.SaveCacheLoad(jid, line.Map("load"), expected); break;
          case store::StoredJob::Origin::kEvent: s.SaveLoad(jid, line.Map("load"), expected); break;
          // A stub is rebuilt by the job's first return, as it was built.
          case store::StoredJob::Origin::kStub: break;
          case store::StoredJob::Origin::kNone:
            if (expected) s.SaveMinions(jid, *expected, std::nullopt);
            break;
        }
        if (auto end = line.OptionalStr("endtime")) s.UpdateEndtime(jid, *end);
        ++(present ? jobs_present : jobs);
      } else if (line.value().Find("return") != nullptr) {
        store::Store& s = imp.For("");
        imp.At(FromUnixMicros(line.Int("received_us")));
        const auto outcome = s.Returner(line.Map("load"));
        ++(outcome.kind == store::ReturnOutcome::Kind::kStored ? returns : returns_present);
      } else if (line.value().Find("event") != nullptr) {
        const std::string& tag = line.Str("event");
        const std::string& master = line.Str("master_id");
        const std::int64_t received_us = line.Int("received_us");
        store::Store& s = imp.For(master);
        if (received_us >= archived_until) {
          // The next hour of the archive, to tell which events are there already.
          archived.clear();
          archived_until = received_us + 3600LL * 1000000;
          s.ForEachEvent(FromUnixMicros(received_us), FromUnixMicros(archived_until), [&](store::ArchivedEvent&& e) {
            archived.emplace(ToUnixMicros(e.received), std::move(e.master_id), std::move(e.tag));
          });
        }
        if (archived.count({received_us, master, tag}) != 0) {
          ++events_present;
          continue;
        }
        store::Event ev{.tag = tag, .data = line.Map("data"), .received = FromUnixMicros(received_us)};
        // A return's event shares the stored return's payload, as brine-master archives it.
        const auto kind = wire::ParseTag(tag).kind;
        if ((kind == wire::TagInfo::Kind::kReturn || kind == wire::TagInfo::Kind::kBareJid) &&
            ev.data.Find("jid") != nullptr && ev.data.Find("id") != nullptr) {
          if (auto same = s.FindSameReturn(ev.data)) {
            ev.same_as_return = same->id;
            ev.own_stamp = same->stamp_differs;
          }
        }
        s.EventReturn(std::span<const store::Event>(&ev, 1));
        ++events;
      } else {
        line.Fail("neither a job, a return nor an event");
      }
      imp.Wrote();
    }
    imp.Commit();
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());
  }
  if (!header) throw RuntimeFailure(file.string() + ": empty, not a brine.export file");
  Value out = Value::EmptyMap();
  out.Set("jobs", jobs);
  out.Set("jobs_present", jobs_present);
  out.Set("returns", returns);
  out.Set("returns_present", returns_present);
  out.Set("events", events);
  out.Set("events_present", events_present);
  out.Set("future_arrivals", static_cast<long long>(imp.FutureArrivals()));
  out.Set("seconds", SecondsSince(started));
  return out;
}

}  // namespace brine::runner
