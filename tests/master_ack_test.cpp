// brine-master's acknowledged requests on the Salt plug-in's socket
// (cache_socket.h): answered once committed, stale or malformed ones refused,
// byte budgets, replies on the asking connection, their lane ahead of the bus.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "brine/core/time.h"
#include "frame_queue.h"
#include "support/master_helpers.h"
#include "support/ack_client.h"
#include "support/master_process.h"

using brine::Value;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::Sql;
using brine::test::AckClient;
using brine::test::AckHeader;
using brine::test::AckReply;
using brine::test::NowUs;
using namespace brine::test::master_helpers;

namespace {

std::string CacheFrame(const std::string& op, const Value& data) { return NewFrame("brine/cache/" + op, data); }

using brine::master::Frame;

using brine::master::FrameQueue;

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
