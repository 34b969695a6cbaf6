// Issue 25's second adversarial round, the arrival-time and URI items: item 12
// (a far-future arrival time, the overflow's saved file without checksums),
// item 14 (the "no password in the URI" rule and its bypasses), and of item 15
// the event id after an imported INT64_MAX and the PostgreSQL queue
// connection's statement_timeout. One regression test per defect, named after it.
#include <SQLiteCpp/Database.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "brine/config/config_error.h"
#include "brine/config/master_config.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "frame_queue.h"
#include "overflow.h"
#include "brine/runner/cli.h"
#include "brine/store/queues.h"
#include "brine/store/store.h"
#include "support/master_process.h"
#include "support/runner_site.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::Micros;
using brine::Value;
using brine::master::DiskOverflow;
using brine::master::Frame;
using brine::test::Counter;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::PushFrames;
using brine::test::ReadFile;
using brine::test::Sql;
using brine::test::TempDir;
using brine::test::WaitUntil;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// 2100-01-01T00:00:00Z in microseconds.
constexpr std::int64_t kYear2100Us = 4102444800LL * 1000000;

Micros Now() { return brine::SystemClock().Now(); }
std::int64_t NowUs() { return brine::ToUnixMicros(Now()); }

using brine::test::CliResult;

// brine-run in-process (support/runner_site.h).
CliResult RunCli(const std::vector<std::string>& args) { return brine::test::Cli(args); }

void WriteBytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
  REQUIRE(f.good());
}

// The previous version's saved overflow file (overflow.h, "version 1"):
// record = received(int64) parts(uint32) dlen(uint32) blen(uint32) damage
// bytes, little-endian, no header. Written from that grammar, byte by byte.
void PutLe(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
std::string Version1Record(std::int64_t received_us, const std::string& bytes) {
  std::string out;
  PutLe(out, static_cast<std::uint64_t>(received_us), 8);
  PutLe(out, 1, 4);
  PutLe(out, 0, 4);
  PutLe(out, bytes.size(), 4);
  return out + bytes;
}

// A saved file of the current format holding `frames`, and where each record starts.
std::string SavedFile(const std::vector<Frame>& frames, std::vector<std::size_t>& starts) {
  std::string out = brine::master::OverflowFileHeader();
  for (const Frame& f : frames) {
    starts.push_back(out.size());
    brine::master::AppendOverflowRecord(out, f);
  }
  return out;
}

std::vector<Frame> TenFrames() {
  std::vector<Frame> frames;
  for (int i = 0; i < 10; ++i) {
    frames.push_back(Frame{.bytes = "frame " + std::to_string(i) + std::string(100 + static_cast<std::size_t>(i), 'x'),
                           .received = Micros(std::chrono::microseconds(1000 + i))});
  }
  return frames;
}

// Everything the overflow holds, oldest first.
std::vector<Frame> ReadAll(DiskOverflow& o) {
  std::vector<Frame> got;
  while (!o.empty()) (void)o.ReadUpTo(1000, std::size_t{1} << 30, got);
  return got;
}

// Frames `got` that are whole (no damage) match `want` in order, skipping `lost`.
void RequireSameExcept(const std::vector<Frame>& got, const std::vector<Frame>& want, const std::vector<int>& lost) {
  std::vector<const Frame*> whole;
  for (const Frame& f : got) {
    if (f.damage.empty()) whole.push_back(&f);
  }
  std::vector<const Frame*> expected;
  for (int i = 0; i < static_cast<int>(want.size()); ++i) {
    if (std::find(lost.begin(), lost.end(), i) == lost.end()) expected.push_back(&want[static_cast<std::size_t>(i)]);
  }
  REQUIRE(whole.size() == expected.size());
  for (std::size_t k = 0; k < whole.size(); ++k) {
    INFO("whole frame " << k);
    REQUIRE(whole[k]->bytes == expected[k]->bytes);
    REQUIRE(whole[k]->received == expected[k]->received);
  }
}

std::string Quarantined(const std::vector<Frame>& got) {
  std::string out;
  for (const Frame& f : got) {
    if (!f.damage.empty()) out += f.damage + "\n";
  }
  return out;
}

}  // namespace

// --- 12. a far-future arrival time -----------------------------------------------------

TEST_CASE("hardening2: brine.max_clock_skew_s is 300 by default and takes a positive number of seconds", "[hardening][config]") {
  TempDir dir;
  using brine::config::LoadMasterConfigFromText;
  CHECK(LoadMasterConfigFromText("", dir.path()).brine.max_clock_skew_s == 300);
  CHECK(LoadMasterConfigFromText("brine.max_clock_skew_s: 60\n", dir.path()).brine.max_clock_skew_s == 60);
  CHECK(LoadMasterConfigFromText("brine:\n  max_clock_skew_s: 3600\n", dir.path()).brine.max_clock_skew_s == 3600);
  CHECK_THROWS_AS(LoadMasterConfigFromText("brine.max_clock_skew_s: 0\n", dir.path()), brine::config::ConfigError);
  CHECK_THROWS_AS(LoadMasterConfigFromText("brine.max_clock_skew_s: 9223372036854775807\n", dir.path()),
                  brine::config::ConfigError);
}

TEST_CASE("hardening2: an event stamped far ahead of the clock is stored at the clock's time and counted",
          "[hardening][store]") {
  TempDir dir;
  const Micros now = Now();
  brine::FakeClock clock(now);
  auto s = brine::store::OpenStore(dir / "brine.sqlite", {.clock = &clock, .skew_clock = &clock});
  const Micros far = Micros(std::chrono::microseconds(kYear2100Us));
  const brine::store::Event events[] = {
      {.tag = "salt/far", .data = Value::Map({{"x", 1}}), .received = far},
      {.tag = "salt/near", .data = Value::Map({{"x", 2}}), .received = now + 200s},  // within the 300 s skew
      {.tag = "salt/live", .data = Value::Map({{"x", 3}}), .received = now + 1us}};
  s->EventReturn(events);
  CHECK(s->FutureArrivals() == 1);
  // The live event stays near now: --since finds it, and retention removes it.
  std::vector<std::string> tags;
  s->ForEachEvent(now - 1h, now + 1h, [&](brine::store::ArchivedEvent&& e) {
    INFO(e.tag << " at " << brine::ToUnixMicros(e.received));
    CHECK(e.received < now + 301s);
    tags.push_back(e.tag);
  });
  CHECK(tags == std::vector<std::string>{"salt/far", "salt/near", "salt/live"});
  const auto cleaned = s->CleanOldJobs(std::nullopt, now + 1h, 1000);
  CHECK(cleaned.events == 3);
}

TEST_CASE("hardening2: an imported line with received_us in 2100 does not shift later live events",
          "[hardening][e2e]") {
  MasterProcess m;
  fs::create_directories(m.database().parent_path());
  const fs::path file = m.dir() / "far.jsonl";
  WriteBytes(file, "{\"brine_export\":1,\"schema\":9,\"since\":null,\"until\":null}\n"
                   "{\"event\":\"salt/far/imported\",\"master_id\":\"test_master\",\"received_us\":" +
                       std::to_string(kYear2100Us) + ",\"data\":{\"far\":true}}\n");
  const CliResult imported = RunCli({"-c", m.conf_dir().string(), "--out", "json", "brine.import_export", file.string()});
  INFO(imported.err);
  REQUIRE(imported.code == 0);
  const Value result = brine::ParseJson(imported.out);
  INFO(imported.out);
  CHECK(result.Find("events")->as_int() == 1);
  REQUIRE(result.Find("future_arrivals") != nullptr);
  CHECK(result.Find("future_arrivals")->as_int() == 1);

  m.Start();
  const Micros before = Now();
  PushFrames(m.pull_endpoint(), {NewFrame("salt/live/after", Value::Map({{"ok", true}}))});
  REQUIRE(WaitUntil([&] { return Counter(m.database(), "stored") == 1; }, 120s));
  REQUIRE(m.Stop() == 0);
  const std::int64_t limit_us = NowUs() + 300LL * 1000000;
  const std::string ids = Sql(m.database(), "SELECT tag, id FROM event ORDER BY id");
  INFO(ids);
  CHECK(Sql(m.database(), "SELECT count(*) FROM event WHERE id > " + std::to_string(limit_us)) == "0\n");
  // brine.export --since finds the live event.
  const fs::path part = m.dir() / "part.jsonl";
  const CliResult window =
      RunCli({"-c", m.conf_dir().string(), "--out", "json", "brine.export", "--since",
              brine::FormatStamp(before - 1min), "--until", brine::FormatStamp(Now() + 1h), part.string()});
  INFO(window.err);
  REQUIRE(window.code == 0);
  CHECK(ReadFile(part).find("salt/live/after") != std::string::npos);
}

TEST_CASE("hardening2: the event id after an imported INT64_MAX does not overflow", "[hardening][store]") {
  TempDir dir;
  const Micros now = Now();
  brine::FakeClock clock(now);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  {
    auto s = brine::store::OpenStore(dir / "brine.sqlite", {.clock = &clock, .skew_clock = &clock});
    const brine::store::Event far[] = {
        {.tag = "salt/max", .data = Value::Map({{"x", 1}}), .received = Micros(std::chrono::microseconds(kMax))}};
    s->EventReturn(far);  // taken as now: no id near INT64_MAX
    const brine::store::Event live[] = {{.tag = "salt/live", .data = Value::Map({{"x", 2}}), .received = now}};
    s->EventReturn(live);
    CHECK(s->FutureArrivals() == 1);
  }
  CHECK(Sql(dir / "brine.sqlite", "SELECT tag, id - " + std::to_string(brine::ToUnixMicros(now)) +
                                      " FROM event ORDER BY id") == "salt/max|0\nsalt/live|1\n");
  // A store an older brine left holding that id: a clear refusal, never a
  // signed overflow (this case runs under UBSan in the sanitizer build).
  {
    SQLite::Database db((dir / "brine.sqlite").string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE event SET id = " + std::to_string(kMax) + " WHERE tag = 'salt/live'");
  }
  auto s = brine::store::OpenStore(dir / "brine.sqlite", {.clock = &clock, .skew_clock = &clock});
  const brine::store::Event next[] = {{.tag = "salt/next", .data = Value::Map({{"x", 3}}), .received = now}};
  try {
    s->EventReturn(next);
    FAIL("an event was given an id after INT64_MAX");
  } catch (const brine::store::StoreError& e) {
    CHECK(std::string(e.what()).find("no event id is left after 9223372036854775807") != std::string::npos);
  }
}

// --- 12. the overflow's saved file ----------------------------------------------------

TEST_CASE("hardening2: a flipped bit in a saved overflow record quarantines only that record", "[hardening][master]") {
  TempDir dir;
  const std::vector<Frame> frames = TenFrames();
  std::vector<std::size_t> at;
  std::string file = SavedFile(frames, at);
  file[at[4] + 32 + 3] ^= 0x01;   // record 4's data
  file[at[7] + 8 + 2] ^= 0x10;    // record 7's arrival time (covered by its header CRC)
  WriteBytes(dir / DiskOverflow::kSavedName, file);
  DiskOverflow o(dir.path(), std::size_t{16} << 20);
  INFO(o.notice());
  CHECK(o.adopted_frames() == 8);
  CHECK(o.adopted_damaged() == 2);
  CHECK(o.notice().find("2 damaged parts quarantined") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / DiskOverflow::kSavedName));
  const std::vector<Frame> got = ReadAll(o);
  REQUIRE(got.size() == 10);
  RequireSameExcept(got, frames, {4, 7});
  CHECK(got[4].damage.find("fails its CRC") != std::string::npos);
  CHECK(got[7].damage.find("not whole records") != std::string::npos);
}

TEST_CASE("hardening2: a flipped length bit in a saved overflow file costs one record, and the rest are read",
          "[hardening][master]") {
  TempDir dir;
  const std::vector<Frame> frames = TenFrames();
  std::vector<std::size_t> at;
  std::string file = SavedFile(frames, at);
  file[at[2] + 24 + 3] ^= static_cast<char>(0x80);  // record 2's length: past the end of the file
  file[at[5] + 24 + 0] ^= 0x04;                     // record 5's length: 4 bytes too long, inside the file
  WriteBytes(dir / DiskOverflow::kSavedName, file);
  DiskOverflow o(dir.path(), std::size_t{16} << 20);
  INFO(o.notice());
  CHECK(o.adopted_frames() == 8);
  CHECK(o.adopted_damaged() == 2);
  const std::vector<Frame> got = ReadAll(o);
  INFO(Quarantined(got));
  RequireSameExcept(got, frames, {2, 5});
  // Each damaged part is its one record, whose bytes the quarantine table keeps.
  std::vector<std::size_t> kept;
  for (const Frame& f : got) {
    if (!f.damage.empty()) kept.push_back(f.bytes.size());
  }
  CHECK(kept == std::vector<std::size_t>{32 + frames[2].bytes.size(), 32 + frames[5].bytes.size()});
}

TEST_CASE("hardening2: an overflow file saved by the previous version is still read at upgrade", "[hardening][master]") {
  TempDir dir;
  const std::vector<Frame> frames = TenFrames();
  std::string file;
  for (const Frame& f : frames) file += Version1Record(brine::ToUnixMicros(f.received), f.bytes);
  WriteBytes(dir / DiskOverflow::kSavedName, file);
  {
    DiskOverflow o(dir.path(), std::size_t{16} << 20);
    INFO(o.notice());
    CHECK(o.adopted_frames() == 10);
    CHECK(o.adopted_damaged() == 0);
    CHECK(o.notice().find("previous version") != std::string::npos);
    const std::vector<Frame> got = ReadAll(o);
    RequireSameExcept(got, frames, {});
  }
  // Cut short in its last record: the whole ones are read, the rest quarantined and named.
  WriteBytes(dir / DiskOverflow::kSavedName, file.substr(0, file.size() - 3));
  DiskOverflow o(dir.path(), std::size_t{16} << 20);
  INFO(o.notice());
  CHECK(o.adopted_frames() == 9);
  CHECK(o.adopted_damaged() == 1);
  const std::vector<Frame> got = ReadAll(o);
  RequireSameExcept(got, frames, {9});
  CHECK(Quarantined(got).find("after record 9") != std::string::npos);
}

TEST_CASE("hardening2: brine-master files a saved overflow file with a flipped length bit, quarantining one record and logging it",
          "[hardening][e2e]") {
  MasterProcess m;
  fs::create_directories(m.database().parent_path());
  std::vector<Frame> frames;
  const Micros now = Now();
  for (int i = 0; i < 199; ++i) {
    frames.push_back(Frame{.bytes = NewFrame("salt/saved/" + std::to_string(i), Value::Map({{"i", i}})),
                           .received = now - 10s + std::chrono::microseconds(i)});
  }
  std::vector<std::size_t> at;
  std::string file = SavedFile(frames, at);
  file[at[1] + 24 + 1] ^= 0x10;  // record 1's length grows by 4096: the old reader took the rest as one record
  WriteBytes(m.database().parent_path() / DiskOverflow::kSavedName, file);
  m.Start();
  const fs::path db = m.database();
  const bool filed = WaitUntil([&] { return Counter(db, "stored") + Counter(db, "quarantined") == 199; }, 120s);
  const std::string log = ReadFile(m.log_file());
  INFO(log);
  REQUIRE(filed);
  CHECK(Counter(db, "stored") == 198);
  CHECK(Counter(db, "quarantined") == 1);
  CHECK(Sql(db, "SELECT count(*) FROM salt_events WHERE tag LIKE 'salt/saved/%'") == "198\n");
  CHECK(Sql(db, "SELECT count(*) FROM salt_events WHERE tag = 'salt/saved/1'") == "0\n");
  CHECK(log.find("198 frames saved by the last stop taken") != std::string::npos);
  CHECK(log.find("1 damaged part quarantined") != std::string::npos);
  CHECK(Sql(db, "SELECT count(*) FROM quarantine WHERE reason LIKE '%brine-overflow.saved%'") == "1\n");
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("hardening2: brine-master reads a previous version's saved overflow file and a far-future time in it shifts nothing",
          "[hardening][e2e]") {
  MasterProcess m;
  fs::create_directories(m.database().parent_path());
  const std::int64_t now_us = NowUs();
  std::string file;
  for (int i = 0; i < 5; ++i) {
    // Record 2's time had a flipped high bit: about the year 2300.
    const std::int64_t t = i == 2 ? now_us | (std::int64_t{1} << 53) : now_us - 10000000 + i;
    file += Version1Record(t, NewFrame("salt/old/" + std::to_string(i), Value::Map({{"i", i}})));
  }
  WriteBytes(m.database().parent_path() / DiskOverflow::kSavedName, file);
  m.Start();
  const fs::path db = m.database();
  REQUIRE(WaitUntil([&] { return Counter(db, "stored") == 5; }, 120s));
  PushFrames(m.pull_endpoint(), {NewFrame("salt/live/after", Value::Map({{"ok", true}}))});
  REQUIRE(WaitUntil([&] { return Counter(db, "stored") == 6 && Counter(db, "future_arrivals") == 1; }, 120s));
  CHECK(Counter(db, "future_arrivals_total") == 1);
  REQUIRE(m.Stop() == 0);
  const std::int64_t limit_us = NowUs() + 300LL * 1000000;
  INFO(Sql(db, "SELECT tag, id FROM event ORDER BY id"));
  CHECK(Sql(db, "SELECT count(*) FROM event WHERE id > " + std::to_string(limit_us)) == "0\n");
  CHECK(Sql(db, "SELECT count(*) FROM salt_events WHERE tag LIKE 'salt/old/%'") == "5\n");
  CHECK_FALSE(fs::exists(db.parent_path() / DiskOverflow::kSavedName));
  // brine.stats shows the count.
  const CliResult stats = RunCli({"-c", m.conf_dir().string(), "--out", "json", "brine.stats"});
  INFO(stats.err);
  REQUIRE(stats.code == 0);
  CHECK(stats.out.find("\"future_arrivals\": 1") != std::string::npos);
}

// --- 14. no secret in a PostgreSQL URI ---------------------------------------------------

TEST_CASE("hardening2: every way of writing a password into a PostgreSQL URI is refused, and never shown",
          "[hardening][store]") {
  for (const std::string uri : {"postgresql://salt:hunter2@db1/brine",
                                "postgresql://db1/brine?password=hunter2",
                                "postgresql://db1/brine?sslmode=require&password=hunter2",
                                "postgresql://db1/brine?%70assword=hunter2",
                                "postgresql://db1/brine?passw%6Frd=hunter2",
                                "postgresql://db1/brine?sslpassword=hunter2",
                                "postgres://db1/brine?%73slpassword=hunter2",
                                "postgresql://salt:hunter%32@db1/brine"}) {
    INFO(uri);
    std::string error;
    try {
      brine::store::CheckServerDatabase(uri);
    } catch (const brine::store::StoreError& e) {
      error = e.what();
    }
    INFO(error);
    CHECK(error.find("a password in the URI is refused") != std::string::npos);
    CHECK(error.find("hunter") == std::string::npos);
    const std::string shown = brine::store::RedactDatabase(uri);
    INFO(shown);
    CHECK(shown.find("hunter") == std::string::npos);
    CHECK(shown.find("********") != std::string::npos);
    CHECK(shown.find("db1") != std::string::npos);
    // The store applies the rule before it connects (nothing listens on db1).
    try {
      (void)brine::store::OpenStore(uri);
      FAIL("opened");
    } catch (const brine::store::StoreError& e) {
      CHECK(std::string(e.what()).find("a password in the URI is refused") != std::string::npos);
      CHECK(std::string(e.what()).find("hunter") == std::string::npos);
    }
    try {
      (void)brine::store::OpenQueues(uri);
      FAIL("opened");
    } catch (const brine::store::StoreError& e) {
      CHECK(std::string(e.what()).find("hunter") == std::string::npos);
    }
  }
  // What holds no secret passes, and shows as it is.
  for (const std::string uri : {"postgresql://salt@db1:5433/brine?sslmode=require",
                                "postgres:///brine?host=/run/postgresql&passfile=/etc/brine/pgpass"}) {
    INFO(uri);
    CHECK_NOTHROW(brine::store::CheckServerDatabase(uri));
    CHECK(brine::store::RedactDatabase(uri) == uri);
  }
  CHECK(brine::store::RedactDatabase("/var/cache/salt/master/brine.sqlite") == "/var/cache/salt/master/brine.sqlite");
  // A URI libpq cannot parse is refused without quoting it.
  CHECK_THROWS_WITH(brine::store::CheckServerDatabase("postgresql://db1/brine?bogus_key=hunter2"),
                    !Catch::Matchers::Contains("hunter2"));
}

TEST_CASE("hardening2: brine-run and brine-master with a percent-encoded password in the URI refuse it and never print it",
          "[hardening][e2e]") {
  MasterProcess m("brine.database: 'postgresql://salt@127.0.0.1:1/brine?%70assword=hunter2'\n");
  const CliResult run = RunCli({"-c", m.conf_dir().string(), "-l", "debug", "jobs.list_jobs"});
  INFO(run.out << run.err);
  CHECK(run.code == 1);
  CHECK((run.out + run.err).find("hunter2") == std::string::npos);
  CHECK(run.err.find("a password in the URI is refused") != std::string::npos);
  const auto master = brine::test::Run({brine::test::Binary("brine-master").string(), "-c", m.conf_dir().string()}, 30s);
  const std::string log = fs::exists(m.log_file()) ? ReadFile(m.log_file()) : "";
  INFO(master.out << master.err << log);
  CHECK(master.exit_code == 2);  // a config mistake: the unit does not restart it
  CHECK((master.out + master.err + log).find("hunter2") == std::string::npos);
  CHECK(master.err.find("brine-master: brine.database: a password in the URI is refused") != std::string::npos);
}

// --- 15. the PostgreSQL queue connection's statement_timeout -----------------------------

TEST_CASE("hardening2: queue calls work for a PostgreSQL role whose default statement_timeout is 1 ms",
          "[hardening][postgres][queue]") {
  using brine::test::PostgresServer;
  if (auto why = PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  PostgresServer& server = PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const std::string name = uri.substr(uri.rfind('/') + 1, uri.find('?') == std::string::npos
                                                               ? std::string::npos
                                                               : uri.find('?') - uri.rfind('/') - 1);
  // The role's default in this database only: the shared server's other databases keep theirs.
  (void)server.Query(uri, "ALTER ROLE brine IN DATABASE \"" + name + "\" SET statement_timeout = '1ms'");
  std::vector<Value> items;
  for (int i = 0; i < 2000; ++i) items.emplace_back("item " + std::to_string(i));
  try {
    auto q = brine::store::OpenQueues(uri);
    REQUIRE(q->Insert("work", items).kind == brine::store::InsertOutcome::Kind::kInserted);
    REQUIRE(q->Length("work") == 2000);
    auto held = q->BeginPop("work", 1500);
    CHECK(held.items().size() == 1500);
  } catch (const brine::store::StoreError& e) {
    FAIL("a queue call failed: " << e.what());
  }
}
