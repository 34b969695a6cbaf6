#include "import_local_cache.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "brine/wire/codec.h"

namespace brine::runner {
namespace {

namespace fs = std::filesystem;

constexpr int kJobsPerBatch = 200;

std::optional<std::string> ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Import {
  Context& ctx;
  store::Store& store;
  Value damaged = Value::EmptyMap();
  long long jobs = 0, jobs_present = 0, returns = 0, returns_present = 0;

  // A msgpack file's value, or nullopt after recording why not.
  std::optional<Value> ReadPacked(const fs::path& p) {
    const auto bytes = ReadText(p);
    if (!bytes) {
      damaged.Set(p.string(), "cannot be read");
      return std::nullopt;
    }
    auto v = wire::UnpackMsgpack(*bytes);
    if (!v) damaged.Set(p.string(), "not one msgpack value (" + std::to_string(bytes->size()) + " bytes)");
    return v;
  }

  void Job(const fs::path& dir) {
    std::optional<Value> load = ReadPacked(dir / ".load.p");
    if (!load) {
      if (!fs::exists(dir / ".load.p")) damaged.Set((dir / ".load.p").string(), "missing");
      return;
    }
    if (load->is_null()) *load = Value::EmptyMap();  // Salt's get_load: None is {}
    if (!load->is_map()) {
      damaged.Set((dir / ".load.p").string(), "not a map");
      return;
    }
    std::string jid;
    if (auto text = ReadText(dir / "jid")) jid = *text;
    if (jid.empty()) {
      if (const std::string* j = load->FindString("jid")) jid = *j;
    }
    if (jid.empty()) {
      damaged.Set((dir / "jid").string(), "no jid file and no jid in the load");
      return;
    }
    // The minion lists, merged as get_load merges them.
    std::set<std::string> minions;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!(name == ".minions.p" || (name.rfind(".minions.", 0) == 0 && name.size() > 11 &&
                                     name.compare(name.size() - 2, 2, ".p") == 0))) {
        continue;
      }
      const auto list = ReadPacked(e.path());
      if (!list) continue;
      if (!list->is_list()) {
        damaged.Set(e.path().string(), "not a list");
        continue;
      }
      for (const Value& m : list->as_list()) {
        if (m.is_string()) minions.insert(m.as_string());
      }
    }
    const bool present = !store.GetLoad(jid).as_map().empty();
    const bool nocache = fs::exists(dir / "nocache", ec);
    if (nocache) (void)store.PrepJid(store::Store::Caching::kNoCache, jid);
    store.SaveLoad(jid, *load, minions.empty() ? std::nullopt
                                               : std::optional(std::vector<std::string>(minions.begin(), minions.end())));
    if (present) {
      ++jobs_present;
    } else {
      ++jobs;
    }
    if (auto end = ReadText(dir / "endtime")) {
      while (!end->empty() && (end->back() == '\n' || end->back() == '\r')) end->pop_back();
      if (!end->empty()) store.UpdateEndtime(jid, *end);
    }
    if (nocache) return;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string minion = e.path().filename().string();
      // get_jid: entries starting with '.' are not minions; only dirs with a return.p.
      if (minion.empty() || minion[0] == '.' || !e.is_directory(ec) || !fs::exists(e.path() / "return.p", ec)) {
        continue;
      }
      auto r = ReadPacked(e.path() / "return.p");
      if (!r) continue;
      // The very old format held the bare value.
      if (!r->is_map() || r->Find("return") == nullptr) *r = Value::Map({{"return", std::move(*r)}});
      Value ret = Value::Map({{"jid", jid}, {"id", minion}});
      for (auto& [k, v] : r->as_map()) ret.Set(k, std::move(v));
      if (fs::exists(e.path() / "out.p", ec)) {
        if (auto out = ReadPacked(e.path() / "out.p")) ret.Set("out", std::move(*out));
      }
      const auto outcome = store.Returner(ret);
      if (outcome.kind == store::ReturnOutcome::Kind::kStored) {
        ++returns;
      } else {
        ++returns_present;
      }
    }
  }
};

}  // namespace

Value ImportLocalCache(Context& ctx, const std::filesystem::path& jobs_dir) {
  std::error_code ec;
  if (!fs::is_directory(jobs_dir, ec)) throw RuntimeFailure(jobs_dir.string() + ": not a folder (a local_cache jobs tree)");
  std::unique_ptr<store::Store> store = OpenWritableStore(ctx.config());
  const auto started = std::chrono::steady_clock::now();
  Import imp{ctx, *store};
  // Jid folders in sorted order, so a run is the same every time.
  std::vector<fs::path> dirs;
  for (const auto& top : fs::directory_iterator(jobs_dir, ec)) {
    if (!top.is_directory(ec)) continue;
    for (const auto& final_dir : fs::directory_iterator(top.path(), ec)) {
      if (final_dir.is_directory(ec)) dirs.push_back(final_dir.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  ctx.Debug("importing " + std::to_string(dirs.size()) + " job folders from " + jobs_dir.string());
  const bool tty = ::isatty(2) == 1;
  for (std::size_t i = 0; i < dirs.size(); i += kJobsPerBatch) {
    store::Batch batch = BeginBatchPatiently(*store);
    for (std::size_t j = i; j < std::min(dirs.size(), i + kJobsPerBatch); ++j) {
      try {
        imp.Job(dirs[j]);
      } catch (const store::WriteFailedError&) {
        throw;
      } catch (const store::BusyError&) {
        throw;
      } catch (const std::exception& e) {
        imp.damaged.Set(dirs[j].string(), e.what());
      }
    }
    batch.Commit();
    if (tty) {
      ctx.Progress(std::to_string(std::min(dirs.size(), i + kJobsPerBatch)) + "/" + std::to_string(dirs.size()) +
                   " job folders, " + std::to_string(imp.returns) + " returns, " +
                   std::to_string(imp.damaged.as_map().size()) + " damaged files");
    }
  }
  if (tty && !dirs.empty()) ctx.Progress("");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Value out = Value::EmptyMap();
  out.Set("jobs", imp.jobs);
  out.Set("jobs_present", imp.jobs_present);
  out.Set("returns", imp.returns);
  out.Set("returns_present", imp.returns_present);
  out.Set("damaged", std::move(imp.damaged));
  out.Set("seconds", std::round(seconds * 1000) / 1000);
  return out;
}

}  // namespace brine::runner
