// store_bench: the store API's write rate and bytes on disk.
//
// Feeds a Salt-like stream straight into the store, the way brine-master
// does: per job a bare-jid event {minions}, a salt/job/<jid>/new event and 10
// returns of ~400 bytes of JSON from 1,000 interleaved minions; every event
// archived (returns sharing their payload), batches committed every N events.
// Prints events/s and returns/s, then bytes on disk against the JSON bytes
// (data plus tag) of the events, per table and index from dbstat.
//
// usage: store_bench [--jobs N] [--batch N] [--minions N] [--db PATH]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"

namespace {

using brine::Value;
using Clock = std::chrono::steady_clock;

struct Args {
  int jobs = 20000;
  int batch = 10000;
  int minions = 1000;
  int returns_per_job = 10;
  std::filesystem::path db;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--jobs") a.jobs = std::stoi(argv[i + 1]);
    else if (k == "--batch") a.batch = std::stoi(argv[i + 1]);
    else if (k == "--minions") a.minions = std::stoi(argv[i + 1]);
    else if (k == "--db") a.db = argv[i + 1];
  }
  if (a.db.empty()) a.db = std::filesystem::temp_directory_path() / "brine-store-bench.sqlite";
  return a;
}

std::string MinionName(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "minion-%04d.dc1.example.com", i);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(args.db.string() + suffix);

  brine::FakeClock clock(brine::FromUnixMicros(1704110400000000));
  brine::store::OpenOptions options;
  options.clock = &clock;
  options.master_id = "bench_master";
  auto store = brine::store::OpenStore(args.db, options);

  std::mt19937 rng(42);
  std::vector<std::string> minions;
  for (int i = 0; i < args.minions; ++i) minions.push_back(MinionName(i));

  std::uint64_t json_bytes = 0;
  std::uint64_t events = 0;
  std::uint64_t returns = 0;
  std::vector<brine::store::Event> pending;
  std::optional<brine::store::Batch> batch;
  int in_batch = 0;
  // Only the store's own work is timed; building the stream is not.
  Clock::duration store_time{};
  auto timed = [&](auto&& f) {
    const auto t0 = Clock::now();
    f();
    store_time += Clock::now() - t0;
  };
  auto flush = [&] {
    timed([&] {
    if (!pending.empty()) store->EventReturn(pending);
    pending.clear();
    if (batch) batch->Commit();
    });
    batch.reset();
    in_batch = 0;
  };
  auto account = [&](const std::string& tag, const Value& data) {
    json_bytes += tag.size() + brine::ToJson(data).size();
    ++events;
    if (++in_batch >= args.batch) flush();
  };

  const auto start = Clock::now();
  for (int j = 0; j < args.jobs; ++j) {
    if (!batch) timed([&] { batch.emplace(store->BeginBatch()); });
    clock.Advance(std::chrono::milliseconds(50));
    const std::string jid = brine::FormatJid(clock.Now());
    const int first = static_cast<int>(rng() % static_cast<unsigned>(args.minions));
    std::vector<std::string> targets;
    brine::ValueList target_values;
    for (int k = 0; k < args.returns_per_job; ++k) {
      targets.push_back(minions[static_cast<std::size_t>((first + k * 97) % args.minions)]);
      target_values.emplace_back(targets.back());
    }
    const std::string stamp = brine::FormatStamp(clock.Now());

    Value bare = Value::Map({{"minions", Value(target_values)}, {"_stamp", stamp}});
    timed([&] { store->SaveMinions(jid, targets, std::nullopt); });
    pending.push_back({.tag = jid, .data = bare, .received = clock.Now()});
    account(jid, bare);

    Value load = Value::Map({{"jid", jid}, {"tgt_type", "list"}, {"tgt", Value(target_values)},
                             {"user", "root"}, {"fun", "cmd.run"},
                             {"arg", Value::List({"systemctl is-active nginx"})},
                             {"minions", Value(target_values)}, {"missing", Value::EmptyList()},
                             {"_stamp", stamp}});
    Value saved = load;
    saved.Erase("_stamp");
    saved.Erase("minions");
    timed([&] { store->SaveLoad(jid, saved, targets); });
    const std::string new_tag = "salt/job/" + jid + "/new";
    pending.push_back({.tag = new_tag, .data = load, .received = clock.Now()});
    account(new_tag, load);

    for (const std::string& m : targets) {
      if (!batch) timed([&] { batch.emplace(store->BeginBatch()); });
      std::string out = "active\n";
      out += std::string(200 + rng() % 100, 'x');
      Value ret = Value::Map({{"cmd", "_return"}, {"id", m}, {"fun", "cmd.run"}, {"fun_args", Value::List({"systemctl is-active nginx"})},
                              {"jid", jid}, {"return", out}, {"retcode", 0}, {"success", true},
                              {"_stamp", brine::FormatStamp(clock.Now())}});
      brine::store::ReturnOutcome outcome;
      timed([&] { outcome = store->Returner(ret); });
      ++returns;
      const std::string tag = "salt/job/" + jid + "/ret/" + m;
      pending.push_back({.tag = tag, .data = ret, .received = clock.Now(), .same_as_return = outcome.id});
      account(tag, ret);
    }
  }
  if (!batch && !pending.empty()) batch.emplace(store->BeginBatch());
  flush();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double secs = std::chrono::duration<double>(store_time).count();
  store.reset();

  SQLite::Database db(args.db.string(), SQLite::OPEN_READWRITE);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  SQLite::Statement q(db, "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC");
  std::uint64_t total = 0;
  std::printf("store_bench: %d jobs, %d returns/job, %d minions, batch %d events, minion index on\n",
              args.jobs, args.returns_per_job, args.minions, args.batch);
  std::printf("  %-28s %14s %10s\n", "table/index", "bytes", "per event");
  std::vector<std::pair<std::string, std::int64_t>> rows;
  while (q.executeStep()) {
    rows.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getInt64());
    total += static_cast<std::uint64_t>(rows.back().second);
  }
  for (const auto& [name, bytes] : rows) {
    std::printf("  %-28s %14lld %10.1f\n", name.c_str(), static_cast<long long>(bytes),
                static_cast<double>(bytes) / static_cast<double>(events));
  }
  const auto file_bytes = std::filesystem::file_size(args.db);
  std::printf("  %-28s %14llu %10.1f\n", "JSON sent (data + tag)", static_cast<unsigned long long>(json_bytes),
              static_cast<double>(json_bytes) / static_cast<double>(events));
  std::printf("  %-28s %14llu %10.1f\n", "file on disk", static_cast<unsigned long long>(file_bytes),
              static_cast<double>(file_bytes) / static_cast<double>(events));
  std::printf("  disk / JSON: %.3f (budget 1.5)\n", static_cast<double>(file_bytes) / static_cast<double>(json_bytes));
  std::printf("  %.0f events/s, %.0f returns/s (%llu events, %.2f s in the store, %.2f s wall)\n",
              static_cast<double>(events) / secs, static_cast<double>(returns) / secs,
              static_cast<unsigned long long>(events), secs, wall);
  std::printf("{\"bench\":\"store\",\"jobs\":%d,\"batch\":%d,\"minions\":%d,\"events_per_s\":%.0f,"
              "\"returns_per_s\":%.0f,\"disk_over_json\":%.4f,\"bytes_per_event\":%.1f}\n",
              args.jobs, args.batch, args.minions, static_cast<double>(events) / secs,
              static_cast<double>(returns) / secs, static_cast<double>(file_bytes) / static_cast<double>(json_bytes),
              static_cast<double>(file_bytes) / static_cast<double>(events));
  return 0;
}
