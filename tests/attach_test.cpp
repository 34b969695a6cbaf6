// brine.bus: attach (issue 29): a real brine-master reading a modern Salt
// master's own event bus, the stand-in of tests/support/modern_bus.h written
// from ../shared/spec/salt-modern-bus.md. Every event stored once and in
// order across framings, forms, split frames and restarts; the gaps with
// their reasons; garbage in each framing; the reader that keeps reading
// while the store is locked; event_return frames not stored twice.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "brine/wire/salt_stream.h"
#include "support/ack_client.h"
#include "support/master_helpers.h"
#include "support/master_process.h"
#include "support/modern_bus.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/process.h"

using brine::Value;
using brine::test::MasterProcess;
using brine::test::ModernBus;
using brine::test::Sql;
using brine::test::WaitUntil;
using brine::wire::StreamForm;
using brine::wire::StreamFraming;
using brine::wire::StreamKeyOrder;
using brine::wire::StreamString;

namespace {

// A brine-master attached to a stand-in in <dir>/salt (the Salt master's
// sock_dir), with `extra` config lines. The stand-in is made by the caller.
struct Attached {
  explicit Attached(const std::string& extra = "") : master("brine.bus: attach\n" + extra) {
    std::filesystem::create_directories(master.conf_dir() / "master.d");
    std::ofstream(master.conf_dir() / "master.d" / "salt.conf") << "sock_dir: " << salt_dir().string() << "\n";
  }
  [[nodiscard]] std::filesystem::path salt_dir() const { return master.dir() / "salt"; }
  [[nodiscard]] std::filesystem::path db() const { return master.database(); }
  MasterProcess master;
};

// brine::test::Sql without its line end.
std::string Sql1(const std::filesystem::path& db, const std::string& query) {
  std::string v = Sql(db, query);
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

std::int64_t Count(const std::filesystem::path& db, const std::string& where) {
  const std::string v = Sql1(db, "SELECT count(*) FROM salt_events WHERE " + where);
  return v.empty() ? -1 : std::stoll(v);
}

std::string Tags(const std::filesystem::path& db, const std::string& like) {
  return Sql1(db, "SELECT group_concat(tag, ' ') FROM (SELECT tag FROM salt_events WHERE tag LIKE '" + like +
                     "' ORDER BY id)");
}

std::string Gaps(const std::filesystem::path& db) {
  return Sql1(db, "SELECT coalesce(group_concat(reason || ':' || (gap_end IS NOT NULL), ', '), '') FROM "
                 "(SELECT reason, gap_end FROM brine_bus_gaps ORDER BY gap_start)");
}

// Waits until brine_bus_gaps reads `want` (Gaps' form); false, with what it
// saw in the test's output, when it does not within 30 s.
bool WaitGaps(const std::filesystem::path& db, const std::string& want) {
  if (WaitUntil([&] { return Gaps(db) == want; })) return true;
  UNSCOPED_INFO("brine_bus_gaps: " << Gaps(db) << "; wanted " << want);
  return false;
}

// A body with Salt's datetime (ext 78) and a Salt constant (ext 79), packed
// by hand as salt.utils.msgpack does.
std::string ExtBody(int i) {
  std::string data;
  data += "\x83";
  data += "\xa1i";
  data += static_cast<char>(i & 0x7f);
  data += "\xa2" "dt";
  const std::string stamp = "20261126T12:00:00.123456";
  data += "\xc7";
  data += static_cast<char>(stamp.size());
  data += "\x4e";
  data += stamp;
  data += "\xa1" "c";
  const std::string constant = std::string("\x92\xa4" "TRUE\xc3", 7);
  data += "\xc7";
  data += static_cast<char>(constant.size());
  data += "\x4f";
  data += constant;
  return "attach/ext/" + std::to_string(i) + "\n\n" + data;
}

}  // namespace

TEST_CASE("attach: every event of both framings, str and bin keys, split frames and ext bodies is stored once, in order",
          "[attach][e2e]") {
  Attached a;
  ModernBus bus(a.salt_dir(), {.form = {.framing = StreamFraming::kPlain}, .write_chunk = 7});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  for (int i = 0; i < 50; ++i) bus.Fire("attach/plain/" + std::to_string(i), Value::Map({{"i", Value(i)}}));
  for (int i = 0; i < 5; ++i) bus.FireRaw(brine::wire::EncodeStreamFrame(ExtBody(i)));
  REQUIRE(bus.WaitFlushed());
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag LIKE 'attach/%'") == 55; }));
  // A restart that brings the other framing, with bin keys and the body first.
  bus.Restart({.framing = StreamFraming::kPrefixed, .keys = StreamString::kBin, .body = StreamString::kStr,
               .order = StreamKeyOrder::kBodyFirst});
  REQUIRE(bus.WaitForReaders(1));
  for (int i = 0; i < 50; ++i) bus.Fire("attach/prefixed/" + std::to_string(i), Value::Map({{"i", Value(i)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag LIKE 'attach/prefixed/%'") == 50; }));
  std::string want_plain, want_prefixed;
  for (int i = 0; i < 50; ++i) {
    want_plain += (i ? " " : "") + std::string("attach/plain/") + std::to_string(i);
    want_prefixed += (i ? " " : "") + std::string("attach/prefixed/") + std::to_string(i);
  }
  CHECK(Tags(a.db(), "attach/plain/%") == want_plain);
  CHECK(Tags(a.db(), "attach/prefixed/%") == want_prefixed);
  CHECK(Count(a.db(), "tag LIKE 'attach/ext/%'") == 5);
  const std::string ext = Sql1(a.db(), "SELECT data FROM salt_events WHERE tag = 'attach/ext/3'");
  INFO(ext);
  CHECK(ext.find("\"dt\":\"20261126T12:00:00.123456\"") != std::string::npos);
  CHECK(ext.find("\"__ext__\":79") != std::string::npos);
  // The restart is a gap, closed at the new attach; the framing seen is
  // recorded for brine-run.
  REQUIRE(WaitGaps(a.db(), "master went away:1"));
  CHECK(brine::test::ReadFile(a.master.sock_dir() / "brine_bus_framing") == "prefixed\n");
  CHECK(brine::test::Counter(a.db(), "bus_reconnects") == 1);
  REQUIRE(a.master.Stop() == 0);
  // brine-master's own stop is a gap, open until its next attach.
  CHECK(Gaps(a.db()) == "master went away:1, brine-master stopped:0");
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  REQUIRE(WaitGaps(a.db(), "master went away:1, brine-master stopped:1"));
}

TEST_CASE("attach: a garbage frame is quarantined; prefixed goes on, bare reconnects with a gap", "[attach][e2e]") {
  Attached a;
  ModernBus bus(a.salt_dir(), {.form = {.framing = StreamFraming::kPrefixed}});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/before", Value::Map({{"n", Value(1)}}));
  // A length-prefixed message that is not a {head, body} map.
  bus.FireRaw(std::string("\0\0\0\x03\x93\x01\x02", 7));
  bus.Fire("attach/after", Value::Map({{"n", Value(2)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/after'") == 1; }));
  CHECK(Sql1(a.db(), "SELECT count(*) FROM quarantine") == "1");
  CHECK(Gaps(a.db()) == "");
  CHECK(bus.readers() == 1);
  // Bare: 0x93 is neither a map nor a length; no boundary to resume at.
  bus.Restart({.framing = StreamFraming::kPlain});
  REQUIRE(bus.WaitForReaders(1));
  REQUIRE(WaitGaps(a.db(), "master went away:1"));
  bus.FireRaw(std::string("\x93\x01\x02\x03", 4));
  REQUIRE(WaitUntil([&] { return Sql1(a.db(), "SELECT count(*) FROM quarantine") == "2"; }));
  REQUIRE(WaitGaps(a.db(), "master went away:1, undecodable stream:1"));
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/again", Value::Map({{"n", Value(3)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/again'") == 1; }));
  const std::string reasons = Sql1(a.db(), "SELECT group_concat(reason, ' | ') FROM quarantine");
  INFO(reasons);
  CHECK(reasons.find("modern bus (prefixed)") != std::string::npos);
  CHECK(reasons.find("modern bus (plain)") != std::string::npos);
}

TEST_CASE("attach: a replaced socket file is a gap, and brine reads the new publisher", "[attach][e2e]") {
  Attached a;
  ModernBus bus(a.salt_dir(), {});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/one", Value::Map({{"n", Value(1)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/one'") == 1; }));
  bus.ReplaceSocket();  // the old connection stays open: only the inode tells
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/two", Value::Map({{"n", Value(2)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/two'") == 1; }));
  REQUIRE(WaitGaps(a.db(), "socket replaced:1"));
}

TEST_CASE("attach: a master that is not there yet is waited for, never a reason to exit", "[attach][e2e]") {
  Attached a;
  a.master.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  REQUIRE(a.master.child()->Running());
  ModernBus bus(a.salt_dir(), {});
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/late", Value::Map({{"n", Value(1)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/late'") == 1; }));
  REQUIRE(WaitGaps(a.db(), "master went away:1"));
  const std::string log = brine::test::ReadFile(a.master.log_file());
  INFO(log);
  // Once per episode, not once per try.
  CHECK(brine::test::master_helpers::CountOf(log, "is not there") == 1);
}

TEST_CASE("attach: while the store is locked the reader keeps reading into the overflow file, then falls behind",
          "[attach][e2e]") {
  Attached a("brine.max_queue_mb: 1\nbrine.overflow_mb: 4\nbrine.batch_max_events: 100\n");
  ModernBus bus(a.salt_dir(), {.drop_after_bytes = 1024 * 1024});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/first", Value::Map({{"n", Value(0)}}));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/first'") == 1; }));
  // Another process holds the store's write lock.
  std::optional<brine::test::Child> lock;
  lock.emplace(std::vector<std::string>{"/bin/sh", "-c", "(echo 'BEGIN IMMEDIATE;'; echo 'SELECT 1;'; sleep 600) | sqlite3 " +
                                                a.db().string()},
                          a.master.dir() / "lock.out");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string pad(2000, 'x');
  // About 2 MB: more than the queue, less than queue + overflow file.
  // Paced as a busy master fires (some 20 MB/s), not at memory speed.
  for (int i = 0; i < 1000; ++i) {
    bus.Fire("attach/locked/" + std::to_string(i), Value::Map({{"p", Value(pad)}}));
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(bus.WaitFlushed());
  CHECK(bus.dropped() == 0);
  CHECK(bus.readers() == 1);
  // Now past both: brine stops reading and the stand-in drops it.
  for (int i = 0; i < 4000 && bus.dropped() == 0; ++i) {
    bus.Fire("attach/over/" + std::to_string(i), Value::Map({{"p", Value(pad)}}));
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(bus.dropped() == 1);
  lock.reset();  // kills and reaps its process group: sqlite3 lets go
  const bool all = WaitUntil([&] { return Count(a.db(), "tag LIKE 'attach/locked/%'") == 1000; }, std::chrono::seconds(60));
  INFO("stored: " << Count(a.db(), "tag LIKE 'attach/locked/%'") << "; log:\n"
                  << brine::test::ReadFile(a.master.log_file()).substr(0, 6000));
  REQUIRE(all);
  REQUIRE(WaitGaps(a.db(), "brine fell behind:1"));
  std::string want;
  for (int i = 0; i < 1000; ++i) want += (i ? " " : "") + std::string("attach/locked/") + std::to_string(i);
  CHECK(Tags(a.db(), "attach/locked/%") == want);
}

TEST_CASE("attach: the store keeps one open gap per master, ends it not before its start, on both backends",
          "[attach][store]") {
  using brine::store::GapReason;
  brine::test::TempDir dir;
  for (const std::string backend : {"sqlite", "postgresql"}) {
    INFO(backend);
    const std::string database = backend == "sqlite" ? (dir / "gaps.sqlite").string()
                                                     : brine::test::PostgresServer::Shared().CreateDatabase();
    const brine::Micros t0 = brine::FromUnixMicros(1764158400000000);  // 2025-11-26 12:00:00 UTC
    const auto at = [&](int s) { return t0 + std::chrono::seconds(s); };
    {
      auto s = brine::store::OpenStore(database, {.master_id = "m1"});
      s->OpenBusGap(GapReason::kMasterStopped, at(0), at(-5));
      s->OpenBusGap(GapReason::kMasterWentAway, at(1), std::nullopt);  // one is open: the first reason stands
      s->CloseBusGap(at(10));
      s->CloseBusGap(at(11));  // none open: nothing
      s->OpenBusGap(GapReason::kFellBehind, at(20), at(19));
      s->CloseBusGap(at(15));  // never before its start
      s->OpenBusGap(GapReason::kPermissionDenied, at(30), std::nullopt);
    }
    auto s = brine::store::OpenStore(database, {.master_id = "m2"});
    s->OpenBusGap(GapReason::kSocketReplaced, at(40), std::nullopt);
    const std::vector<brine::store::BusGap> gaps = s->GetBusGaps(at(12));
    REQUIRE(gaps.size() == 3);
    CHECK(gaps[0].reason == "brine fell behind");
    CHECK(gaps[0].master_id == "m1");
    CHECK(gaps[0].end == at(20));
    CHECK(gaps[0].last_frame == at(19));
    CHECK(gaps[1].reason == "permission denied");
    CHECK_FALSE(gaps[1].end.has_value());
    CHECK(gaps[2].reason == "socket replaced");
    CHECK(gaps[2].master_id == "m2");
    CHECK(s->GetBusGaps(at(0)).size() == 4);
    const std::string sql = "SELECT count(*) FROM brine_bus_gaps WHERE reason = 'brine-master stopped'";
    CHECK((backend == "sqlite" ? Sql1(database, sql)
                               : brine::test::PostgresServer::Shared().Query(database, sql)) .starts_with("1"));
  }
}

TEST_CASE("attach: event.send writes the puller's framing and state.event reads the master's publisher",
          "[attach][runner][e2e]") {
  Attached a;
  ModernBus bus(a.salt_dir(), {.form = {.framing = StreamFraming::kPrefixed}});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  bus.Fire("attach/hello", Value::Map({{"n", Value(1)}}));
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(a.master.sock_dir() / "brine_bus_framing") == "prefixed\n"; }));
  const std::string brine_run = brine::test::Binary("brine-run").string();
  const std::string conf = a.master.conf_dir().string();
  // state.event watches the publisher itself, as salt-run state.event does.
  brine::test::Child watch({brine_run, "-c", conf, "state.event", "attach/sent/*", "count=2"},
                           a.master.dir() / "watch.out");
  REQUIRE(bus.WaitForReaders(2));
  // The framing brine-master saw on the publisher, by default.
  const brine::test::RunResult sent = brine::test::Run({brine_run, "-c", conf, "event.send", "attach/sent/1", "{\"x\": 1}"});
  INFO(sent.err);
  REQUIRE(sent.exit_code == 0);
  // brine.bus_framing overrides it (3008.2+: prefixed puller, bare publisher).
  std::ofstream(a.master.conf_dir() / "master.d" / "framing.conf") << "brine.bus_framing: plain\n";
  const brine::test::RunResult plain = brine::test::Run({brine_run, "-c", conf, "event.send", "attach/sent/2", "{\"x\": 2}"});
  INFO(plain.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(WaitUntil([&] { return bus.pulled().size() == 2; }));
  CHECK(bus.pulled_framings() == std::vector<StreamFraming>{StreamFraming::kPrefixed, StreamFraming::kPlain});
  // Republished by the stand-in: archived by brine-master, seen by state.event.
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag LIKE 'attach/sent/%'") == 2; }));
  const auto code = watch.Wait(std::chrono::seconds(30));
  REQUIRE(code.has_value());
  const std::string out = brine::test::ReadFile(a.master.dir() / "watch.out");
  INFO(out);
  CHECK(out.find("attach/sent/1\t{\"x\": 1, \"_stamp\": \"") != std::string::npos);
  CHECK(out.find("attach/sent/2\t{\"x\": 2, \"_stamp\": \"") != std::string::npos);
  // No master: exit 1 and one line naming the puller.
  bus.Shutdown();
  const brine::test::RunResult none = brine::test::Run({brine_run, "-c", conf, "event.send", "attach/sent/3"});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("master_event_pull.ipc") != std::string::npos);
}

TEST_CASE("attach: the plug-in's event_return frames are acknowledged and counted, not stored twice",
          "[attach][e2e]") {
  Attached a;
  ModernBus bus(a.salt_dir(), {});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  const Value data = Value::Map({{"n", Value(7)}, {"_stamp", "2026-11-26T12:00:00.000001"}});
  bus.Fire("attach/twice", data);
  brine::test::AckClient plugin(a.master.sock_dir() / "brine_cache.ipc");
  const brine::test::AckReply reply =
      plugin.RequestReply(brine::test::AckHeader(1, brine::test::NowUs()), {brine::test::NewFrame("attach/twice", data)});
  REQUIRE(reply.status == 0);
  REQUIRE(WaitUntil([&] { return brine::test::Counter(a.db(), "event_return_seen") == 1; }));
  REQUIRE(WaitUntil([&] { return Count(a.db(), "tag = 'attach/twice'") >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a second copy would be committed by now
  CHECK(Count(a.db(), "tag = 'attach/twice'") == 1);
  CHECK(brine::test::CountersBalance(a.db()));
  const std::string log = brine::test::ReadFile(a.master.log_file());
  CHECK(brine::test::master_helpers::CountOf(log, "drop `event_return: brine`") == 1);
}

TEST_CASE("attach: brine.health says attached or detached from the store lock and the status row, never probing Salt's socket",
          "[attach][runner][e2e]") {
  Attached a;
  auto bus = std::make_unique<ModernBus>(a.salt_dir(), ModernBus::Options{});
  a.master.Start();
  REQUIRE(bus->WaitForReaders(1));
  const std::string brine_run = brine::test::Binary("brine-run").string();
  const std::string conf = a.master.conf_dir().string();
  const auto health = [&] { return brine::test::Run({brine_run, "-c", conf, "brine.health"}); };
  // The counters reach the store with the next heartbeat (5 s when idle).
  brine::test::RunResult up;
  REQUIRE(WaitUntil([&] { up = health(); return up.exit_code == 0 && up.out.find("attached to") != std::string::npos; }));
  INFO(up.out << up.err);
  CHECK(up.out.find("warning") == std::string::npos);
  // Only brine-master's connection ever reached the stand-in: health's checks did not.
  CHECK(bus->accepted() == 1);
  bus->Shutdown();
  brine::test::RunResult down;
  REQUIRE(WaitUntil([&] { down = health(); return down.exit_code == 1; }));
  INFO(down.out << down.err);
  CHECK(down.out.find("detached from the Salt master's event bus") != std::string::npos);
  CHECK(down.out.find("(master went away)") != std::string::npos);
  // The metrics count the gap, and say detached.
  const auto prom = a.master.dir() / "cache" / "brine-master.prom";
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(prom).find("\nbrine_bus_gaps_total 1\n") != std::string::npos; }));
  CHECK(brine::test::ReadFile(prom).find("\nbrine_bus_attached 0\n") != std::string::npos);
  const brine::test::RunResult stats = brine::test::Run({brine_run, "-c", conf, "brine.stats", "--out", "json"});
  INFO(stats.out);
  CHECK(stats.out.find("\"state\": \"detached\"") != std::string::npos);
  CHECK(stats.out.find("\"gaps_last_hour\": 1") != std::string::npos);
  REQUIRE(a.master.Stop() == 0);
  const brine::test::RunResult stopped = health();
  CHECK(stopped.exit_code == 1);
  CHECK(stopped.out.find("brine-master is not running: no live process holds") != std::string::npos);
}

TEST_CASE("attach: brine-sim feeds 10,000 events/s through a modern bus of either framing with nothing lost",
          "[attach][sim][e2e]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("AddressSanitizer build: too slow for a rate case; the Release build runs it");
#else
  for (const std::string framing : {"plain", "prefixed"}) {
    INFO(framing);
    Attached a;
    a.master.Start();
    const std::string sim = brine::test::Binary("brine-sim").string();
    // brine-sim plays the Salt master's publisher at <sock_dir>/master_event_pub.ipc
    // (brine.bus: attach in the config); it waits for brine-master to connect.
    const brine::test::RunResult r =
        brine::test::Run({sim, "-c", a.master.conf_dir().string(), "--bus-framing", framing, "--minions", "200",
                          "--jobs", "150", "--return-size", "200,600,4000", "--rate", "10000", "--clock", "now", "--seed", "7", "--summary-json"},
                         std::chrono::seconds(120));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const Value summary = brine::ParseJson(r.out);
    const std::int64_t sent = summary.Find("events")->as_int();
    REQUIRE(sent > 10000);
    brine::test::Patience patience{.progress = [&] { return brine::test::Counter(a.db(), "received"); },
                                   .stall = std::chrono::seconds(30),
                                   .limit = std::chrono::seconds(120)};
    const bool all = WaitUntil([&] { return brine::test::Counter(a.db(), "received") == sent; }, patience);
    INFO("received " << brine::test::Counter(a.db(), "received") << " of " << sent);
    REQUIRE(all);
    CHECK(brine::test::Counter(a.db(), "quarantined") == 0);
    CHECK(brine::test::CountersBalance(a.db()));
    // brine-master started first (a gap until the sim's bus came), and the
    // sim's stream ended with EOF: the master going away.
    REQUIRE(WaitGaps(a.db(), "master went away:1, master went away:0"));
    CHECK(brine::test::ReadFile(a.master.sock_dir() / "brine_bus_framing") == framing + "\n");
  }
#endif
}

TEST_CASE("attach: the stream decoder takes both framings byte by byte, str or bin, and says where it cannot go on",
          "[attach][wire]") {
  using brine::wire::EncodeStreamFrame;
  using brine::wire::StreamDecoder;
  using Kind = StreamDecoder::Item::Kind;
  const std::string body = "salt/job/20261126120000123456/ret/web1\n\n\x81\xa2id\xa4web1";
  std::string stream;
  stream += EncodeStreamFrame(body, {.framing = StreamFraming::kPlain});
  stream += EncodeStreamFrame(body, {.framing = StreamFraming::kPrefixed, .keys = StreamString::kBin});
  stream += EncodeStreamFrame(body, {.framing = StreamFraming::kPlain, .body = StreamString::kStr,
                                     .order = StreamKeyOrder::kBodyFirst});
  stream += std::string("\0\0\0\x02\x91\x01", 6);  // prefixed, not a {head, body} map: skipped
  stream += EncodeStreamFrame(std::string(300, 'b'), {.framing = StreamFraming::kPrefixed});  // str16/bin16 sizes
  StreamDecoder d(1 << 20);
  std::vector<StreamDecoder::Item> items;
  for (const char c : stream) {
    d.Append(std::string_view(&c, 1));
    while (auto item = d.Next()) items.push_back(std::move(*item));
  }
  REQUIRE(items.size() == 5);
  for (int i : {0, 1, 2}) {
    CHECK(items[i].kind == Kind::kBody);
    CHECK(items[i].bytes == body);
  }
  CHECK(items[0].framing == StreamFraming::kPlain);
  CHECK(items[1].framing == StreamFraming::kPrefixed);
  CHECK(items[3].kind == Kind::kUndecodable);
  CHECK(items[3].bytes == std::string("\x91\x01", 2));
  CHECK(items[4].bytes == std::string(300, 'b'));
  CHECK(d.buffered() == 0);
  // The spec's example frame: 105 bytes bare, 00 00 00 69 before them prefixed.
  const std::string example_body = "salt/job/20261126120000123456/ret/web1\n\n" +
                                   std::string("\x83\xa2id\xa4web1\xa6return\xc3\xa6_stamp\xba") +
                                   "2026-11-26T12:00:00.123456";
  REQUIRE(example_body.size() == 91);
  CHECK(EncodeStreamFrame(example_body).size() == 105);
  CHECK(EncodeStreamFrame(example_body, {.framing = StreamFraming::kPrefixed}).substr(0, 4) ==
        std::string("\0\0\0\x69", 4));
  // A length past max_frame_bytes, and a byte that starts neither form: broken.
  StreamDecoder small(100);
  small.Append(std::string("\0\0\x10\0", 4));
  auto broken = small.Next();
  REQUIRE(broken);
  CHECK(broken->kind == Kind::kBroken);
  CHECK(broken->reason == "bus message length 4096 over max_frame_bytes 100");
  CHECK_FALSE(small.Next());
  small.Reset();
  small.Append("\x93\x01");
  broken = small.Next();
  REQUIRE(broken);
  CHECK(broken->kind == Kind::kBroken);
  CHECK(broken->reason.find("starts neither a bare msgpack map nor a length prefix") != std::string::npos);
}

TEST_CASE("attach: a bus the user may not read is retried, logged with the user, the path and what to change",
          "[attach][e2e]") {
  if (::geteuid() != 0) {
    WARN("not root: a socket root owns cannot be made unreadable to this user here");
    return;
  }
  Attached a("user: nobody\n");
  ::chmod(a.master.dir().c_str(), 0755);  // mkdtemp made it 0700 root
  // The master's socket is 0600 root, as a Salt master's is to any other user.
  ModernBus bus(a.salt_dir(), {});
  ::chmod(a.salt_dir().c_str(), 0755);
  a.master.Start();
  REQUIRE(WaitGaps(a.db(), "permission denied:0"));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // a few retries
  REQUIRE(a.master.child()->Running());
  CHECK(bus.readers() == 0);
  const std::string log = brine::test::ReadFile(a.master.log_file());
  INFO(log);
  CHECK(brine::test::master_helpers::CountOf(log, "permission denied; run brine-master as the master's user") == 1);
  CHECK(log.find("as user nobody") != std::string::npos);
  CHECK(log.find((a.salt_dir() / "master_event_pub.ipc").string()) != std::string::npos);
  // Widened (as publisher_acl does), the next retry attaches and ends the gap.
  ::chmod(bus.pub_path().c_str(), 0666);
  REQUIRE(bus.WaitForReaders(1));
  REQUIRE(WaitGaps(a.db(), "permission denied:1"));
}

TEST_CASE("attach: with the plug-in as job cache a trimmed bus return is archived only, and the whole return is one row",
          "[attach][e2e]") {
  namespace mh = brine::test::master_helpers;
  Attached a("master_job_cache: brine\n");
  ModernBus bus(a.salt_dir(), {});
  a.master.Start();
  REQUIRE(bus.WaitForReaders(1));
  const brine::Micros t = mh::Now();
  const std::string jid = mh::JidAt(t);
  const std::string stamp = mh::StampAt(t);
  const Value whole = mh::ReturnLoad(jid, "web1", "cmd.run", Value(std::string(2000, 'o')), stamp);
  const Value trimmed = mh::ReturnLoad(jid, "web1", "cmd.run", Value("VALUE_TRIMMED"), stamp);
  // Salt's store_job fires the (trimmed) bus copy first, then writes the job cache.
  bus.Fire("salt/job/" + jid + "/ret/web1", trimmed);
  REQUIRE(WaitUntil([&] { return brine::test::Counter(a.db(), "trimmed") == 1; }));
  brine::test::AckClient plugin(a.master.sock_dir() / "brine_cache.ipc");
  const brine::test::AckReply reply = plugin.RequestReply(brine::test::AckHeader(1, brine::test::NowUs()),
                                                          {brine::test::NewFrame("brine/cache/return", whole)});
  REQUIRE(reply.status == 0);
  // A late bus copy (a replay) changes nothing either.
  bus.Fire("salt/job/" + jid + "/ret/web1", trimmed);
  REQUIRE(WaitUntil([&] { return brine::test::Counter(a.db(), "trimmed") == 2; }));
  CHECK(Sql1(a.db(), "SELECT count(*) FROM salt_returns WHERE jid = '" + jid + "'") == "1");
  const std::string ret = Sql1(a.db(), "SELECT full_ret FROM salt_returns WHERE jid = '" + jid + "'");
  CHECK(ret.find("VALUE_TRIMMED") == std::string::npos);
  CHECK(ret.find(std::string(2000, 'o')) != std::string::npos);
  // Both bus copies are in the archive, as Salt sent them.
  CHECK(Count(a.db(), "tag = 'salt/job/" + jid + "/ret/web1'") == 2);
}

TEST_CASE("attach: brine.bus none binds no bus and archives what the plug-in sends", "[attach][e2e]") {
  MasterProcess m("brine.bus: none\n");
  m.Start();
  CHECK_FALSE(std::filesystem::exists(m.sock_dir() / "master_event_pull.ipc"));
  CHECK_FALSE(std::filesystem::exists(m.sock_dir() / "master_event_pub.ipc"));
  CHECK(brine::test::ReadFile(m.log_file()).find("no bus (brine.bus: none)") != std::string::npos);
  brine::test::AckClient plugin(m.sock_dir() / "brine_cache.ipc");
  const brine::test::AckReply reply = plugin.RequestReply(
      brine::test::AckHeader(1, brine::test::NowUs()), {brine::test::NewFrame("none/event", Value::Map({{"n", Value(1)}}))});
  REQUIRE(reply.status == 0);
  CHECK(Count(m.database(), "tag = 'none/event'") == 1);
  REQUIRE(m.Stop() == 0);
  CHECK(Gaps(m.database()) == "");
}
