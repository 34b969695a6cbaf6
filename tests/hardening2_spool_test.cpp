// Issue 25, round 2 of the adversarial review: brine-master's filing of the
// Salt plug-in's spool (items 8 and 13; item 1, the plug-in's side, is
// tests/salt/test_spool_hardening.py). One case per defect, named after it.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "spool.h"
#include "brine/store/store.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::Value;
using brine::master::AppendSpoolRecord;
using brine::master::ParseSpool;
using brine::master::SpoolItem;
using brine::master::SpoolReader;
using brine::test::Counter;
using brine::test::CountersBalance;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::ReadFile;
using brine::test::Sql;
using brine::test::WaitUntil;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A spool record of event `i` under salt/spool/<i>, padded to about `pad` bytes.
std::string SpoolEvent(int i, std::size_t pad) {
  std::string record;
  AppendSpoolRecord(record, NewFrame("salt/spool/" + std::to_string(i),
                                     Value::Map({{"n", static_cast<long long>(i)}, {"pad", std::string(pad, 'x')}})));
  return record;
}

// Writes records 0..n-1 to `path` a megabyte at a time; returns the file's size.
std::uint64_t WriteSpoolFile(const fs::path& path, int n, std::size_t pad) {
  std::ofstream out(path, std::ios::binary);
  std::string chunk;
  for (int i = 0; i < n; ++i) {
    chunk += SpoolEvent(i, pad);
    if (chunk.size() > (1u << 20)) {
      out << chunk;
      chunk.clear();
    }
  }
  out << chunk;
  out.close();
  return fs::file_size(path);
}

std::int64_t SpooledEvents(const fs::path& db) {
  const std::string n = Sql(db, "SELECT count(*) FROM salt_events WHERE tag LIKE 'salt/spool/%'");
  return n.empty() ? 0 : std::stoll(n);
}

// "count|distinct count" of the spooled events: "N|N" when each was filed once.
std::string SpooledOnce(const fs::path& db) {
  return Sql(db, "SELECT count(*), count(DISTINCT tag) FROM salt_events WHERE tag LIKE 'salt/spool/%'");
}

// The peak resident set of `pid` (VmHWM), in KiB; -1 when unreadable.
long PeakRssKib(pid_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find("VmHWM:");
  if (at == std::string::npos) return -1;
  return std::stol(status.substr(at + 6));
}

bool SpoolEmpty(const fs::path& spool) { return !fs::exists(spool) || fs::is_empty(spool); }

// Every item of `file` read with a fresh reader resumed at each item's end,
// as brine-master resumes after a crash.
std::vector<SpoolItem> ReadResuming(const fs::path& path, std::size_t max_record_bytes) {
  std::vector<SpoolItem> items;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const auto size = fs::file_size(path);
  std::uint64_t at = 0;
  while (true) {
    SpoolReader reader(fd, size, at, max_record_bytes);
    auto item = reader.Next();
    if (!item) break;
    at = item->end;
    items.push_back(std::move(*item));
  }
  ::close(fd);
  return items;
}

}  // namespace

// --- item 8: a spool file is read whole and filed as one batch --------------------------------

TEST_CASE("spool: a reader resumed at any item's end reads what ParseSpool reads, damage and all",
          "[hardening][spool]") {
  brine::test::TempDir dir;
  std::string file;
  AppendSpoolRecord(file, "salt/a\n\n\x80");
  std::string torn;
  AppendSpoolRecord(torn, "salt/torn\n\n\x80");
  file += torn.substr(0, torn.size() - 3);  // a writer killed mid-append
  std::string bad;
  AppendSpoolRecord(bad, "salt/bad\n\n\x80");
  bad[bad.size() - 1] ^= 0x55;
  file += bad;  // two damaged runs in a row are one
  AppendSpoolRecord(file, "salt/b\n\n\x80");
  AppendSpoolRecord(file, "salt/big\n\n" + std::string(200000, 'y'));  // over the limit below
  const std::string big_payload = "salt/big\n\n" + std::string(200000, 'y');
  file += std::string(3 << 20, 'z');  // a damaged run longer than the reader's window
  AppendSpoolRecord(file, "salt/c\n\n\x80");
  file += std::string("BRS1\x00\x00", 6);  // cut inside its header
  std::ofstream(dir / "f", std::ios::binary) << file;

  const auto parsed = ParseSpool(file);
  const auto items = ReadResuming(dir / "f", 100000);
  std::vector<std::string> frames;
  std::vector<std::uint64_t> damage_lengths;
  for (const auto& item : items) {
    if (item.kind == SpoolItem::Kind::kFrame) frames.push_back(item.bytes);
    if (item.kind == SpoolItem::Kind::kDamage) {
      damage_lengths.push_back(item.length);
      REQUIRE(item.bytes.size() == std::min<std::uint64_t>(item.length, brine::master::kSpoolKeepBytes));
    }
    if (item.kind == SpoolItem::Kind::kOversize) {
      REQUIRE(item.length == big_payload.size());
      REQUIRE(item.crc == brine::master::Crc32(big_payload));
      REQUIRE(item.bytes == big_payload.substr(0, brine::master::kSpoolKeepBytes));
    }
  }
  std::vector<std::string> want = parsed.frames;
  want.erase(std::find(want.begin(), want.end(), big_payload));
  REQUIRE(frames == want);
  std::vector<std::uint64_t> want_damage;
  for (const auto& d : parsed.damaged) want_damage.push_back(d.size());
  REQUIRE(damage_lengths == want_damage);
  REQUIRE(items.back().end == file.size());
}

TEST_CASE("spool: a spool file much larger than a batch is filed with bounded memory and every record once",
          "[hardening][spool][e2e]") {
  MasterProcess m;
  const fs::path spool = m.dir() / "cache" / "brine-spool";
  fs::create_directories(spool);
  ::chmod(spool.c_str(), 0700);
  // About 150 MB: read whole (the old way) it alone takes the master past 300 MiB.
  constexpr int kRecords = 100000;
  const auto size = WriteSpoolFile(spool / "4242.frames", kRecords, 1500);
  INFO("spool file of " << size << " bytes");
  m.Start();
  long peak_kib = 0;
  const bool filed = WaitUntil(
      [&] {
        peak_kib = std::max(peak_kib, PeakRssKib(m.child()->pid()));
        return SpoolEmpty(spool);
      },
      240s);
  peak_kib = std::max(peak_kib, PeakRssKib(m.child()->pid()));
  INFO("brine-master's VmHWM: " << peak_kib << " KiB; log:\n" << ReadFile(m.log_file()));
  REQUIRE(filed);
  REQUIRE(m.Stop() == 0);
  REQUIRE(SpooledOnce(m.database()) == std::to_string(kRecords) + "|" + std::to_string(kRecords) + "\n");
  REQUIRE(Counter(m.database(), "stored") == kRecords);
  REQUIRE(CountersBalance(m.database()));
  // Loosely: the store's page cache and a batch, not the file (docs/reliability.md:
  // about 200 MiB; measured 87 MiB, and 308 MiB when the file was read whole).
  REQUIRE(peak_kib > 0);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's quarantine keeps up to 256 MiB of freed batches
  // resident (measured 499 MiB), so the bound is checked in the Release run,
  // as hardening_test's flood does.
  WARN("AddressSanitizer build: brine-master's VmHWM " << peak_kib << " KiB, the bound is not checked");
#else
  REQUIRE(peak_kib < 200 * 1024);
#endif
  // Filed in many commits, and its progress forgotten once it was removed.
  REQUIRE(Counter(m.database(), "batches") > 10);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM spool_progress") == "0\n");
}

TEST_CASE("spool: brine-master killed -9 mid-filing, then restarted, files every record exactly once",
          "[hardening][spool][e2e][crash]") {
  MasterProcess m("brine.batch_max_events: 1000\n");
  const fs::path spool = m.dir() / "cache" / "brine-spool";
  fs::create_directories(spool);
  ::chmod(spool.c_str(), 0700);
  // 150 commits of 1,000: the kill lands well before the last, even on a loaded machine.
  constexpr int kRecords = 150000;
  (void)WriteSpoolFile(spool / "4343.frames", kRecords, 200);
  m.Start();
  // Part of the file committed, not all of it: then the kill.
  std::int64_t seen = 0;
  const bool partly = WaitUntil(
      [&] {
        seen = SpooledEvents(m.database());
        return seen > 0;
      },
      120s);
  m.child()->Signal(SIGKILL);
  REQUIRE(m.child()->Wait(30s) == -SIGKILL);
  const std::int64_t at_kill = SpooledEvents(m.database());
  INFO("spooled events committed at the kill: " << at_kill << "; log:\n" << ReadFile(m.log_file()));
  REQUIRE(partly);
  REQUIRE(at_kill < kRecords);  // the kill came mid-filing
  REQUIRE(fs::exists(spool / "4343.frames.taken"));
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM spool_progress") == "1\n");

  m.Start();
  REQUIRE(WaitUntil([&] { return SpoolEmpty(spool); }, 240s));
  REQUIRE(m.Stop() == 0);
  REQUIRE(SpooledOnce(m.database()) == std::to_string(kRecords) + "|" + std::to_string(kRecords) + "\n");
  REQUIRE(ReadFile(m.log_file()).find("spool 4343.frames.taken: resuming at byte ") != std::string::npos);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM spool_progress") == "0\n");
}

TEST_CASE("spool: a new file under the name of one whose progress was kept is filed from its start",
          "[hardening][spool][e2e]") {
  MasterProcess m;
  const fs::path spool = m.dir() / "cache" / "brine-spool";
  fs::create_directories(spool);
  ::chmod(spool.c_str(), 0700);
  m.Start();
  REQUIRE(m.Stop() == 0);  // the store exists, with this master's row
  // Progress of an earlier 77.frames.taken (another inode and size), as a
  // crash between its removal and its row's would leave it.
  {
    auto store = brine::store::OpenStore(m.database(), {.master_id = "test_master"});
    store->PutSpoolProgress("77.frames.taken:1:1:999999:1", 999999);
    REQUIRE(store->GetSpoolProgress() ==
            std::vector<std::pair<std::string, std::int64_t>>{{"77.frames.taken:1:1:999999:1", 999999}});
  }
  std::string file;
  for (int i = 0; i < 5; ++i) file += SpoolEvent(i, 10);
  std::ofstream(spool / "77.frames.taken", std::ios::binary) << file;
  m.Start();
  REQUIRE(WaitUntil([&] { return SpoolEmpty(spool); }));
  REQUIRE(m.Stop() == 0);
  REQUIRE(SpooledOnce(m.database()) == "5|5\n");
}

namespace {

// The progress API on one backend: per master, joined to the batch (rolled
// back with it), replaced, forgotten.
void CheckSpoolProgress(const std::string& database) {
  using Progress = std::vector<std::pair<std::string, std::int64_t>>;
  auto a = brine::store::OpenStore(database, {.master_id = "a"});
  auto b = brine::store::OpenStore(database, {.master_id = "b"});
  REQUIRE(a->GetSpoolProgress().empty());
  {
    auto batch = a->BeginBatch();
    a->PutSpoolProgress("1.frames.taken:1:2:300:4", 100);
  }  // not committed: rolled back
  REQUIRE(a->GetSpoolProgress().empty());
  {
    auto batch = a->BeginBatch();
    a->PutSpoolProgress("1.frames.taken:1:2:300:4", 100);
    a->PutSpoolProgress("1.frames.taken:1:2:300:4", 200);
    batch.Commit();
  }
  b->PutSpoolProgress("1.frames.taken:1:2:300:4", 7);  // another master's own row
  REQUIRE(a->GetSpoolProgress() == Progress{{"1.frames.taken:1:2:300:4", 200}});
  REQUIRE(b->GetSpoolProgress() == Progress{{"1.frames.taken:1:2:300:4", 7}});
  a->ForgetSpoolProgress("1.frames.taken:1:2:300:4");
  a->ForgetSpoolProgress("never");
  REQUIRE(a->GetSpoolProgress().empty());
  REQUIRE(b->GetSpoolProgress() == Progress{{"1.frames.taken:1:2:300:4", 7}});
}

}  // namespace

TEST_CASE("spool: the store keeps each master's spool progress with its batch, on SQLite and PostgreSQL",
          "[hardening][spool][store]") {
  brine::test::TempDir dir;
  CheckSpoolProgress((dir / "s.sqlite").string());
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN("PostgreSQL half skipped: " << *why);
    return;
  }
  CheckSpoolProgress(brine::test::PostgresServer::Shared().CreateDatabase());
}

// --- item 13: a spool file with a 255-byte name blocks spool filing for good -----------------

TEST_CASE("spool: a file whose name has no room for .taken is skipped and logged, and the others are filed",
          "[hardening][spool][e2e]") {
  MasterProcess m;
  const fs::path spool = m.dir() / "cache" / "brine-spool";
  fs::create_directories(spool);
  ::chmod(spool.c_str(), 0700);
  const std::string long_name = std::string(255 - 7, '2') + ".frames";  // NAME_MAX; + ".taken" is too long
  std::ofstream(spool / "1.frames", std::ios::binary) << SpoolEvent(1, 10);
  std::ofstream(spool / long_name, std::ios::binary) << SpoolEvent(2, 10);
  std::ofstream(spool / "3.frames", std::ios::binary) << SpoolEvent(3, 10);
  m.Start();
  const bool filed = WaitUntil([&] { return SpooledEvents(m.database()) == 2; });
  INFO("log:\n" << ReadFile(m.log_file()));
  REQUIRE(filed);
  REQUIRE(WaitUntil([&] { return !fs::exists(spool / "1.frames.taken") && !fs::exists(spool / "3.frames.taken"); }));
  REQUIRE(m.child()->Running());
  REQUIRE(m.Stop() == 0);
  REQUIRE(fs::exists(spool / long_name));  // left where it is
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events ORDER BY tag") == "salt/spool/1\nsalt/spool/3\n");
  const std::string log = ReadFile(m.log_file());
  REQUIRE(log.find("cannot take " + (spool / long_name).string() + " (rename to .taken: File name too long)") !=
          std::string::npos);
}

TEST_CASE("spool: TakeSpoolFiles reports a file it cannot rename and takes the others", "[hardening][spool]") {
  brine::test::TempDir dir;
  const fs::path spool = dir / "brine-spool";
  fs::create_directories(spool);
  const std::string long_name = std::string(255 - 7, '2') + ".frames";
  std::ofstream(spool / "1.frames") << "a";
  std::ofstream(spool / long_name) << "b";
  std::ofstream(spool / "3.frames") << "c";
  std::vector<std::string> skipped;
  auto taken = brine::master::TakeSpoolFiles(spool, skipped);
  REQUIRE(taken.size() == 2);
  REQUIRE(taken[0].ReadAll() == "a");
  REQUIRE(taken[1].ReadAll() == "c");
  REQUIRE(skipped.size() == 1);
  REQUIRE(skipped[0].find(long_name) != std::string::npos);
}

// --- item 1, brine-master's side: the spool folder is opened, not followed -------------------

TEST_CASE("spool: brine-master takes nothing through a spool folder that is a symlink", "[hardening][spool]") {
  brine::test::TempDir dir;
  const fs::path elsewhere = dir / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "1.frames") << "a";
  fs::create_directory_symlink(elsewhere, dir / "brine-spool");
  std::vector<std::string> skipped;
  REQUIRE_THROWS_WITH(brine::master::TakeSpoolFiles(dir / "brine-spool", skipped),
                      Catch::Contains("not a symlink"));
  REQUIRE(fs::exists(elsewhere / "1.frames"));  // not renamed
}
