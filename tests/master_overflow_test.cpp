// What brine-master keeps on disk when memory is not enough: the returner's
// spool files, and the queue's overflow file (order, prepared frames, budgets,
// a full file, a stop that saves it, folders it refuses; issue 14 item 8, and
// frames prepared on the reader thread, issue 15 round 7).
#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <thread>

#include "brine/core/time.h"
#include "archiver.h"
#include "frame_queue.h"
#include "logger.h"
#include "spool.h"
#include "brine/store/store.h"
#include "support/joining_thread.h"
#include "support/master_helpers.h"
#include "support/master_process.h"

using brine::Value;
using brine::test::JoiningThread;
using brine::test::NewFrame;
using brine::test::Sql;
using namespace brine::test::master_helpers;

namespace {

brine::master::Frame Numbered(int i, std::size_t size) {
  std::string bytes = std::to_string(i) + ":";
  bytes.resize(size, static_cast<char>('a' + i % 26));
  return brine::master::Frame{.bytes = std::move(bytes), .received = brine::Micros(std::chrono::microseconds(1000 + i)),
                              .parts = 1 + i % 3, .damage = i % 7 == 0 ? "damage " + std::to_string(i) : ""};
}

// Checks that `got` holds frames `first`, `first` + 1, ... exactly as Numbered made them.
void RequireInOrder(const std::vector<brine::master::Frame>& got, int first, std::size_t size) {
  for (std::size_t k = 0; k < got.size(); ++k) {
    const auto want = Numbered(first + static_cast<int>(k), size);
    INFO("frame " << first + static_cast<int>(k));
    REQUIRE(got[k].bytes == want.bytes);
    REQUIRE(got[k].received == want.received);
    REQUIRE(got[k].parts == want.parts);
    REQUIRE(got[k].damage == want.damage);
  }
}

using brine::master::DiskOverflow;

using brine::master::Frame;

using brine::master::FrameQueue;

std::size_t FilesIn(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

// A stand-in for Archiver::Prepare: the preparation holds ten times the
// frame's bytes and names the frame it was made from.
void PrepareTenfold(Frame& f) {
  f.prepared = std::make_unique<brine::master::PreparedFrame>();
  f.prepared->tag = f.bytes;
  f.prepared->bytes = 10 * f.bytes.size();
}

// The reader's side of the queue (daemon.cpp), with PrepareTenfold as its
// preparer: a frame the disk does not take is prepared, then pushed.
bool PushPrepared(FrameQueue& q, Frame f) {
  if (q.Spill(f)) return q.HasRoom();
  PrepareTenfold(f);
  return q.Push(std::move(f));
}

// And its refill: the disk's oldest frames come back prepared.
std::size_t RefillPrepared(FrameQueue& q) {
  std::vector<Frame> back;
  const std::size_t n = q.BeginRefill(back);
  if (n == 0) return 0;
  for (Frame& f : back) PrepareTenfold(f);
  q.EndRefill(back);
  return n;
}

}  // namespace

TEST_CASE("master: a spool file's complete records survive a torn record before and after them", "[master]") {
  using brine::master::AppendSpoolRecord;
  using brine::master::ParseSpool;
  std::string file;
  AppendSpoolRecord(file, "salt/a\n\n\x80");
  AppendSpoolRecord(file, std::string("salt/b\n\n\x81\xa1k\x00", 12));
  const std::string good = file;
  // A writer killed mid-append, then a new writer with the same pid appending after it.
  std::string torn;
  AppendSpoolRecord(torn, "salt/torn\n\n\x80");
  file += torn.substr(0, torn.size() - 3);
  AppendSpoolRecord(file, "salt/c\n\n\x80");
  // A record whose checksum does not match is damage too.
  std::string bad;
  AppendSpoolRecord(bad, "salt/bad\n\n\x80");
  bad[bad.size() - 1] ^= 0x55;
  file += bad;
  file += std::string("BRS1\x00\x00", 6);  // a final record cut inside its header

  const auto contents = ParseSpool(file);
  REQUIRE(contents.frames == std::vector<std::string>{"salt/a\n\n\x80", std::string("salt/b\n\n\x81\xa1k\x00", 12),
                                                       "salt/c\n\n\x80"});
  REQUIRE(contents.damaged.size() == 2);
  REQUIRE(contents.damaged[0] == torn.substr(0, torn.size() - 3));
  REQUIRE(contents.damaged[1] == bad + std::string("BRS1\x00\x00", 6));
  REQUIRE(ParseSpool(good).damaged.empty());
  REQUIRE(ParseSpool("").frames.empty());
  REQUIRE(brine::master::Crc32("123456789") == 0xCBF43926u);
}

TEST_CASE("master: spool files are taken by renaming, and a .taken file a crash left is read first", "[master]") {
  brine::test::TempDir dir;
  const auto spool = dir / "brine-spool";
  REQUIRE(brine::master::TakeSpoolFiles(spool).empty());  // no folder yet: no files
  std::filesystem::create_directories(spool);
  std::ofstream(spool / "100.frames") << "a";
  std::ofstream(spool / "200.frames") << "b";
  std::ofstream(spool / "200.frames.taken") << "c";  // left by a crash between taking and removing
  std::ofstream(spool / "notes.txt") << "x";
  auto taken = brine::master::TakeSpoolFiles(spool);
  REQUIRE(taken.size() == 2);
  REQUIRE(taken[0].path().filename() == "200.frames.taken");
  REQUIRE(taken[0].ReadAll() == "c");
  REQUIRE(taken[1].path().filename() == "100.frames.taken");
  REQUIRE(taken[1].ReadAll() == "a");
  // 200.frames waits for the next pass, so the crash's file is not overwritten.
  REQUIRE(std::filesystem::exists(spool / "200.frames"));
  REQUIRE_FALSE(std::filesystem::exists(spool / "100.frames"));
  for (auto& t : taken) t.Remove();
  REQUIRE_FALSE(std::filesystem::exists(spool / "200.frames.taken"));
  auto next = brine::master::TakeSpoolFiles(spool);
  REQUIRE(next.size() == 1);
  REQUIRE(next[0].ReadAll() == "b");
  REQUIRE(std::filesystem::exists(spool / "notes.txt"));
}

TEST_CASE("master: a full queue goes on into the overflow file and gives every frame back in order, whole",
          "[master]") {
  brine::test::TempDir dir;
  constexpr std::size_t kSize = 700;
  constexpr int kFrames = 30000;  // 21 MB through a 4 KiB memory lane and 2 MiB segments
  FrameQueue q(4096, std::make_unique<DiskOverflow>(dir.path(), std::size_t{16} << 20));
  REQUIRE(FilesIn(dir.path()) == 0);  // the file has no name, from the start
  std::vector<Frame> got;
  std::vector<brine::master::AckRequest> acked;
  int next = 0;
  std::size_t most_on_disk = 0;
  for (int i = 0; i < kFrames; ++i) {
    REQUIRE(q.HasRoom());
    (void)q.Push(Numbered(i, kSize));
    most_on_disk = std::max(most_on_disk, q.overflow_bytes());
    REQUIRE(q.depth_bytes() <= 4096 + kSize);  // memory: the lane and one frame over
    if (i % 5000 == 4999) {  // the writer catches up now and then, not fully
      for (int popped = 0; popped < 3000;) {
        got.clear();
        const std::size_t n = q.PopUpTo(3000, std::chrono::steady_clock::now(), got, acked);
        REQUIRE(n == got.size());
        REQUIRE(n > 0);
        RequireInOrder(got, next, kSize);
        next += static_cast<int>(n);
        popped += static_cast<int>(n);
      }
    }
  }
  REQUIRE(most_on_disk > std::size_t{6} << 20);  // it was used, over several segments (2 MiB each)
  REQUIRE(q.depth_frames() == static_cast<std::size_t>(kFrames - next));
  while (next < kFrames) {
    got.clear();
    const std::size_t n = q.PopUpTo(10000, std::chrono::steady_clock::now(), got, acked);
    REQUIRE(n > 0);
    std::size_t bytes = 0;
    for (const Frame& f : got) bytes += f.bytes.size();
    REQUIRE(bytes <= 4096 + 2 * kSize);  // a pop from disk takes at most the lane's capacity anew
    RequireInOrder(got, next, kSize);
    next += static_cast<int>(n);
  }
  REQUIRE(q.depth_frames() == 0);
  REQUIRE(q.overflow_bytes() == 0);
  REQUIRE(acked.empty());
  REQUIRE(FilesIn(dir.path()) == 0);
}

TEST_CASE("master: a prepared frame counts its decoded memory against the bus lane's budget until the reader frees it",
          "[master]") {
  FrameQueue raw(4096);
  FrameQueue prepared(4096);
  int raw_frames = 0;
  while (raw.Push(Frame{.bytes = std::string(100, 'r')})) ++raw_frames;
  int prepared_frames = 0;
  while (PushPrepared(prepared, Frame{.bytes = std::string(100, 'p')})) ++prepared_frames;
  REQUIRE(raw_frames == 40);      // 41 x 100 bytes pass 4096
  REQUIRE(prepared_frames == 3);  // 4 x 1,100 bytes pass it
  REQUIRE(prepared.depth_bytes() == 4 * 1100);
  std::vector<Frame> got;
  std::vector<brine::master::AckRequest> acked;
  REQUIRE(prepared.PopUpTo(10, std::chrono::steady_clock::now(), got, acked) == 4);
  for (const Frame& f : got) {
    REQUIRE(f.prepared != nullptr);
    REQUIRE(f.prepared->tag == f.bytes);
  }
  REQUIRE(prepared.depth_bytes() == 0);
  REQUIRE(prepared.HasRoom());
  // Filed, the preparations go back to be freed by the pushing thread, and
  // count until then.
  std::vector<std::unique_ptr<brine::master::PreparedFrame>> spent;
  for (Frame& f : got) spent.push_back(std::move(f.prepared));
  prepared.Recycle(spent);
  REQUIRE(spent.empty());
  REQUIRE(prepared.depth_bytes() == 4 * 1000);
  REQUIRE(RefillPrepared(prepared) == 0);  // nothing on disk; the recycled are freed
  REQUIRE(prepared.depth_bytes() == 0);
  REQUIRE(prepared.HasRoom());
}

TEST_CASE("master: the overflow file's frames come back into memory prepared and in order while the writer pops",
          "[master]") {
  brine::test::TempDir dir;
  constexpr std::size_t kSize = 300;
  constexpr int kFrames = 20000;
  FrameQueue q(64 * 1024, std::make_unique<DiskOverflow>(dir.path(), std::size_t{16} << 20));
  std::atomic<bool> done{false};
  std::vector<Frame> got;
  // Closing the queue is what ends the writer, on a failed REQUIRE too.
  JoiningThread writer([&] {
    std::vector<Frame> chunk;
    std::vector<brine::master::AckRequest> acked;
    while (!q.ClosedAndEmpty()) {
      chunk.clear();
      (void)q.PopUpTo(256, std::chrono::steady_clock::now() + std::chrono::milliseconds(5), chunk, acked);
      for (Frame& f : chunk) got.push_back(std::move(f));
      if (got.size() % 4096 < 256) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow store
    }
    done = true;
  }, [&] { q.Close(); });
  std::size_t refilled = 0;
  std::size_t most_memory = 0;
  for (int i = 0; i < kFrames; ++i) {
    while (!q.HasRoom()) refilled += RefillPrepared(q);
    (void)PushPrepared(q, Numbered(i, kSize));
    refilled += RefillPrepared(q);
    most_memory = std::max(most_memory, q.depth_bytes());
  }
  while (q.overflow_bytes() > 0) refilled += RefillPrepared(q);
  q.Close();
  writer.Join();
  REQUIRE(done);
  REQUIRE(got.size() == static_cast<std::size_t>(kFrames));
  RequireInOrder(got, 0, kSize);
  REQUIRE(refilled > 0);  // the disk was used, and read back by the reader
  std::size_t prepared = 0;
  for (const Frame& f : got) {
    if (f.prepared == nullptr) continue;  // read from disk by the writer itself
    REQUIRE(f.prepared->tag == f.bytes);
    ++prepared;
  }
  REQUIRE(prepared >= refilled);
  // The lane, one frame over, and what one refill's frames hold past 1/8 of the room.
  REQUIRE(most_memory <= 64 * 1024 + 11 * kSize + 64 * 1024 * 10 / FrameQueue::kRefillExpansion + 11 * kSize);
}

TEST_CASE("master: a frame the reader prepared is filed exactly as one the writer decodes, quarantine and order included",
          "[master]") {
  using brine::master::Archiver;
  using brine::master::Counters;
  brine::test::TempDir dir;
  const brine::Micros t0 = Now();
  const std::string jid = JidAt(t0);
  const std::string stamp = StampAt(t0);
  std::vector<std::string> bytes = {
      NewFrame("salt/job/" + jid + "/new", PublishLoad(jid, "test.ping", {"m1", "m2"}, stamp)),
      NewFrame(jid, Value::Map({{"minions", Value::List({"m1", "m2", "m3"})}, {"_stamp", stamp}})),
      NewFrame("salt/job/" + jid + "/ret/m1", ReturnLoad(jid, "m1", "test.ping", true, stamp)),
      "no tag terminator at all",
      NewFrame("salt/job/" + jid + "/ret/m2", ReturnLoad(jid, "m2", "test.ping", false, stamp)),
      NewFrame("salt/job/" + jid + "/ret/m1", ReturnLoad(jid, "m1", "test.ping", "different", stamp)),
      NewFrame("new_job", PublishLoad("20261123120000000001", "cmd.run", {"m9"}, stamp)),
      NewFrame("salt/job/12345/ret/m4",
               Value::Map({{"id", "m4"}, {"jid", 12345}, {"return", 1}, {"fun", "x"}})),
      NewFrame("secret/dropped", Value::Map({{"n", 1}})),
      NewFrame("salt/run/20261123120000000003/ret", Value::Map({{"fun", "runner.x"}, {"return", 2}})),
      NewFrame("brine/cache/endtime", Value::Map({{"jid", jid}, {"endtime", "2026, Nov 24 04:00:00.000000"}})),
      NewFrame("salt/auth", Value::Map({{"id", "m1"}, {"_stamp", stamp}})),
  };
  brine::master::Logger log(brine::master::LogLevel::kQuiet);
  Archiver archiver({.blacklist = {"secret/*"}, .master_id = "mm"}, log);
  auto frames = [&](bool prepare) {
    std::vector<Frame> out;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      out.push_back(Frame{.bytes = bytes[i], .received = t0 + std::chrono::microseconds(i)});
    }
    out.push_back(Frame{.bytes = NewFrame("two/parts", Value::EmptyMap()), .received = t0 + std::chrono::microseconds(90),
                        .parts = 2});
    if (prepare) {
      // On another thread, as brine-master's reader does.
      std::thread reader([&] {
        for (Frame& f : out) archiver.Prepare(f);
      });
      reader.join();
      for (const Frame& f : out) REQUIRE(f.prepared != nullptr);
    }
    return out;
  };
  auto file = [&](const std::string& name, std::vector<Frame> in) {
    auto store = brine::store::OpenStore(dir.path() / name, {});
    Counters counts;
    auto batch = store->BeginBatch();
    for (Frame& f : in) {
      const bool prepared = f.prepared != nullptr;
      // Handed back to be freed where it was made; a replay decodes the bytes again.
      REQUIRE((archiver.Ingest(*store, f, counts) != nullptr) == prepared);
      REQUIRE(f.prepared == nullptr);
    }
    batch.Commit();
    return counts;
  };
  const Counters by_writer = file("writer.db", frames(false));
  const Counters by_reader = file("reader.db", frames(true));
  REQUIRE(by_reader.received == by_writer.received);
  REQUIRE(by_reader.stored == by_writer.stored);
  REQUIRE(by_reader.filtered == by_writer.filtered);
  REQUIRE(by_reader.quarantined == by_writer.quarantined);
  REQUIRE(by_reader.duplicates == by_writer.duplicates);
  REQUIRE(by_reader.returns == by_writer.returns);
  REQUIRE(by_reader.cache_writes == by_writer.cache_writes);
  REQUIRE(by_writer.quarantined == 2);
  REQUIRE(by_writer.filtered == 1);
  REQUIRE(by_writer.duplicates == 1);
  for (const std::string& query :
       {std::string("SELECT id, reason, hex(raw) FROM quarantine ORDER BY id"),
        std::string("SELECT tag, data, alter_time FROM salt_events ORDER BY id"),
        std::string("SELECT jid, load, endtime, load_source FROM jids ORDER BY jid"),
        std::string("SELECT fun, jid, id, return, full_ret, success FROM salt_returns ORDER BY jid, id"),
        std::string("SELECT j.jid, m.name FROM job_minion x JOIN job j ON j.id = x.job_id "
                    "JOIN minion m ON m.id = x.minion_id ORDER BY 1, 2")}) {
    INFO(query);
    const std::string want = Sql(dir.path() / "writer.db", query);
    REQUIRE(!want.empty());
    REQUIRE(Sql(dir.path() / "reader.db", query) == want);
  }
  REQUIRE(Sql(dir.path() / "reader.db", "SELECT reason FROM quarantine ORDER BY id") ==
          "no tag terminator\nmulti-part message of 2 parts\n");
}

TEST_CASE("master: when the overflow file is full the reader is held back and the frame it read last waits behind the file",
          "[master]") {
  brine::test::TempDir dir;
  constexpr std::size_t kSize = 10000;
  const std::size_t disk = std::size_t{1} << 20;
  FrameQueue q(50000, std::make_unique<DiskOverflow>(dir.path(), disk));
  int pushed = 0;
  while (q.Push(Numbered(pushed, kSize))) ++pushed;
  ++pushed;  // the one that filled it
  REQUIRE_FALSE(q.HasRoom());
  REQUIRE(q.overflow_bytes() <= disk);
  REQUIRE(q.overflow_bytes() > disk - 2 * (kSize + 20));
  REQUIRE(q.depth_bytes() <= 50000 + 2 * kSize);  // the lane, one over, and the one behind the file
  REQUIRE(q.depth_frames() == static_cast<std::size_t>(pushed));
  // Room again only once the file is read empty; then the order is kept.
  std::vector<Frame> got;
  std::vector<brine::master::AckRequest> acked;
  int next = 0;
  while (next < pushed) {
    std::vector<Frame> some;
    const std::size_t n = q.PopUpTo(7, std::chrono::steady_clock::now(), some, acked);
    REQUIRE(n > 0);
    RequireInOrder(some, next, kSize);
    next += static_cast<int>(n);
    if (next < pushed - 1) REQUIRE_FALSE(q.HasRoom());
  }
  REQUIRE(q.HasRoom());
  REQUIRE(q.depth_frames() == 0);
  // And it takes frames again.
  for (int i = 0; i < 20; ++i) (void)q.Push(Numbered(i, kSize));
  REQUIRE(q.overflow_bytes() > 0);
}

TEST_CASE("master: a stop that runs out of time saves the overflow file's frames, and the next start takes them first",
          "[master]") {
  brine::test::TempDir dir;
  constexpr std::size_t kSize = 5000;
  std::vector<Frame> got;
  std::vector<brine::master::AckRequest> acked;
  int pushed = 0;
  {
    FrameQueue q(20000, std::make_unique<DiskOverflow>(dir.path(), std::size_t{1} << 20));
    while (q.Push(Numbered(pushed, kSize))) ++pushed;
    ++pushed;  // the one waiting behind the full file
    q.Close();
    // The writer had taken the memory's frames before the stop ran out of time.
    REQUIRE(q.PopUpTo(4, std::chrono::steady_clock::now(), got, acked) == 4);
    RequireInOrder(got, 0, kSize);
    const std::size_t saved = q.SaveOverflow();
    REQUIRE(saved > 150);
    // Only memory is left for the writer: the frames before the file's.
    got.clear();
    while (q.PopUpTo(100, std::chrono::steady_clock::now(), got, acked) > 0) {
    }
    RequireInOrder(got, 4, kSize);
    REQUIRE(got.size() + 4 + saved == static_cast<std::size_t>(pushed));
    REQUIRE(q.ClosedAndEmpty());
  }
  REQUIRE(std::filesystem::exists(dir / DiskOverflow::kSavedName));
  // The file: a 12-byte header, then records of a 32-byte header and the frame (overflow.h).
  const int first_saved = pushed - static_cast<int>((std::filesystem::file_size(dir / DiskOverflow::kSavedName) - 12) /
                                                    (kSize + 32));
  FrameQueue next(20000, std::make_unique<DiskOverflow>(dir.path(), std::size_t{1} << 20));
  REQUIRE_FALSE(std::filesystem::exists(dir / DiskOverflow::kSavedName));  // taken
  // Newer frames go behind the saved ones.
  (void)next.Push(Numbered(pushed, kSize));
  std::vector<Frame> after;
  while (next.PopUpTo(100, std::chrono::steady_clock::now(), after, acked) > 0) {
  }
  REQUIRE(after.size() == static_cast<std::size_t>(pushed + 1 - first_saved));
  RequireInOrder(after, first_saved, kSize);
  REQUIRE(acked.empty());
}

TEST_CASE("master: a saved overflow file that is not a regular file of brine's user is left alone", "[master]") {
  brine::test::TempDir dir;
  REQUIRE(::mkfifo((dir / brine::master::DiskOverflow::kSavedName).c_str(), 0600) == 0);
  brine::master::DiskOverflow overflow(dir.path(), 1 << 20);  // a FIFO would block a plain open
  REQUIRE(overflow.empty());
  REQUIRE(overflow.notice().find("left alone") != std::string::npos);
  REQUIRE(std::filesystem::exists(dir / brine::master::DiskOverflow::kSavedName));
}

TEST_CASE("master: an overflow folder that cannot be used is refused, named", "[master]") {
  brine::test::TempDir dir;
  const auto missing = dir.path() / "no" / "such";
  try {
    brine::master::DiskOverflow overflow(missing, 1 << 20);
    FAIL("no error");
  } catch (const std::system_error& e) {
    REQUIRE(std::string(e.what()).find(missing.string()) != std::string::npos);
  }
}
