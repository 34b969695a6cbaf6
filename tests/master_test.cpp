// brine-master end to end, what it stores: the real binary on a temp config
// folder, real ZeroMQ sockets, a real store file; framings, returns, runner
// jobs, bad frames, filters. The other master_*_test.cpp files hold its
// process life, retention, PostgreSQL, acknowledged requests and overflow.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <sstream>
#include <zmq.hpp>

#include "brine/core/json.h"
#include "brine/wire/codec.h"
#include "support/master_helpers.h"
#include "support/master_process.h"
#include "support/process.h"

using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::PushFrames;
using brine::test::Sql;
using namespace brine::test::master_helpers;

namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xF];
  }
  return out;
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
