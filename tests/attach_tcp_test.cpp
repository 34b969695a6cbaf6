// brine.bus: attach under Salt's `ipc_mode: tcp` (issue 29): the master's
// bus is 127.0.0.1:tcp_master_pub_port (and its puller
// tcp_master_pull_port), served here by the stand-in of
// tests/support/modern_bus.h on those ports.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "brine/core/value.h"
#include "brine/wire/salt_stream.h"
#include "support/master_process.h"
#include "support/modern_bus.h"
#include "support/process.h"

using brine::Value;
using brine::test::WaitUntil;
using brine::wire::StreamFraming;

namespace {

std::string Sql1(const std::filesystem::path& db, const std::string& query) {
  std::string v = brine::test::Sql(db, query);
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

std::string Tags(const std::filesystem::path& db) {
  return Sql1(db, "SELECT coalesce(group_concat(tag, ' '), '') FROM"
                  " (SELECT tag FROM salt_events WHERE tag LIKE 'tcp/%' ORDER BY id)");
}

}  // namespace

TEST_CASE("attach: under ipc_mode tcp brine reads 127.0.0.1:tcp_master_pub_port and stores every event once, in order",
          "[attach][e2e]") {
  const brine::test::TcpBusPorts brine_ports = brine::test::FreeTcpBusPorts();
  int salt_pub = 0, salt_pull = 0;
  do salt_pub = brine::test::FreeTcpPort();
  while (salt_pub == brine_ports.pull || salt_pub == brine_ports.pub || salt_pub == brine_ports.cache);
  do salt_pull = brine::test::FreeTcpPort();
  while (salt_pull == salt_pub || salt_pull == brine_ports.pull || salt_pull == brine_ports.pub ||
         salt_pull == brine_ports.cache);
  // brine's own (acknowledged) socket on its tcp_cache_port; Salt's ports are read only.
  brine::test::MasterProcess master("brine.bus: attach\n" + brine_ports.Config() +
                                    "tcp_master_pub_port: " + std::to_string(salt_pub) +
                                    "\ntcp_master_pull_port: " + std::to_string(salt_pull) + "\n");
  brine::test::ModernBus bus(master.dir() / "salt", {.form = {.framing = StreamFraming::kPlain},
                                                     .write_chunk = 5,
                                                     .tcp_pub_port = salt_pub,
                                                     .tcp_pull_port = salt_pull});
  CHECK_FALSE(std::filesystem::exists(bus.pub_path()));  // a port, no socket file
  master.Start();
  REQUIRE(bus.WaitForReaders(1));
  std::string want;
  for (int i = 0; i < 40; ++i) {
    const std::string tag = "tcp/plain/" + std::to_string(i);
    bus.Fire(tag, Value::Map({{"i", Value(i)}}));
    want += (i ? " " : "") + tag;
  }
  const bool plain = WaitUntil([&] { return Tags(master.database()) == want; });
  INFO("stored: " << Tags(master.database()));
  REQUIRE(plain);
  // The master restarts in the other framing on the same port: brine
  // reconnects, and the restart is a gap, closed at the new attach.
  bus.Restart({.framing = StreamFraming::kPrefixed});
  REQUIRE(bus.WaitForReaders(1));
  for (int i = 0; i < 40; ++i) {
    const std::string tag = "tcp/prefixed/" + std::to_string(i);
    bus.Fire(tag, Value::Map({{"i", Value(i)}}));
    want += " " + tag;
  }
  const bool both = WaitUntil([&] { return Tags(master.database()) == want; });
  INFO("stored: " << Tags(master.database()));
  REQUIRE(both);
  CHECK(Sql1(master.database(), "SELECT count(*) FROM salt_events WHERE tag LIKE 'tcp/%'") == "80");
  CHECK(WaitUntil([&] {
    return Sql1(master.database(), "SELECT group_concat(reason || ':' || (gap_end IS NOT NULL)) FROM brine_bus_gaps") ==
           "master went away:1";
  }));
  CHECK(brine::test::ReadFile(master.sock_dir() / "brine_bus_framing") == "prefixed\n");
  // event.send writes to the master's puller port, and the stand-in republishes it.
  const brine::test::RunResult sent =
      brine::test::Run({brine::test::Binary("brine-run").string(), "-c", master.conf_dir().string(), "event.send",
                        "tcp/sent", "{\"x\": 1}"});
  INFO(sent.err);
  CHECK(sent.exit_code == 0);
  CHECK(WaitUntil([&] { return bus.pulled().size() == 1; }));
  CHECK(WaitUntil([&] { return Sql1(master.database(), "SELECT count(*) FROM salt_events WHERE tag = 'tcp/sent'") == "1"; }));
  REQUIRE(master.Stop() == 0);
}
