// brine-master end to end: the real binary on a temp config folder, real
// ZeroMQ sockets, a real store file.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "archiver.h"
#include "frame_queue.h"
#include "logger.h"
#include "spool.h"
#include "brine/store/store.h"
#include "brine/wire/codec.h"
#include "support/joining_thread.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/tmpfs_mount.h"

using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::test::JoiningThread;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::PushFrames;
using brine::test::Sql;
using brine::test::TmpfsMount;

namespace {

struct FixtureEvent {
  std::string tag;
  Value data;
};

std::vector<FixtureEvent> Fixture2014() {
  std::ifstream in(std::string(BRINE_FIXTURES_DIR) + "/salt-2014-master-events.jsonl");
  std::vector<FixtureEvent> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Value v = ParseJson(line);
    out.push_back({*v.FindString("tag"), *v.Find("data")});
  }
  return out;
}

// Salt 2014 packed tags of at most 20 bytes the old way, longer ones new style.
std::vector<std::string> Frames2014(const std::vector<FixtureEvent>& events) {
  std::vector<std::string> frames;
  for (const auto& e : events)
    frames.push_back(brine::wire::EncodeFrame(e.tag, e.data, brine::wire::Framing::kOld));
  return frames;
}

std::string Counter(const MasterProcess& m, const std::string& name) {
  return Sql(m.database(), "SELECT value FROM brine_counters WHERE name = '" + name + "'");
}

std::int64_t CounterInt(const MasterProcess& m, const std::string& name) {
  const std::string v = Counter(m, name);
  return v.empty() ? -1 : std::stoll(v);
}

// Polls `done` every 20 ms until it holds; false when `timeout` passes first.
bool WaitUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Waits until the master has committed `n` received frames (the counters
// commit with the data they count).
bool WaitReceived(const MasterProcess& m, std::int64_t n) {
  return WaitUntil([&] { return CounterInt(m, "received") >= n; });
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xF];
  }
  return out;
}

std::size_t CountOf(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1))
    ++n;
  return n;
}

brine::Micros Now() { return brine::SystemClock().Now(); }
std::string JidAt(brine::Micros t) { return brine::FormatJid(t); }
std::string StampAt(brine::Micros t) { return brine::FormatStamp(t); }

// A minion's return load as a 2016+ minion fires it under salt/job/<jid>/ret/<id>.
Value ReturnLoad(const std::string& jid, const std::string& minion, const std::string& fun,
                 Value ret, const std::string& stamp, Value fun_args = Value::EmptyList()) {
  return Value::Map({{"cmd", "_return"},
                     {"id", minion},
                     {"success", true},
                     {"return", std::move(ret)},
                     {"retcode", 0},
                     {"jid", jid},
                     {"fun", fun},
                     {"fun_args", std::move(fun_args)},
                     {"_stamp", stamp}});
}

Value PublishLoad(const std::string& jid, const std::string& fun,
                  const std::vector<std::string>& minions, const std::string& stamp) {
  ValueList ms;
  for (const auto& m : minions) ms.emplace_back(m);
  return Value::Map({{"jid", jid},
                     {"tgt", "*"},
                     {"tgt_type", "glob"},
                     {"user", "root"},
                     {"fun", fun},
                     {"arg", Value::EmptyList()},
                     {"minions", Value(std::move(ms))},
                     {"_stamp", stamp}});
}

// --- msgpack by hand, for what brine::Value cannot say (bin, ext) -------------

std::string MpStr(std::string_view s) {
  std::string out;
  if (s.size() < 32) {
    out += static_cast<char>(0xa0 | s.size());
  } else {
    out += '\xd9';
    out += static_cast<char>(s.size());
  }
  out += s;
  return out;
}

std::string MpMap(std::size_t entries) { return std::string(1, static_cast<char>(0x80 | entries)); }

std::string MpBin(std::string_view bytes) {
  std::string out = "\xc4";
  out += static_cast<char>(bytes.size());
  out += bytes;
  return out;
}

// ext 8: 0xc7, length, type, payload.
std::string MpExt8(std::int8_t type, std::string_view payload) {
  std::string out = "\xc7";
  out += static_cast<char>(payload.size());
  out += static_cast<char>(type);
  out += payload;
  return out;
}

// fixext 4: 0xd6, type, 4 bytes.
std::string MpFixExt4(std::int8_t type, std::string_view payload4) {
  std::string out = "\xd6";
  out += static_cast<char>(type);
  out += payload4;
  return out;
}

// A plain AF_UNIX stream socket bound at `path` (listening or not).
int BindUnix(const std::filesystem::path& path, bool listen_on_it) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  REQUIRE(p.size() < sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  if (listen_on_it) REQUIRE(::listen(fd, 8) == 0);
  return fd;
}

bool Connectable(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

mode_t ModeOf(const std::filesystem::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("master: the 2014 fixture gives 3 jobs, 3 returns and 15 archived events",
          "[master][e2e]") {
  // The fixture's jids are from 2014: the default retention (24 h) would
  // delete them if the first maintenance pass ran after they were committed.
  MasterProcess m("keep_jobs_seconds: 0\n");
  m.Start();
  const auto events = Fixture2014();
  REQUIRE(events.size() == 15);
  PushFrames(m.pull_endpoint(), Frames2014(events));
  REQUIRE(m.Stop() == 0);

  REQUIRE(Sql(m.database(), "SELECT jid, fun, load_source FROM jids ORDER BY jid") ==
          "20140417135823133764|test.ping|publish\n"
          "20140417141834578593|cmd.run|publish\n"
          "20140417141839587706|saltutil.find_job|publish\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns") == "3\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_events") == "15\n");
  REQUIRE(Sql(m.database(), "SELECT jid, minion FROM jid_minions ORDER BY jid") ==
          "20140417135823133764|salt-minion-01.example.com\n"
          "20140417141834578593|salt-minion-01.example.com\n"
          "20140417141839587706|salt-minion-01.example.com\n");
  // Every archived event reads back exactly as sent, in arrival order.
  const std::string archived = Sql(m.database(), "SELECT tag, data FROM salt_events ORDER BY id");
  std::string expected;
  for (const auto& e : events) expected += e.tag + "|" + ToJson(e.data) + "\n";
  REQUIRE(archived == expected);
  // The load is the publish data without _stamp and minions.
  REQUIRE(
      Sql(m.database(), "SELECT load FROM jids WHERE jid = '20140417141834578593'") ==
      R"({"tgt_type":"glob","jid":"20140417141834578593","tgt":"*","user":"sudo_vagrant","arg":["sleep 6; echo hello world"],"fun":"cmd.run"})"
      "\n");
  // Each return's payload is stored once although 2014 fired it twice.
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM event WHERE data IS NULL") == "6\n");
  REQUIRE(Counter(m, "received") == "15\n");
  REQUIRE(Counter(m, "stored") == "15\n");
  REQUIRE(Counter(m, "duplicates") == "0\n");
  REQUIRE(Counter(m, "returns") == "3\n");
}

TEST_CASE("master: a subscriber on PUB receives every frame byte for byte, in order",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 5000);
  sub.connect(m.pub_endpoint());
  // A PUB socket drops what it sends before the subscription arrives: probe until one gets through.
  bool joined = false;
  for (int i = 0; i < 200 && !joined; ++i) {
    PushFrames(m.pull_endpoint(),
               {brine::wire::EncodeFrame("probe", Value::EmptyMap(), brine::wire::Framing::kNew)});
    zmq::message_t msg;
    sub.set(zmq::sockopt::rcvtimeo, 50);
    joined = sub.recv(msg, zmq::recv_flags::none).has_value();
  }
  REQUIRE(joined);
  // Drain stray probes.
  zmq::message_t stray;
  while (sub.recv(stray, zmq::recv_flags::none)) {
  }
  sub.set(zmq::sockopt::rcvtimeo, 5000);
  auto frames = Frames2014(Fixture2014());
  frames.push_back(std::string("not a salt frame at all"));
  PushFrames(m.pull_endpoint(), frames);
  for (const auto& f : frames) {
    zmq::message_t msg;
    REQUIRE(sub.recv(msg, zmq::recv_flags::none));
    REQUIRE(msg.to_string() == f);
  }
  REQUIRE(m.Stop() == 0);
}

// --- framings, runners, the job cache ------------------------------------------

TEST_CASE("master: old and new framings with tags of 19, 20 and 21 bytes all decode to their tags",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string t19 = "frame/tag/nineteen1";
  const std::string t20 = "frame/tag/twenty-20b";
  const std::string t21 = "frame/tag/twentyone21";
  REQUIRE(t19.size() == 19);
  REQUIRE(t20.size() == 20);
  REQUIRE(t21.size() == 21);
  using brine::wire::Framing;
  std::vector<std::string> frames;
  std::string expected;
  for (const auto& [framing, name] :
       {std::pair{Framing::kOld, "old"}, std::pair{Framing::kNew, "new"}}) {
    for (const std::string* tag : {&t19, &t20, &t21}) {
      const Value data = Value::Map({{"framing", name}, {"len", static_cast<int>(tag->size())}});
      frames.push_back(brine::wire::EncodeFrame(*tag, data, framing));
      expected += *tag + "|" + ToJson(data) + "\n";
    }
  }
  // The frames really are the shapes under test.
  REQUIRE(frames[0].substr(0, 20) == t19 + "|");               // old, padded
  REQUIRE(frames[1].substr(0, 20) == t20);                     // old, exactly 20
  REQUIRE(static_cast<unsigned char>(frames[1][20]) == 0x82);  // ...then the map
  REQUIRE(frames[2].substr(0, 23) == t21 + "\n\n");            // old era, long tag: new style
  REQUIRE(frames[3].substr(0, 21) == t19 + "\n\n");
  REQUIRE(frames[4].substr(0, 22) == t20 + "\n\n");
  REQUIRE(frames[5].substr(0, 23) == t21 + "\n\n");
  // A new-style short tag whose byte 20 is >= 0x80 (every salt/auth event):
  // Salt's old byte-20 test would misread it as old style.
  const Value auth =
      Value::Map({{"abcdefg", "x"}, {"act", "accept"}, {"id", "m1"}, {"result", true}});
  frames.push_back(NewFrame("salt/auth", auth));
  REQUIRE(static_cast<unsigned char>(frames.back()[20]) >= 0x80);
  expected += "salt/auth|" + ToJson(auth) + "\n";

  PushFrames(m.pull_endpoint(), frames);
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag, data FROM salt_events ORDER BY id") == expected);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM quarantine") == "0\n");
}

TEST_CASE("master: a runner's salt/run ret is stored as Salt's store_job stores it",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  const std::string only_new = JidAt(Now() + std::chrono::seconds(1));
  const Value args = Value::List({"a", Value::Map({{"k", "v"}})});
  const Value started = Value::Map({{"fun", "runner.test.arg"},
                                    {"jid", jid},
                                    {"user", "root"},
                                    {"fun_args", args},
                                    {"_stamp", StampAt(Now())}});
  const Value ret = Value::Map(
      {{"fun", "runner.test.arg"},
       {"jid", jid},
       {"user", "root"},
       {"fun_args", args},
       {"return", Value::Map({{"args", Value::List({"a"})}, {"kwargs", Value::Map({{"k", "v"}})}})},
       {"success", true},
       {"_stamp", StampAt(Now())}});
  Value lonely = started;
  lonely.Set("jid", only_new);
  PushFrames(m.pull_endpoint(), {NewFrame("salt/run/" + jid + "/new", started),
                                 NewFrame("salt/run/" + jid + "/ret", ret),
                                 NewFrame("salt/run/" + only_new + "/new", lonely)});
  REQUIRE(m.Stop() == 0);

  // One job: the runner's, named as the runner named it (never runner.runner.*),
  // targeting the master itself; salt/run/<jid>/new alone makes no job.
  REQUIRE(Sql(m.database(), "SELECT jid, fun, load_source FROM jids") ==
          jid + "|runner.test.arg|publish\n");
  REQUIRE(Sql(m.database(),
              "SELECT load ->> '$.id', load ->> '$.tgt', load ->> '$.tgt_type', load ->> '$.user', "
              "load -> '$.arg'"
              " FROM jids") == "test_master|test_master|glob|root|[]\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM jid_minions") == "0\n");
  // One result, under the master id, whose return is the whole ret data.
  REQUIRE(Sql(m.database(), "SELECT jid, id, fun FROM salt_returns") ==
          jid + "|test_master|runner.test.arg\n");
  REQUIRE(Sql(m.database(), "SELECT \"return\" FROM salt_returns") == ToJson(ret) + "\n");
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events ORDER BY id") ==
          "salt/run/" + jid + "/new\nsalt/run/" + jid + "/ret\nsalt/run/" + only_new + "/new\n");
  REQUIRE(Sql(m.database(), "SELECT data FROM salt_events WHERE tag = 'salt/run/" + jid +
                                "/ret'") == ToJson(ret) + "\n");
}

TEST_CASE("master: a runner job's load carries the ret data as Salt's store_job saves it",
          "[master][e2e]") {
  // Issue 3: load {"id", "tgt", "jid", "return": <the ret data>, "arg": [], "tgt_type", "fun",
  // "user"}.
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  const Value ret = Value::Map({{"fun", "runner.test.arg"},
                                {"jid", jid},
                                {"user", "root"},
                                {"fun_args", Value::List({"a"})},
                                {"return", Value::Map({{"args", Value::List({"a"})}})},
                                {"success", true},
                                {"_stamp", StampAt(Now())}});
  PushFrames(m.pull_endpoint(), {NewFrame("salt/run/" + jid + "/ret", ret)});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT load -> '$.return' FROM jids") == ToJson(ret) + "\n");
}

TEST_CASE("master: with runner_returns False a runner job is archived but not stored as a job",
          "[master][e2e]") {
  MasterProcess m("runner_returns: False");
  m.Start();
  const std::string jid = JidAt(Now());
  const Value ret = Value::Map({{"fun", "runner.test.arg"},
                                {"jid", jid},
                                {"user", "root"},
                                {"fun_args", Value::EmptyList()},
                                {"return", true},
                                {"success", true},
                                {"_stamp", StampAt(Now())}});
  PushFrames(m.pull_endpoint(), {NewFrame("salt/run/" + jid + "/new",
                                          Value::Map({{"fun", "runner.test.arg"}, {"jid", jid}})),
                                 NewFrame("salt/run/" + jid + "/ret", ret)});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM jids") == "0\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns") == "0\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_events") == "2\n");
}

TEST_CASE(
    "master: a repeated return is stored once and a different second return is a counted, logged "
    "duplicate",
    "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  const std::string tag = "salt/job/" + jid + "/ret/m1";
  const Value first = ReturnLoad(jid, "m1", "test.echo", "hello", StampAt(Now()));
  Value again = first;
  again.Set("_stamp", StampAt(Now() + std::chrono::milliseconds(5)));
  REQUIRE_FALSE(again == first);
  PushFrames(m.pull_endpoint(), {NewFrame(tag, first), NewFrame(tag, again)});
  REQUIRE(WaitReceived(m, 2));
  REQUIRE(Sql(m.database(), "SELECT id, \"return\" FROM salt_returns") == "m1|\"hello\"\n");
  REQUIRE(CounterInt(m, "returns") == 1);
  REQUIRE(CounterInt(m, "duplicates") == 0);
  REQUIRE(CountOf(brine::test::ReadFile(m.log_file()), "replay attack") == 0);

  Value other = first;
  other.Set("return", "a different payload");
  other.Set("_stamp", StampAt(Now() + std::chrono::milliseconds(10)));
  PushFrames(m.pull_endpoint(), {NewFrame(tag, other)});
  REQUIRE(WaitReceived(m, 3));
  REQUIRE(CounterInt(m, "duplicates") == 1);
  REQUIRE(CounterInt(m, "returns") == 1);
  REQUIRE(WaitUntil([&] {
    return brine::test::ReadFile(m.log_file()).find("replay attack") != std::string::npos;
  }));
  REQUIRE(m.Stop() == 0);

  // The first return is kept, untouched.
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns") == "1\n");
  REQUIRE(Sql(m.database(), "SELECT full_ret FROM salt_returns") == ToJson(first) + "\n");
  // All three events are archived as they came, each with its own _stamp.
  REQUIRE(Sql(m.database(), "SELECT data FROM salt_events ORDER BY id") ==
          ToJson(first) + "\n" + ToJson(again) + "\n" + ToJson(other) + "\n");
  REQUIRE(Counter(m, "duplicates") == "1\n");
}

TEST_CASE("master: a return before its publish makes a stub job that the publish replaces",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  const Value ret = ReturnLoad(jid, "m1", "test.arg", "x", StampAt(Now()), Value::List({"x"}));
  PushFrames(m.pull_endpoint(), {NewFrame("salt/job/" + jid + "/ret/m1", ret)});
  REQUIRE(WaitReceived(m, 1));
  // Salt's store_job defaults: tgt the minion, tgt_type glob, arg the fun_args.
  REQUIRE(Sql(m.database(),
              "SELECT fun, load_source, load ->> '$.tgt', load ->> '$.tgt_type', load -> '$.arg' "
              "FROM jids") == "test.arg|return|m1|glob|[\"x\"]\n");
  REQUIRE(Sql(m.database(), "SELECT minion FROM jid_minions WHERE jid = '" + jid + "'") == "m1\n");

  PushFrames(m.pull_endpoint(),
             {NewFrame("salt/job/" + jid + "/new",
                       PublishLoad(jid, "test.arg", {"m2", "m3"}, StampAt(Now())))});
  REQUIRE(WaitReceived(m, 2));
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT fun, load_source, load ->> '$.tgt' FROM jids") ==
          "test.arg|publish|*\n");
  // The publish's list replaces the stub's guess (it is not a union).
  REQUIRE(Sql(m.database(), "SELECT minion FROM jid_minions ORDER BY minion") == "m2\nm3\n");
  REQUIRE(Sql(m.database(), "SELECT id, \"return\" FROM salt_returns") == "m1|\"x\"\n");
}

TEST_CASE("master: bin, invalid UTF-8 and ext data inside a return are stored and read back",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  std::string body = MpMap(6);
  body += MpStr("jid") + MpStr(jid);
  body += MpStr("id") + MpStr("m1");
  body += MpStr("fun") + MpStr("test.bin");
  body += MpStr("return") + MpMap(4);
  body += MpStr("bin") + MpBin("\xff\xfe");
  body += MpStr("raw") + MpStr("\xc3(A");  // a str that is not UTF-8
  body += MpStr("when") + MpExt8(78, "20240101T12:00:00.123456");
  body += MpStr("other") + MpFixExt4(5, std::string("\x01\x02\x03\x04", 4));
  body += MpStr("success") + std::string("\xc3");
  body += MpStr("retcode") + std::string(1, '\0');
  const std::string frame = "salt/job/" + jid + "/ret/m1\n\n" + body;
  PushFrames(m.pull_endpoint(), {frame});
  REQUIRE(m.Stop() == 0);

  REQUIRE(Sql(m.database(), "SELECT count(*) FROM quarantine") == "0\n");
  REQUIRE(Sql(m.database(), "SELECT id, fun, success, retcode FROM salt_returns") ==
          "m1|test.bin|1|0\n");
  const std::string want_return =
      R"({"bin":"\udcff\udcfe","raw":"\udcc3(A","when":"20240101T12:00:00.123456","other":{"__ext__":5,"data":"AQIDBA=="}})";
  REQUIRE(Sql(m.database(), "SELECT \"return\" FROM salt_returns") == want_return + "\n");
  REQUIRE(Sql(m.database(), "SELECT full_ret FROM salt_returns") ==
          R"({"jid":")" + jid + R"(","id":"m1","fun":"test.bin","return":)" + want_return +
              R"(,"success":true,"retcode":0})" + "\n");
  // Parts read back with SQLite's own JSON functions.
  REQUIRE(Sql(m.database(),
              "SELECT \"return\" ->> '$.when', \"return\" ->> '$.other.__ext__', "
              "\"return\" ->> '$.other.data' FROM salt_returns") ==
          "20240101T12:00:00.123456|5|AQIDBA==\n");
  // And brine's own JSON reader gives back the very bytes sent.
  const std::string stored = Sql(m.database(), "SELECT \"return\" FROM salt_returns");
  const Value back = ParseJson(stored.substr(0, stored.size() - 1));
  REQUIRE(*back.FindString("bin") == "\xff\xfe");
  REQUIRE(*back.FindString("raw") == "\xc3(A");
  // The archived event is the same payload.
  REQUIRE(Sql(m.database(), "SELECT data = (SELECT full_ret FROM salt_returns) FROM salt_events") ==
          "1\n");
}

// --- bad frames, filters ------------------------------------------------------------

TEST_CASE(
    "master: each kind of bad frame is quarantined with its bytes and reason, and the master keeps "
    "serving",
    "[master][e2e]") {
  MasterProcess m("brine.max_frame_bytes: 4096");
  m.Start();
  // A frame over max_frame_bytes is refused by libzmq before brine reads it,
  // dropping the connection it came on: hardening_test.cpp covers it.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"this frame has no tag terminator at all", "no tag terminator"},
      {"\n\n" + MpMap(0), "empty tag"},
      {"salt/trunc\n\n" + MpMap(2) + MpStr("a") + "\x01" + "\xa1", "truncated msgpack"},
      {"salt/list\n\n\x92\x01\x02", "data is not a map (got array)"},
      {"bad\xff\xfetag\n\n" + MpMap(0), "tag is not valid UTF-8"},
  };
  const std::string part1 = "salt/multi\n\n";
  const std::string part2 = MpMap(1) + MpStr("k") + MpStr("v");
  const Value good = Value::Map({{"ok", true}});
  {
    zmq::context_t ctx(1);
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 10000);
    push.connect(m.pull_endpoint());
    for (const auto& [frame, reason] : bad) push.send(zmq::buffer(frame), zmq::send_flags::none);
    push.send(zmq::buffer(part1), zmq::send_flags::sndmore);
    push.send(zmq::buffer(part2), zmq::send_flags::none);
    push.send(zmq::buffer(NewFrame("salt/good", good)), zmq::send_flags::none);
  }
  // Still serving: the good event after them is archived.
  REQUIRE(WaitUntil([&] {
    return Sql(m.database(), "SELECT count(*) FROM salt_events WHERE tag = 'salt/good'") == "1\n";
  }));

  std::string expected;
  for (const auto& [frame, reason] : bad) expected += Hex(frame) + "|" + reason + "\n";
  expected += Hex(part1 + part2) + "|multi-part message of 2 parts\n";
  REQUIRE(Sql(m.database(), "SELECT hex(raw), reason FROM quarantine ORDER BY id") == expected);
  REQUIRE(CounterInt(m, "received") == 7);
  REQUIRE(CounterInt(m, "quarantined") == 6);
  REQUIRE(CounterInt(m, "stored") == 1);
  REQUIRE(CounterInt(m, "filtered") == 0);

  // And later frames too.
  PushFrames(m.pull_endpoint(), {NewFrame("salt/good/again", good)});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag, data FROM salt_events ORDER BY id") ==
          "salt/good|{\"ok\":true}\nsalt/good/again|{\"ok\":true}\n");
  const auto received = CounterInt(m, "received");
  REQUIRE(received == 8);
  REQUIRE(received ==
          CounterInt(m, "stored") + CounterInt(m, "filtered") + CounterInt(m, "quarantined"));
}

TEST_CASE("master: a burst of bad frames is logged", "[master][e2e]") {
  // Issue 3: a frame that cannot be decoded is quarantined, a counter goes up,
  // "and the log says so once per burst".
  MasterProcess m;
  m.Start();
  PushFrames(m.pull_endpoint(),
             {"no terminator in this frame, first", "no terminator in this frame, second",
              "no terminator in this frame, third"});
  REQUIRE(WaitReceived(m, 3));
  REQUIRE(m.Stop() == 0);
  REQUIRE(CounterInt(m, "quarantined") == 3);
  const std::string log = brine::test::ReadFile(m.log_file());
  std::size_t warnings = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("quarantin") != std::string::npos &&
        (line.find("[WARNING]") != std::string::npos ||
         line.find("[ERROR]") != std::string::npos)) {
      ++warnings;
    }
  }
  INFO(log);
  REQUIRE(warnings >= 1);
  REQUIRE(warnings < 3);
}

TEST_CASE(
    "master: whitelist and blacklist keep events out of the archive but not returns out of the job "
    "cache",
    "[master][e2e]") {
  MasterProcess m(
      "event_return_whitelist:\n"
      "  - salt/job/*\n"
      "  - keep/*\n"
      "event_return_blacklist:\n"
      "  - salt/job/*/ret/*\n"
      "  - keep/secret*\n");
  m.Start();
  const std::string jid = JidAt(Now());
  PushFrames(
      m.pull_endpoint(),
      {NewFrame("salt/job/" + jid + "/new", PublishLoad(jid, "test.ping", {"m1"}, StampAt(Now()))),
       NewFrame("salt/job/" + jid + "/ret/m1",
                ReturnLoad(jid, "m1", "test.ping", true, StampAt(Now()))),
       NewFrame("keep/a", Value::Map({{"n", 1}})),
       NewFrame("keep/secret1", Value::Map({{"n", 2}})),  // whitelisted, but deny wins
       NewFrame("other/x", Value::Map({{"n", 3}}))});     // not whitelisted
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events ORDER BY id") ==
          "salt/job/" + jid + "/new\nkeep/a\n");
  REQUIRE(Sql(m.database(), "SELECT jid, id, \"return\" FROM salt_returns") == jid + "|m1|true\n");
  REQUIRE(Sql(m.database(), "SELECT jid, fun FROM jids") == jid + "|test.ping\n");
  REQUIRE(CounterInt(m, "received") == 5);
  REQUIRE(CounterInt(m, "stored") == 2);
  REQUIRE(CounterInt(m, "filtered") == 3);
  REQUIRE(CounterInt(m, "returns") == 1);
}

// --- the bus and its files ---------------------------------------------------------

TEST_CASE("master: with ipc_mode tcp the bus is on 127.0.0.1 and events arrive", "[master][e2e]") {
  const brine::test::TcpBusPorts ports = brine::test::FreeTcpBusPorts();
  MasterProcess m(ports.Config());
  m.set_tcp_ports(ports.pull, ports.pub);
  REQUIRE(m.pull_endpoint() == "tcp://127.0.0.1:" + std::to_string(ports.pull));
  m.Start();
  REQUIRE_FALSE(std::filesystem::exists(m.sock_dir() / "master_event_pull.ipc"));
  PushFrames(m.pull_endpoint(), {NewFrame("over/tcp", Value::Map({{"n", 1}}))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag, data FROM salt_events") == "over/tcp|{\"n\":1}\n");
}

TEST_CASE("master: socket files are 0600, brine.sock_dir 0700 and the store 0600",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  PushFrames(m.pull_endpoint(), {NewFrame("some/event", Value::Map({{"n", 1}}))});
  REQUIRE(WaitReceived(m, 1));
  CHECK(ModeOf(m.sock_dir()) == 0700);
  CHECK(ModeOf(m.sock_dir() / "master_event_pull.ipc") == 0600);
  CHECK(ModeOf(m.sock_dir() / "master_event_pub.ipc") == 0600);
  CHECK(ModeOf(m.sock_dir() / "brine_cache.ipc") == 0600);
  CHECK(ModeOf(m.database()) == 0600);
  for (const char* sidecar : {"-wal", "-shm"}) {
    const std::filesystem::path p = m.database().string() + sidecar;
    if (std::filesystem::exists(p)) CHECK(ModeOf(p) == 0600);
  }
  REQUIRE(m.Stop() == 0);
}

TEST_CASE(
    "master: a second brine-master on the same config exits 2 naming the socket and brine.sock_dir",
    "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const auto pull_path = m.sock_dir() / "master_event_pull.ipc";
  const auto r =
      brine::test::Run({brine::test::Binary("brine-master").string(), "-c", m.conf_dir().string()},
                       std::chrono::seconds(20));
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find(pull_path.string()) != std::string::npos);
  REQUIRE(r.err.find("brine.sock_dir") != std::string::npos);
  // The first master still owns its bus.
  REQUIRE(Connectable(pull_path));
  PushFrames(m.pull_endpoint(), {NewFrame("still/first", Value::Map({{"n", 1}}))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events") == "still/first\n");
}

TEST_CASE("master: a live foreign listener on the pull socket path makes brine-master exit 2",
          "[master][e2e]") {
  MasterProcess m;
  std::filesystem::create_directories(m.sock_dir());
  std::filesystem::permissions(m.sock_dir(), std::filesystem::perms::owner_all);
  const auto pull_path = m.sock_dir() / "master_event_pull.ipc";
  const int listener = BindUnix(pull_path, true);
  const auto r =
      brine::test::Run({brine::test::Binary("brine-master").string(), "-c", m.conf_dir().string()},
                       std::chrono::seconds(20));
  const bool still_ours = Connectable(pull_path);
  ::close(listener);
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find(pull_path.string()) != std::string::npos);
  REQUIRE(r.err.find("brine.sock_dir") != std::string::npos);
  REQUIRE(still_ours);  // brine-master did not unlink it
}

TEST_CASE("master: a stale socket file is replaced and the master starts", "[master][e2e]") {
  MasterProcess m;
  std::filesystem::create_directories(m.sock_dir());
  std::filesystem::permissions(m.sock_dir(), std::filesystem::perms::owner_all);
  const auto pull_path = m.sock_dir() / "master_event_pull.ipc";
  {
    const mode_t old = ::umask(0);  // the stale file is 0777: its replacement must not be
    ::close(BindUnix(pull_path, false));
    ::umask(old);
  }
  REQUIRE(std::filesystem::is_socket(pull_path));
  REQUIRE(ModeOf(pull_path) == 0777);
  REQUIRE_FALSE(Connectable(pull_path));
  m.Start();
  REQUIRE(ModeOf(pull_path) == 0600);
  PushFrames(m.pull_endpoint(), {NewFrame("after/stale", Value::Map({{"n", 1}}))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events") == "after/stale\n");
}

// --- nothing lost --------------------------------------------------------------------

TEST_CASE("master: SIGTERM right after a sender's last frame stores every frame sent",
          "[master][e2e]") {
  MasterProcess m;
  m.Start();
  constexpr int kFrames = 20000;
  std::vector<std::string> frames;
  for (int i = 0; i < kFrames; ++i) {
    frames.push_back(NewFrame("burst/" + std::to_string(i),
                              Value::Map({{"i", i}, {"pad", std::string(200, 'p')}})));
  }
  {
    zmq::context_t ctx(1);
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 10000);
    push.set(zmq::sockopt::sndhwm, 0);
    push.connect(m.pull_endpoint());
    // Make sure the pipe is up, so the frames below go out at once.
    push.send(zmq::buffer(NewFrame("burst/first", Value::EmptyMap())), zmq::send_flags::none);
    REQUIRE(WaitReceived(m, 1));
    for (const auto& f : frames) push.send(zmq::buffer(f), zmq::send_flags::none);
    // The signal goes out while most frames are still on their way: send()
    // only queues them in this process; closing the context below flushes them.
    m.child()->Signal(SIGTERM);
  }
  REQUIRE(m.Stop() == 0);
  REQUIRE(
      Sql(m.database(),
          "SELECT count(*), count(DISTINCT tag) FROM salt_events WHERE tag GLOB 'burst/[0-9]*'") ==
      "20000|20000\n");
  REQUIRE(CounterInt(m, "received") == kFrames + 1);
  REQUIRE(CounterInt(m, "stored") == kFrames + 1);
}

TEST_CASE("master: many short-lived senders bursting at once lose nothing", "[master][e2e]") {
  // A small queue, so the reader stops reading and frames pile up in ZeroMQ:
  // each sender outruns the writer and leaves with its pipe full.
  MasterProcess m("brine.max_queue_mb: 1");
  m.Start();
  constexpr int kSenders = 50;
  constexpr int kEach = 2000;
  std::vector<JoiningThread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&m, s] {
      std::vector<std::string> frames;
      for (int i = 0; i < kEach; ++i) {
        frames.push_back(NewFrame("sender/" + std::to_string(s),
                                  Value::Map({{"i", i}, {"pad", std::string(200, 'p')}})));
      }
      PushFrames(m.pull_endpoint(), frames);  // own context and socket, closed on return
    });
  }
  for (auto& t : senders) t.Join();
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_events") ==
          std::to_string(kSenders * kEach) + "\n");
  REQUIRE(Sql(m.database(),
              "SELECT count(*) FROM (SELECT tag FROM salt_events GROUP BY tag HAVING count(*) = " +
                  std::to_string(kEach) + ")") == std::to_string(kSenders) + "\n");
  REQUIRE(CounterInt(m, "received") == kSenders * kEach);
}

TEST_CASE("master: a failed commit on a full file system is replayed with nothing lost",
          "[master][e2e]") {
  brine::test::TempDir outer;
  TmpfsMount fs(outer / "fs", "4m");
  if (!fs.mounted()) {
    WARN("skipped: the commit-failure test needs a tmpfs of its own (" << fs.why() << ")");
    SUCCEED();
    return;
  }
  const auto db = fs.path() / "brine.sqlite";
  MasterProcess m("brine.database: " + db.string());
  m.Start();
  int sent = 0;
  auto push_events = [&](int n) {
    std::vector<std::string> frames;
    for (int i = 0; i < n; ++i, ++sent) {
      frames.push_back(NewFrame("fill/" + std::to_string(sent),
                                Value::Map({{"i", sent}, {"pad", std::string(400, 'p')}})));
    }
    PushFrames(m.pull_endpoint(), frames);
  };
  auto counter = [&](const std::string& name) {
    return Sql(db, "SELECT value FROM brine_counters WHERE name = '" + name + "'");
  };
  push_events(100);
  REQUIRE(WaitUntil([&] { return counter("received") == "100\n"; }));

  // Fill the file system, then leave only a little room.
  const auto filler = fs.path() / "filler";
  {
    std::FILE* f = std::fopen(filler.c_str(), "wb");
    REQUIRE(f != nullptr);
    const std::string chunk(64 * 1024, '\0');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() && std::fflush(f) == 0) {
    }
    std::fclose(f);
    const auto size = std::filesystem::file_size(filler);
    REQUIRE(size > 128 * 1024);
    std::filesystem::resize_file(filler, size - 64 * 1024);
  }
  push_events(1500);  // ~700 KB of JSON: far more than the room left
  INFO(brine::test::ReadFile(m.log_file()));
  REQUIRE(WaitUntil([&] {
    return brine::test::ReadFile(m.log_file()).find("store write failed") != std::string::npos;
  }));
  std::filesystem::remove(filler);
  push_events(100);  // while the writer is still backing off
  // Stop waits for the replay: everything read is committed before exit.
  REQUIRE(m.Stop() == 0);

  REQUIRE(Sql(db, "SELECT count(*), count(DISTINCT tag) FROM salt_events") == "1700|1700\n");
  REQUIRE(Sql(db,
              "SELECT min(json_extract(data, '$.i')), max(json_extract(data, '$.i')) FROM "
              "salt_events") == "0|1699\n");
  REQUIRE(counter("received") == "1700\n");
  REQUIRE(counter("stored") == "1700\n");
  // The failure is logged once, not once per retry.
  const std::string log = brine::test::ReadFile(m.log_file());
  REQUIRE(CountOf(log, "store write failed") == 1);
}

// --- retention, config ---------------------------------------------------------------

TEST_CASE("master: retention deletes what is old and nothing else", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 3600\nbrine.keep_events_seconds: 3600");
  // The master file already sets loop_interval; master.d overrides it, as in Salt.
  std::filesystem::create_directories(m.conf_dir() / "master.d");
  std::ofstream(m.conf_dir() / "master.d" / "retention.conf") << "loop_interval: 1\n";
  const auto now = Now();
  const auto two_days_ago = now - std::chrono::hours(48);
  const auto half_hour_ago = now - std::chrono::minutes(30);
  const std::string seeded_old = JidAt(two_days_ago);
  const std::string seeded_recent = JidAt(half_hour_ago);
  const std::string pushed_old = JidAt(two_days_ago + std::chrono::seconds(1));
  const std::string pushed_new = JidAt(now);

  // Seed the store as it would look after running for two days: an old job and
  // a recent one, and events and quarantined frames that arrived then.
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(two_days_ago);
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    store->SaveLoad(seeded_old, PublishLoad(seeded_old, "test.ping", {}, StampAt(two_days_ago)),
                    std::vector<std::string>{"m1"});
    (void)store->Returner(ReturnLoad(seeded_old, "m1", "test.ping", true, StampAt(two_days_ago)));
    store->Quarantine("old frame", "seeded", two_days_ago);
    brine::store::Event old_event{
        .tag = "seeded/old", .data = Value::Map({{"n", 1}}), .received = two_days_ago};
    store->EventReturn(std::span<const brine::store::Event>(&old_event, 1));
    then.Set(half_hour_ago);
    store->SaveLoad(seeded_recent,
                    PublishLoad(seeded_recent, "test.ping", {}, StampAt(half_hour_ago)),
                    std::vector<std::string>{"m1"});
    (void)store->Returner(
        ReturnLoad(seeded_recent, "m1", "test.ping", true, StampAt(half_hour_ago)));
    store->Quarantine("recent frame", "seeded", half_hour_ago);
    brine::store::Event recent_event{
        .tag = "seeded/recent", .data = Value::Map({{"n", 2}}), .received = half_hour_ago};
    store->EventReturn(std::span<const brine::store::Event>(&recent_event, 1));
  }
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM jids") == "2\n");

  m.Start();
  // Jobs age by jid time: these two arrive now, one with a two-day-old jid.
  const Value old_ret = ReturnLoad(pushed_old, "m2", "test.ping", true, StampAt(now));
  PushFrames(m.pull_endpoint(),
             {NewFrame("salt/job/" + pushed_old + "/new",
                       PublishLoad(pushed_old, "test.ping", {"m2"}, StampAt(now))),
              NewFrame("salt/job/" + pushed_old + "/ret/m2", old_ret),
              NewFrame("salt/job/" + pushed_new + "/new",
                       PublishLoad(pushed_new, "test.ping", {"m2"}, StampAt(now))),
              NewFrame("salt/job/" + pushed_new + "/ret/m2",
                       ReturnLoad(pushed_new, "m2", "test.ping", true, StampAt(now))),
              NewFrame("live/event", Value::Map({{"n", 3}}))});
  REQUIRE(WaitReceived(m, 5));
  // A pass after the pushes (loop_interval 1) takes the pushed old job too.
  REQUIRE(WaitUntil([&] {
    return Sql(m.database(), "SELECT count(*) FROM job WHERE jid IN ('" + seeded_old + "', '" +
                                 pushed_old + "')") == "0\n";
  }));
  REQUIRE(m.Stop() == 0);

  // Old jobs gone with their loads, expected minions and returns.
  REQUIRE(Sql(m.database(), "SELECT jid FROM jids ORDER BY jid") ==
          seeded_recent + "\n" + pushed_new + "\n");
  REQUIRE(Sql(m.database(), "SELECT jid, id FROM salt_returns ORDER BY jid") ==
          seeded_recent + "|m1\n" + pushed_new + "|m2\n");
  REQUIRE(Sql(m.database(), "SELECT jid, minion FROM jid_minions ORDER BY jid") ==
          seeded_recent + "|m1\n" + pushed_new + "|m2\n");
  // Events and quarantined frames age by arrival: only the two-day-old ones go.
  REQUIRE(Sql(m.database(), "SELECT raw FROM quarantine") == "recent frame\n");
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events ORDER BY id") ==
          "seeded/recent\n"
          "salt/job/" +
              pushed_old +
              "/new\n"
              "salt/job/" +
              pushed_old +
              "/ret/m2\n"
              "salt/job/" +
              pushed_new +
              "/new\n"
              "salt/job/" +
              pushed_new +
              "/ret/m2\n"
              "live/event\n");
  // The events of the deleted job keep their payload.
  REQUIRE(Sql(m.database(), "SELECT data FROM salt_events WHERE tag = 'salt/job/" + pushed_old +
                                "/ret/m2'") == ToJson(old_ret) + "\n");
  // Each run that removes something is one line at info with its counts; the
  // first took half, not more. The first pass may run before or after the
  // pushed old job is committed, so the lines are summed.
  const std::string log = brine::test::ReadFile(m.log_file());
  const std::regex line(R"(\[INFO\] retention removed (\d+) jobs, (\d+) returns, (\d+) events, (\d+) quarantined frames\n)");
  std::array<long, 4> removed{};
  int lines = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it, ++lines) {
    for (std::size_t i = 0; i < removed.size(); ++i) removed[i] += std::stol((*it)[i + 1].str());
  }
  CHECK(lines >= 1);
  CHECK(removed == std::array<long, 4>{2, 2, 1, 1});
  CHECK(log.find("more than half") == std::string::npos);
}

TEST_CASE("master: a first retention run that deletes more than half the store is a warning", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 3600");
  const auto now = Now();
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    auto store = brine::store::OpenStore(m.database(), opts);
    for (const auto& t : {now - std::chrono::hours(48), now - std::chrono::hours(47), now}) {
      const std::string jid = JidAt(t);
      store->SaveLoad(jid, PublishLoad(jid, "test.ping", {}, StampAt(t)), std::vector<std::string>{"m1"});
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return Sql(m.database(), "SELECT count(*) FROM job") == "1\n"; }));
  REQUIRE(m.Stop() == 0);
  CHECK(brine::test::ReadFile(m.log_file()).find("[WARNING] retention removed 2 jobs, 0 returns, 0 events, 0 "
                                                 "quarantined frames: more than half of the 3 jobs and 0 events the "
                                                 "store held at start") != std::string::npos);
}

TEST_CASE("master: retention by class keeps each function's jobs and each tag's events for their own time",
          "[master][e2e]") {
  MasterProcess m(
      "keep_jobs_seconds: 86400\n"
      "brine.keep_jobs_by_fun: {saltutil.find_job: 3600, 'state.*': 7776000}\n"
      "brine.keep_events_by_tag: {'salt/auth': 60, 'salt/job/*': 0}");
  const auto now = Now();
  const auto hours_ago = [&](int h) { return now - std::chrono::hours(h); };
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(hours_ago(48));
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    // Two hours old: find_job goes (an hour), test.ping stays (a day).
    // Two days old: state.apply stays (90 days), test.ping goes.
    for (const auto& [h, fun] : std::vector<std::pair<int, std::string>>{
             {2, "saltutil.find_job"}, {2, "test.ping"}, {48, "state.apply"}, {48, "test.ping"}}) {
      const std::string jid = JidAt(hours_ago(h) + std::chrono::microseconds(fun.size()));
      store->SaveLoad(jid, PublishLoad(jid, fun, {}, StampAt(hours_ago(h))), std::vector<std::string>{"m1"});
    }
    // Two days old: auth goes, job events stay (0: forever), others go.
    for (const std::string tag : {"salt/auth", "salt/job/20240101000000000000/prog/m1/0", "minion_start"}) {
      brine::store::Event e{.tag = tag, .data = Value::Map({{"n", 1}}), .received = hours_ago(48)};
      store->EventReturn(std::span<const brine::store::Event>(&e, 1));
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(m.log_file()).find("retention removed") != std::string::npos; }));
  REQUIRE(m.Stop() == 0);
  CHECK(Sql(m.database(), "SELECT json_extract(load, '$.fun') FROM job ORDER BY jid") == "state.apply\ntest.ping\n");
  CHECK(Sql(m.database(), "SELECT tag FROM salt_events") == "salt/job/20240101000000000000/prog/m1/0\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  INFO(log);
  // The third job is the prog event's jid, seen with no load: the default day.
  CHECK(log.find("retention removed 3 jobs, 0 returns, 2 events") != std::string::npos);
}

TEST_CASE("master: over brine.max_store_mb it prunes the oldest first and logs what it pruned", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 0\nbrine.max_store_mb: 1");
  const auto now = Now();
  const std::string payload(100000, 'x');
  std::vector<std::string> jids;
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(now);
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    // 3 MB in 30 jobs, an hour apart, oldest first.
    for (int h = 30; h > 0; --h) {
      const std::string jid = JidAt(now - std::chrono::hours(h));
      jids.push_back(jid);
      then.Set(now - std::chrono::hours(h));
      store->SaveLoad(jid, PublishLoad(jid, "test.ping", {}, StampAt(now)), std::vector<std::string>{"m1"});
      (void)store->Returner(ReturnLoad(jid, "m1", "test.ping", payload, StampAt(now)));
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(m.log_file()).find("brine.max_store_mb") != std::string::npos; }));
  REQUIRE(m.Stop() == 0);
  // About 20 of the 30 went, the oldest: what is left is the newest, in one run.
  const std::int64_t left = std::stoll(Sql(m.database(), "SELECT count(*) FROM job"));
  CHECK(left >= 5);
  CHECK(left <= 10);
  CHECK(Sql(m.database(), "SELECT min(jid) FROM job") == jids[jids.size() - static_cast<std::size_t>(left)] + "\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  CHECK(log.find("over the cap of 1.0 MiB; pruned the oldest " + std::to_string(30 - left) + " jobs, " +
                 std::to_string(30 - left) + " returns, 0 events") != std::string::npos);
}

TEST_CASE("master: a bad config value stops it at start with exit 2 naming the file and the key",
          "[master][e2e]") {
  MasterProcess m("brine.batch_max_events: lots");
  const auto r =
      brine::test::Run({brine::test::Binary("brine-master").string(), "-c", m.conf_dir().string()},
                       std::chrono::seconds(20));
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find("brine.batch_max_events") != std::string::npos);
  REQUIRE(r.err.find((m.conf_dir() / "master").string()) != std::string::npos);
  REQUIRE_FALSE(std::filesystem::exists(m.sock_dir() / "master_event_pull.ipc"));
}

TEST_CASE("master: a YAML syntax error stops it at start with exit 2 naming the file",
          "[master][e2e]") {
  MasterProcess m("broken: [unclosed");
  const auto r =
      brine::test::Run({brine::test::Binary("brine-master").string(), "-c", m.conf_dir().string()},
                       std::chrono::seconds(20));
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find((m.conf_dir() / "master").string()) != std::string::npos);
  REQUIRE_FALSE(std::filesystem::exists(m.sock_dir() / "master_event_pull.ipc"));
}

TEST_CASE("master: with job_cache False loads and minions are stored and returns are not", "[master][e2e]") {
  MasterProcess m("job_cache: False");
  m.Start();
  const std::string jid = JidAt(Now());
  PushFrames(m.pull_endpoint(), {NewFrame("salt/job/" + jid + "/new", PublishLoad(jid, "test.ping", {"m1", "m2"}, StampAt(Now()))),
                                 NewFrame("salt/job/" + jid + "/ret/m1", ReturnLoad(jid, "m1", "test.ping", true, StampAt(Now())))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT jid, fun FROM jids") == jid + "|test.ping\n");
  REQUIRE(Sql(m.database(), "SELECT minion FROM jid_minions ORDER BY minion") == "m1\nm2\n");
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns") == "0\n");
  // The archive is governed by the filters only: both events are there.
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_events") == "2\n");
  REQUIRE(Sql(m.database(), "SELECT data FROM salt_events WHERE tag LIKE '%/ret/m1'") ==
          ToJson(ReturnLoad(jid, "m1", "test.ping", true, ParseJson(Sql(m.database(), "SELECT json_quote(json_extract(data, '$._stamp')) FROM salt_events WHERE tag LIKE '%/ret/m1'")).as_string())) + "\n");
  REQUIRE(brine::test::ReadFile(m.log_file()).find("job_cache is False") != std::string::npos);
}

TEST_CASE("master: events carrying Salt's VALUE_TRIMMED marker are stored and counted", "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const std::string jid = JidAt(Now());
  PushFrames(m.pull_endpoint(), {NewFrame("salt/job/" + jid + "/ret/m1",
                                          ReturnLoad(jid, "m1", "cmd.run", "VALUE_TRIMMED", StampAt(Now()))),
                                 NewFrame("salt/auth", Value::Map({{"id", "m1"}, {"act", "accept"}}))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(Counter(m, "trimmed") == "1\n");
  REQUIRE(Counter(m, "stored") == "2\n");
  REQUIRE(Sql(m.database(), "SELECT \"return\" FROM salt_returns") == "\"VALUE_TRIMMED\"\n");
}

TEST_CASE("master: started as root it creates its files as the config's user and runs as that user",
          "[master][e2e]") {
  if (::geteuid() != 0) {
    WARN("not root: the switch to the config's user cannot be tested here");
    return;
  }
  MasterProcess m("user: nobody");
  // mkdtemp made the test folder 0700 root; the user must be able to reach into it.
  ::chmod(m.dir().c_str(), 0755);
  m.Start();
  PushFrames(m.pull_endpoint(), {NewFrame("salt/auth", Value::Map({{"id", "m1"}}))});
  struct stat st {};
  REQUIRE(::stat(m.database().c_str(), &st) == 0);
  const uid_t nobody = st.st_uid;
  REQUIRE(nobody != 0);
  REQUIRE(::stat((m.sock_dir() / "master_event_pull.ipc").c_str(), &st) == 0);
  REQUIRE(st.st_uid == nobody);
  REQUIRE(::stat(m.log_file().c_str(), &st) == 0);
  REQUIRE(st.st_uid == nobody);
  // The process itself runs as that user.
  const std::string status = brine::test::ReadFile("/proc/" + std::to_string(m.child()->pid()) + "/status");
  REQUIRE(status.find("\nUid:\t" + std::to_string(nobody) + "\t") != std::string::npos);
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_events") == "1\n");
}

TEST_CASE("master: SIGHUP reopens the log file after it was moved away", "[master][e2e]") {
  MasterProcess m;
  m.Start();
  const auto moved = m.log_file().string() + ".1";
  std::filesystem::rename(m.log_file(), moved);
  m.child()->Signal(SIGHUP);
  // The reopen creates a new file at the old path; a line logged after it lands there.
  for (int i = 0; i < 500 && !std::filesystem::exists(m.log_file()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(std::filesystem::exists(m.log_file()));
  // A conflicting second return is logged (Salt's replay warning) every time.
  const std::string jid = JidAt(Now());
  PushFrames(m.pull_endpoint(), {NewFrame("salt/job/" + jid + "/ret/m1", ReturnLoad(jid, "m1", "cmd.run", "one", StampAt(Now()))),
                                 NewFrame("salt/job/" + jid + "/ret/m1", ReturnLoad(jid, "m1", "cmd.run", "two", StampAt(Now())))});
  REQUIRE(m.Stop() == 0);
  REQUIRE(brine::test::ReadFile(m.log_file()).find("replay attack") != std::string::npos);
  REQUIRE(brine::test::ReadFile(moved).find("started:") != std::string::npos);
}

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

// --- several masters, one PostgreSQL database (issue 16) ---------------------

namespace {

// brine-run's stdout for `args` against the config in `conf_dir`.
std::string RunnerOut(const std::filesystem::path& conf_dir, std::vector<std::string> args) {
  std::vector<std::string> argv{brine::test::Binary("brine-run").string(), "-c", conf_dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = brine::test::Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("master: two brine-masters on one PostgreSQL database answer brine-run alike, and as SQLite does",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  auto& server = brine::test::PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  const std::string database = "brine.database: '" + uri + "'\n";
  MasterProcess a(database);
  MasterProcess b(database);
  // A second id for the second master (`id` is in the generated master file).
  std::filesystem::create_directories(b.conf_dir() / "master.d");
  std::ofstream(b.conf_dir() / "master.d" / "id.conf") << "id: second_master\n";
  MasterProcess sqlite;
  a.Start();
  b.Start();
  sqlite.Start();
  // Hot multi-master: every event reaches both masters.
  const auto frames = Frames2014(Fixture2014());
  PushFrames(a.pull_endpoint(), frames);
  PushFrames(b.pull_endpoint(), frames);
  PushFrames(sqlite.pull_endpoint(), frames);
  REQUIRE(a.Stop() == 0);
  REQUIRE(b.Stop() == 0);
  REQUIRE(sqlite.Stop() == 0);

  // Each return is stored once; each master archived its own bus.
  REQUIRE(server.Query(uri, "SELECT count(*) FROM salt_returns") == "3\n");
  REQUIRE(server.Query(uri, "SELECT master_id, count(*) FROM salt_events GROUP BY master_id ORDER BY 1") ==
          "second_master|15\ntest_master|15\n");
  REQUIRE(server.Query(uri, "SELECT jid, fun, load_source FROM jids ORDER BY jid") ==
          "20140417135823133764|test.ping|publish\n"
          "20140417141834578593|cmd.run|publish\n"
          "20140417141839587706|saltutil.find_job|publish\n");

  for (const std::vector<std::string>& call :
       {std::vector<std::string>{"jobs.list_jobs", "--out", "json"},
        std::vector<std::string>{"jobs.list_jobs"},
        std::vector<std::string>{"jobs.lookup_jid", "20140417141834578593"},
        std::vector<std::string>{"jobs.lookup_jid", "20140417141834578593", "--out", "json"},
        std::vector<std::string>{"jobs.list_job", "20140417135823133764"},
        std::vector<std::string>{"jobs.list_job", "20140417141834578593", "--out", "yaml"}}) {
    INFO(call[0]);
    const std::string from_sqlite = RunnerOut(sqlite.conf_dir(), call);
    REQUIRE_FALSE(from_sqlite.empty());
    REQUIRE(RunnerOut(a.conf_dir(), call) == from_sqlite);
    REQUIRE(RunnerOut(b.conf_dir(), call) == from_sqlite);
  }
}

TEST_CASE("master: a brine-sim fleet through two brine-masters on one PostgreSQL database is stored once, as SQLite "
          "stores it",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  // The fleet's events once, as frames (a fixed seed and clock give the same
  // bytes every run), then the same frames to every master: hot multi-master.
  brine::test::TempDir scratch;
  const std::filesystem::path dump = scratch / "fleet.frames";
  const auto sim = brine::test::Run({brine::test::Binary("brine-sim").string(), "--minions", "30", "--jobs", "20",
                                     "--seed", "7", "--clock", "2024-03-01T00:00:00", "--dry-run", dump.string(),
                                     "--dry-run-format", "frames"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  std::vector<std::string> frames;
  {
    const std::string bytes = brine::test::ReadFile(dump);
    for (std::size_t at = 0; at + 4 <= bytes.size();) {
      std::size_t n = 0;
      for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(bytes[at + i]);
      REQUIRE(at + 4 + n <= bytes.size());
      frames.push_back(bytes.substr(at + 4, n));
      at += 4 + n;
    }
  }
  REQUIRE(frames.size() > 100);

  auto& server = brine::test::PostgresServer::Shared();
  const std::string uri = server.CreateDatabase();
  // Keep everything: the fleet's clock is in 2024.
  const std::string keep = "keep_jobs_seconds: 0\nbrine.keep_events_seconds: 0\n";
  MasterProcess a(keep + "brine.database: '" + uri + "'\n");
  MasterProcess b(keep + "brine.database: '" + uri + "'\n");
  std::filesystem::create_directories(b.conf_dir() / "master.d");
  std::ofstream(b.conf_dir() / "master.d" / "id.conf") << "id: second_master\n";
  MasterProcess sqlite(keep);
  a.Start();
  b.Start();
  sqlite.Start();
  // A runner job runs on one master: its salt/run/ events are on that bus only.
  std::vector<std::string> minion_frames;
  for (const std::string& f : frames) {
    if (f.rfind("salt/run/", 0) != 0) minion_frames.push_back(f);
  }
  REQUIRE(minion_frames.size() < frames.size());
  JoiningThread to_b([&] { PushFrames(b.pull_endpoint(), minion_frames); });
  PushFrames(a.pull_endpoint(), frames);
  to_b.Join();
  PushFrames(sqlite.pull_endpoint(), frames);
  REQUIRE(a.Stop() == 0);
  REQUIRE(b.Stop() == 0);
  REQUIRE(sqlite.Stop() == 0);

  // Every return once in the shared store, the same ones SQLite holds; each
  // master archived its bus under its own id.
  const std::string returns = Sql(sqlite.database(), "SELECT jid || ' ' || id FROM salt_returns ORDER BY jid, id");
  REQUIRE(returns.size() > 100);
  REQUIRE(server.Query(uri, "SELECT jid || ' ' || id FROM salt_returns ORDER BY jid, id") == returns);
  const std::string events = Sql(sqlite.database(), "SELECT count(*) FROM salt_events");
  const std::string minion_events =
      Sql(sqlite.database(), "SELECT count(*) FROM salt_events WHERE tag NOT LIKE 'salt/run/%'");
  REQUIRE(server.Query(uri, "SELECT master_id, count(*) FROM salt_events GROUP BY master_id ORDER BY 1") ==
          "second_master|" + minion_events + "test_master|" + events);

  const std::string first_jid = Sql(sqlite.database(), "SELECT jid FROM jids ORDER BY jid LIMIT 1");
  const std::string state_jid =
      Sql(sqlite.database(), "SELECT jid FROM jids WHERE fun = 'state.apply' ORDER BY jid LIMIT 1");
  REQUIRE_FALSE(state_jid.empty());
  for (const std::vector<std::string>& call :
       {std::vector<std::string>{"jobs.list_jobs", "--out", "json"},
        std::vector<std::string>{"jobs.lookup_jid", first_jid.substr(0, first_jid.size() - 1), "--out", "json"},
        std::vector<std::string>{"jobs.lookup_jid", state_jid.substr(0, state_jid.size() - 1)},
        std::vector<std::string>{"jobs.list_job", state_jid.substr(0, state_jid.size() - 1), "--out", "json"}}) {
    INFO(call[0] << " " << (call.size() > 1 ? call[1] : ""));
    const std::string from_sqlite = RunnerOut(sqlite.conf_dir(), call);
    REQUIRE_FALSE(from_sqlite.empty());
    REQUIRE(RunnerOut(a.conf_dir(), call) == from_sqlite);
    REQUIRE(RunnerOut(b.conf_dir(), call) == from_sqlite);
  }
}

TEST_CASE("master: PostgreSQL killed mid-ingest and started again loses nothing, and brine-master recovers by itself",
          "[master][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  brine::test::PostgresServer server;  // its own: this test kills it
  const std::string uri = server.CreateDatabase();
  MasterProcess m("brine.database: '" + uri + "'\n");
  m.Start();
  int sent = 0;
  auto push = [&](int n) {
    std::vector<std::string> frames;
    for (int i = 0; i < n; ++i, ++sent) {
      frames.push_back(brine::wire::EncodeFrame("test/outage/" + std::to_string(sent),
                                                Value::Map({{"n", sent}}), brine::wire::Framing::kNew));
    }
    PushFrames(m.pull_endpoint(), frames);
  };
  auto archived = [&] {
    try {
      return std::stoi(server.Query(uri, "SELECT count(*) FROM salt_events WHERE tag LIKE 'test/outage/%'"));
    } catch (const std::exception&) {
      return -1;
    }
  };
  push(500);
  REQUIRE(WaitUntil([&] { return archived() == 500; }));
  server.Kill();
  push(500);  // arrives while the database is gone: the writer keeps the batch
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server.Start();
  push(500);
  const bool all = WaitUntil([&] { return archived() == sent; }, std::chrono::seconds(60));
  INFO("archived " << archived() << " of " << sent << "; log:\n" << brine::test::ReadFile(m.log_file())
                    << "\nstdout and stderr:\n" << brine::test::ReadFile(m.dir() / "master.out"));
  REQUIRE(all);
  REQUIRE(m.child()->Running());
  REQUIRE(m.Stop() == 0);
  // Every event exactly once.
  REQUIRE(server.Query(uri, "SELECT count(DISTINCT tag) FROM salt_events WHERE tag LIKE 'test/outage/%'") ==
          std::to_string(sent) + "\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  REQUIRE(log.find("store writable again") != std::string::npos);
}

// --- the Salt plug-in's acknowledged socket (cache_socket.h) -------------------

namespace {

struct AckReply {
  std::uint64_t id = 0;
  int status = -1;
  std::string reason;
};

std::string AckHeader(std::uint64_t id, std::int64_t sent_us) {
  std::string h = "BRQ1";
  for (int i = 7; i >= 0; --i) h.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  for (int i = 7; i >= 0; --i) h.push_back(static_cast<char>((static_cast<std::uint64_t>(sent_us) >> (8 * i)) & 0xff));
  return h;
}

std::int64_t NowUs() { return brine::ToUnixMicros(brine::SystemClock().Now()); }

// A connection to brine-master's acknowledged socket, speaking its grammar
// (cache_socket.h) as the Salt plug-in does.
class AckClient {
 public:
  explicit AckClient(const std::filesystem::path& socket_path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = socket_path.string();
    REQUIRE(p.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    SetTimeout();
  }
  // To 127.0.0.1:port (ipc_mode: tcp).
  explicit AckClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    SetTimeout();
  }
  ~AckClient() { ::close(fd_); }
  AckClient(const AckClient&) = delete;
  AckClient& operator=(const AckClient&) = delete;

  // Sends one request: `body` as is, after its length.
  void SendBody(const std::string& body) { SendRaw(U32(body.size()) + body); }
  void SendRaw(const std::string& bytes) { REQUIRE(TrySendRaw(bytes)); }
  bool TrySendRaw(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
  static std::string Message(const std::string& header, const std::vector<std::string>& frames) {
    std::string body = header;
    for (const std::string& f : frames) body += U32(f.size()) + f;
    return U32(body.size()) + body;
  }
  void Send(const std::string& header, const std::vector<std::string>& frames) { SendRaw(Message(header, frames)); }
  // The next reply, or status -1 when none came within 10 s or the connection closed.
  AckReply Receive() {
    AckReply r;
    std::string length;
    if (!ReadExact(4, length)) return r;
    std::size_t n = 0;
    for (const char c : length) n = (n << 8) | static_cast<unsigned char>(c);
    std::string head;
    if (!ReadExact(n, head)) return r;
    REQUIRE(head.size() >= 13);
    REQUIRE(head.substr(0, 4) == "BRA1");
    for (int i = 0; i < 8; ++i) r.id = (r.id << 8) | static_cast<unsigned char>(head[4 + i]);
    r.status = static_cast<unsigned char>(head[12]);
    r.reason = head.substr(13);
    return r;
  }
  AckReply RequestReply(const std::string& header, const std::vector<std::string>& frames) {
    Send(header, frames);
    return Receive();
  }

 private:
  void SetTimeout() {
    const timeval ten_seconds{.tv_sec = 10, .tv_usec = 0};
    (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof ten_seconds);
  }
  static std::string U32(std::size_t v) {
    std::string out;
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return out;
  }
  bool ReadExact(std::size_t n, std::string& out) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
      const ssize_t k = ::recv(fd_, out.data() + got, n - got, 0);
      if (k <= 0) return false;
      got += static_cast<std::size_t>(k);
    }
    return true;
  }
  int fd_;
};

std::string CacheFrame(const std::string& op, const Value& data) { return NewFrame("brine/cache/" + op, data); }

}  // namespace

TEST_CASE("master: an acknowledged request is answered only once its frames are committed", "[master][e2e]") {
  MasterProcess m("brine.flush_interval_ms: 60000\n");  // group commit must not wait for it
  m.Start();
  AckClient client(m.sock_dir() / "brine_cache.ipc");
  const std::string jid = JidAt(Now());  // within keep_jobs, whatever the day
  const Value load = Value::Map({{"cmd", "publish"}, {"jid", jid}, {"fun", "test.ping"}, {"tgt", "*"},
                                 {"arg", Value::EmptyList()}, {"tgt_type", "glob"}, {"user", "root"}});
  const Value ret = Value::Map({{"cmd", "_return"}, {"id", "web1"}, {"jid", jid}, {"fun", "test.ping"},
                                {"return", true}, {"retcode", 0}, {"success", true}});
  for (std::uint64_t id = 1; id <= 20; ++id) {
    const std::string j = jid.substr(0, 14) + std::string(6 - std::to_string(id).size(), '0') + std::to_string(id);
    Value l = load, r = ret;
    l.Set("jid", j);
    r.Set("jid", j);
    const AckReply reply =
        client.RequestReply(AckHeader(id, NowUs()),
                        {CacheFrame("save_load", Value::Map({{"jid", j}, {"load", l}, {"minions", Value::List({"web1"})}})),
                         CacheFrame("return", r), NewFrame("salt/job/" + j + "/ret/web1", r)});
    REQUIRE(reply.status == 0);
    REQUIRE(reply.id == id);
    // Visible to another connection the moment the reply arrived.
    REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns WHERE jid = '" + j + "'") == "1\n");
    REQUIRE(Sql(m.database(), "SELECT json_extract(load, '$.cmd') FROM jids WHERE jid = '" + j + "'") == "publish\n");
  }
  REQUIRE(CounterInt(m, "acked") == 20);
  REQUIRE(CounterInt(m, "acked_refused") == 0);
  REQUIRE(CounterInt(m, "cache_writes") == 40);
  REQUIRE(CounterInt(m, "stored") == 20);
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("master: a stale or malformed acknowledged request is answered not taken and never filed",
          "[master][e2e]") {
  MasterProcess m("brine.send_timeout_ms: 1000\n");
  m.Start();
  AckClient client(m.sock_dir() / "brine_cache.ipc");
  const Value ret = Value::Map({{"cmd", "_return"}, {"id", "web1"}, {"jid", JidAt(Now())},
                                {"fun", "test.ping"}, {"return", true}});
  // Sent 600 ms ago: past half of the 1,000 ms timeout, so its caller is about to spool it.
  AckReply stale = client.RequestReply(AckHeader(7, NowUs() - 600000), {CacheFrame("return", ret)});
  REQUIRE(stale.status == 1);
  REQUIRE(stale.id == 7);
  REQUIRE(stale.reason.find("brine.send_timeout_ms") != std::string::npos);
  // A header cut short, and a frame whose length runs past the request.
  client.SendBody(AckHeader(8, NowUs()).substr(0, 12));
  AckReply short_header = client.Receive();
  REQUIRE(short_header.status == 1);
  REQUIRE(short_header.id == 8);
  const std::string frame = CacheFrame("return", ret);
  client.SendBody(AckHeader(9, NowUs()) + std::string("\0\0\xff\xff", 4) + frame);
  AckReply overrun = client.Receive();
  REQUIRE(overrun.status == 1);
  REQUIRE(overrun.id == 9);
  REQUIRE(overrun.reason.find("frame length") != std::string::npos);
  AckReply ping = client.RequestReply(AckHeader(10, NowUs()), {});
  REQUIRE(ping.status == 0);
  REQUIRE(ping.id == 10);
  // A length over the request bound closes the connection unread: no reply.
  {
    AckClient oversize(m.sock_dir() / "brine_cache.ipc");
    oversize.SendRaw(std::string("\x7f\xff\xff\xff", 4) + AckHeader(12, NowUs()));  // a 2 GiB request begins
    REQUIRE(oversize.Receive().status == -1);
  }
  // The first connection still works.
  REQUIRE(client.RequestReply(AckHeader(11, NowUs()), {}).status == 0);
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns") == "0\n");
}

// With ipc_mode tcp, acknowledged writes on 127.0.0.1 after the key handshake:
// tests/hardening2_socket_test.cpp.

TEST_CASE("master: unfinished requests past their byte budget close the connection holding the most",
          "[master][e2e]") {
  // Requests of up to 64 KiB + 1 MiB; unfinished ones may hold max(1 MiB, 2 x that) = 2.125 MiB.
  MasterProcess m("brine.max_frame_bytes: 65536\nbrine.max_queue_mb: 1\n");
  m.Start();
  std::vector<std::unique_ptr<AckClient>> clients;
  std::vector<std::string> messages;
  for (std::uint64_t i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<AckClient>(m.sock_dir() / "brine_cache.ipc"));
    messages.push_back(AckClient::Message(
        AckHeader(i + 1, NowUs()), {NewFrame("big/event", Value::Map({{"s", std::string(1000000, 'x')}}))}));
    // 0.9 MB of each: the third passes the budget.
    clients.back()->SendRaw(messages.back().substr(0, 900000));
  }
  int answered = 0, closed = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const bool sent = clients[i]->TrySendRaw(messages[i].substr(900000));
    const AckReply r = clients[i]->Receive();
    if (r.status == 0) {
      REQUIRE(sent);
      REQUIRE(r.id == i + 1);
      ++answered;
    } else {
      REQUIRE(r.status == -1);
      ++closed;
    }
  }
  REQUIRE(closed == 1);
  REQUIRE(answered == 2);
  // Each whole one is filed (its frame over max_frame_bytes as a bounded quarantine row).
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM quarantine") == "2\n");
}

TEST_CASE("master: replies go back on the connection that asked, and a caller that leaves early harms no one",
          "[master][e2e]") {
  MasterProcess m("brine.flush_interval_ms: 60000\n");
  m.Start();
  const std::string prefix = JidAt(Now()).substr(0, 14);
  const std::string jid1 = prefix + "000001", jid2 = prefix + "000002";
  auto ret = [](const std::string& jid, const std::string& minion) {
    return CacheFrame("return", Value::Map({{"cmd", "_return"}, {"id", minion}, {"jid", jid}, {"fun", "test.ping"},
                                            {"return", true}, {"retcode", 0}, {"success", true}}));
  };
  {
    // Sends and leaves without reading: its return is still filed.
    AckClient gone(m.sock_dir() / "brine_cache.ipc");
    gone.Send(AckHeader(1, NowUs()), {ret(jid1, "gone")});
  }
  AckClient a(m.sock_dir() / "brine_cache.ipc");
  AckClient b(m.sock_dir() / "brine_cache.ipc");
  // Two requests in a row on each connection, before reading any answer.
  a.Send(AckHeader(100, NowUs()), {ret(jid2, "a1")});
  b.Send(AckHeader(200, NowUs()), {ret(jid2, "b1")});
  a.Send(AckHeader(101, NowUs()), {ret(jid2, "a2")});
  b.Send(AckHeader(201, NowUs()), {ret(jid2, "b2")});
  std::vector<std::uint64_t> on_a{a.Receive().id, a.Receive().id};
  std::vector<std::uint64_t> on_b{b.Receive().id, b.Receive().id};
  REQUIRE(on_a == std::vector<std::uint64_t>{100, 101});
  REQUIRE(on_b == std::vector<std::uint64_t>{200, 201});
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM salt_returns WHERE jid = '" + jid2 + "'") == "4\n");
  REQUIRE(m.Stop() == 0);
  REQUIRE(Sql(m.database(), "SELECT id FROM salt_returns WHERE jid = '" + jid1 + "'") == "gone\n");
}

TEST_CASE("master: acknowledged requests are popped ahead of bus frames, and the lane refuses past its budget",
          "[master]") {
  using brine::master::AckRequest;
  using brine::master::Frame;
  using brine::master::FrameQueue;
  FrameQueue q(100);
  REQUIRE(q.Push(Frame{.bytes = std::string(60, 'b')}));
  REQUIRE(q.HasRoom());
  REQUIRE_FALSE(q.Push(Frame{.bytes = std::string(60, 'c')}));  // taken, one frame over; no more room
  REQUIRE_FALSE(q.HasRoom());
  REQUIRE(q.depth_frames() == 2);
  AckRequest first;
  first.token = 1;
  first.frames.push_back(Frame{.bytes = std::string(80, 'a')});
  REQUIRE(q.PushAcked(std::move(first)));
  AckRequest second;
  second.token = 2;
  second.frames.push_back(Frame{.bytes = std::string(30, 'a')});
  REQUIRE_FALSE(q.PushAcked(std::move(second)));  // 80 + 30 > 100
  std::vector<Frame> bus;
  std::vector<AckRequest> acked;
  REQUIRE(q.PopUpTo(10, std::chrono::steady_clock::now(), bus, acked) == 1);
  REQUIRE(bus.empty());
  REQUIRE(acked.size() == 1);
  REQUIRE(acked[0].token == 1);
  acked.clear();
  REQUIRE(q.PopUpTo(10, std::chrono::steady_clock::now(), bus, acked) == 2);
  REQUIRE(bus.size() == 2);
  REQUIRE(q.HasRoom());
  q.Close();
  AckRequest late;
  late.token = 3;
  REQUIRE_FALSE(q.PushAcked(std::move(late)));
  REQUIRE(q.ClosedAndEmpty());
}

// --- the overflow file behind the bus lane (issue 14, item 8) ---------------------------

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

}  // namespace

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

// --- frames prepared on the reader thread (issue 15, round 7) ---------------------------

namespace {

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
