// state.event and event.send end to end: the real brine-run and brine-master
// as processes on real sockets.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <thread>

#include "brine/core/json.h"
#include "support/master_process.h"
#include "support/temp_dir.h"

using brine::test::Binary;
using brine::test::Child;
using brine::test::MasterProcess;
using brine::test::ReadFile;
using brine::test::Run;
using brine::test::Sql;

namespace {

std::vector<std::string> BrineRun(const MasterProcess& m, std::vector<std::string> args) {
  std::vector<std::string> argv = {Binary("brine-run").string(), "-c", m.conf_dir().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Starts `brine-run state.event ...` and waits until it is subscribed: it
// writes its <cachedir>/proc file first, and a subscription needs a moment to
// reach the publisher.
std::unique_ptr<Child> StartWatcher(const MasterProcess& m, std::vector<std::string> args,
                                    const std::filesystem::path& out) {
  const auto proc_dir = m.dir() / "cache" / "proc";
  auto child = std::make_unique<Child>(BrineRun(m, args), out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(proc_dir) || std::filesystem::is_empty(proc_dir)) {
    if (std::chrono::steady_clock::now() > deadline || !child->Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Over ipc a subscription takes milliseconds; a second leaves room for a loaded CI machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  return child;
}

void Send(const MasterProcess& m, const std::string& tag, const std::string& data) {
  const auto r = Run(BrineRun(m, {"event.send", tag, data}));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == "True\n");
}

}  // namespace

TEST_CASE("events: event.send round-trips through the master into salt_events", "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  Send(m, "my/custom/event", R"({"foo": "bar", "n": 1, "f": 4.0})");
  REQUIRE(m.Stop() == 0);
  const std::string row = Sql(m.database(), "SELECT tag, data FROM salt_events");
  // Salt adds _stamp after the caller's keys; types are kept (4.0 stays a float).
  REQUIRE(std::regex_match(row, std::regex(R"(my/custom/event\|\{"foo":"bar","n":1,"f":4\.0,"_stamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?"\}\n)")));
}

TEST_CASE("events: event.send without a master fails with exit 1 and one line", "[runner][e2e]") {
  MasterProcess m("brine.send_timeout_ms: 200");
  const auto r = Run(BrineRun(m, {"event.send", "my/tag"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.err.find("brine-run: ") == 0);
  REQUIRE(r.err.find("not reachable") != std::string::npos);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // A data argument that is not a dict is a usage error.
  REQUIRE(Run(BrineRun(m, {"event.send", "my/tag", "[1, 2]"})).exit_code == 2);
}

TEST_CASE("events: brine-run loads ZeroMQ only when a function uses the bus, and says so when it cannot",
          "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  Send(m, "my/custom/event", R"({"n": 1})");
  REQUIRE(m.Stop() == 0);
  // A libzmq.so.5 that is no library, found first: a binary linked with
  // libzmq would not start at all (exit 127).
  brine::test::TempDir lib;
  std::ofstream(lib / "libzmq.so.5") << "not a library\n";
  auto with_bad_libzmq = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = BrineRun(m, std::move(args));
    argv.insert(argv.begin(), {"/usr/bin/env", "LD_LIBRARY_PATH=" + lib.path().string()});
    return Run(argv);
  };
  const auto listed = with_bad_libzmq({"jobs.list_jobs", "--out", "json"});
  INFO(listed.err);
  REQUIRE(listed.exit_code == 0);
  REQUIRE(listed.out == "{}\n");
  const auto sent = with_bad_libzmq({"event.send", "my/tag"});
  REQUIRE(sent.exit_code == 1);
  REQUIRE(sent.err.find("brine-run: ") == 0);
  REQUIRE(sent.err.find("cannot load libzmq.so.5 (ZeroMQ)") != std::string::npos);
  REQUIRE(std::count(sent.err.begin(), sent.err.end(), '\n') == 1);
}

TEST_CASE("events: state.event prints exactly the matching events in Salt's format", "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  const auto out = m.dir() / "watch.out";
  auto watcher = StartWatcher(m, {"state.event", "test/*", "count=2"}, out);
  Send(m, "other/skip", R"({"a": 0})");
  Send(m, "test/one", R"({"b": 1, "a": [1, 2.5, null, true]})");
  Send(m, "test/two", R"({"z": "ü"})");
  const auto exited = watcher->Wait(std::chrono::seconds(20));
  INFO(watcher->Describe());  // its exit status and output, should it fail
  REQUIRE(exited == std::optional<int>(0));
  const std::string text = ReadFile(out);
  // Python's json.dumps: ", " and ": " separators, keys in arrival order, raw UTF-8.
  const std::regex expected(
      "test/one\t\\{\"b\": 1, \"a\": \\[1, 2\\.5, null, true\\], \"_stamp\": \"[0-9T:.-]+\"\\}\n"
      "test/two\t\\{\"z\": \"ü\", \"_stamp\": \"[0-9T:.-]+\"\\}\n");
  INFO(text);
  REQUIRE(std::regex_match(text, expected));
}

TEST_CASE("events: state.event pretty=True indents by 4 with sorted keys", "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  const auto out = m.dir() / "watch.out";
  auto watcher = StartWatcher(m, {"state.event", "pretty/*", "count=1", "pretty=True"}, out);
  Send(m, "pretty/x", R"({"b": 1, "a": {"d": 2, "c": 3}})");
  const auto exited = watcher->Wait(std::chrono::seconds(20));
  INFO(watcher->Describe());  // its exit status and output, should it fail
  REQUIRE(exited == std::optional<int>(0));
  const std::regex expected(
      "pretty/x\t\\{\n    \"_stamp\": \"[0-9T:.-]+\",\n    \"a\": \\{\n        \"c\": 3,\n        \"d\": 2\n    \\},\n"
      "    \"b\": 1\n\\}\n");
  const std::string text = ReadFile(out);
  INFO(text);
  REQUIRE(std::regex_match(text, expected));
}

TEST_CASE("events: state.event survives a restart of brine-master", "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  const auto out = m.dir() / "watch.out";
  auto watcher = StartWatcher(m, {"state.event", "keep/*", "count=2"}, out);
  Send(m, "keep/before", "{}");
  // Wait for the first line before the master goes away.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ReadFile(out).find("keep/before") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(m.Stop() == 0);
  REQUIRE(watcher->Running());
  m.Start();
  // The subscriber reconnects by itself; fire until it has seen one more.
  for (int i = 0; i < 100 && watcher->Running(); ++i) {
    Send(m, "keep/after", "{}");
    (void)watcher->Wait(std::chrono::milliseconds(100));
  }
  const auto exited = watcher->Wait(std::chrono::seconds(10));
  INFO(watcher->Describe());  // its exit status and output, should it fail
  REQUIRE(exited == std::optional<int>(0));
  const std::string text = ReadFile(out);
  INFO(text);
  REQUIRE(text.find("keep/before\t") == 0);
  REQUIRE(text.find("\nkeep/after\t") != std::string::npos);
  REQUIRE(std::count(text.begin(), text.end(), '\n') == 2);
}

TEST_CASE("events: jobs.master lists a running state.event and forgets it afterwards", "[runner][e2e]") {
  MasterProcess m;
  m.Start();
  const auto out = m.dir() / "watch.out";
  auto watcher = StartWatcher(m, {"state.event", "never/*"}, out);
  auto r = Run(BrineRun(m, {"jobs.master", "--out", "json"}));
  REQUIRE(r.exit_code == 0);
  const brine::Value listed = brine::ParseJson(r.out);
  REQUIRE(listed.as_list().size() == 1);
  REQUIRE(*listed.as_list()[0].FindString("fun") == "runner.state.event");
  REQUIRE(listed.as_list()[0].Find("pid")->as_int() == watcher->pid());
  watcher->Signal(SIGKILL);
  (void)watcher->Wait();
  // A dead pid is not listed (its stale file stays; Salt's jobs.master would delete it).
  r = Run(BrineRun(m, {"jobs.master", "--out", "json"}));
  REQUIRE(brine::ParseJson(r.out) == brine::Value::EmptyList());
}
