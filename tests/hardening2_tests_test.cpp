// Issue 25, item 16: a test that fails must say what it saw and leave nothing
// behind. The helpers of tests/support that end-to-end tests rely on for that
// (JoiningThread, Child, WaitAll), and the queue pop that failed "database is
// locked" while brine-master ingested.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "brine/store/queues.h"
#include "support/joining_thread.h"
#include "support/master_process.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/value_printer.h"

using brine::Value;
using brine::test::Child;
using brine::test::JoiningThread;
using brine::test::TempDir;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

// True when `pid` is gone or a zombie (killed, and only waiting for whoever
// reaps orphans).
bool Dead(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
}

bool DiesWithin(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Dead(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

pid_t ReadPid(const std::filesystem::path& file) {
  REQUIRE(brine::test::WaitForPath(file, 20s));
  std::string text;
  for (int i = 0; i < 2000 && text.find('\n') == std::string::npos; ++i) {
    text = brine::test::ReadFile(file);
    std::this_thread::sleep_for(10ms);
  }
  return static_cast<pid_t>(std::stol(text));
}

std::unique_ptr<Child> Shell(const TempDir& dir, const std::string& name, const std::string& script) {
  return std::make_unique<Child>(std::vector<std::string>{"/bin/sh", "-c", script}, dir / (name + ".log"));
}

}  // namespace

TEST_CASE("tests: a child that exits 3 is reported with its exit status, its stdout and its stderr",
          "[hardening][tests]") {
  TempDir dir;
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(Shell(dir, "good", "echo all well"));
  children.push_back(Shell(dir, "bad", "echo to stdout; echo to stderr >&2; exit 3"));
  REQUIRE(brine::test::WaitAll(children, {.stall = 60s}));
  CHECK(children[0]->exit_code().value_or(-1000) == 0);
  CHECK(children[1]->exit_code().value_or(-1000) == 3);
  const std::string bad = children[1]->Describe();
  CHECK_THAT(bad, Contains("exit 3") && Contains("to stdout") && Contains("to stderr") &&
                      Contains("echo to stdout; echo to stderr >&2; exit 3"));
  const std::string all = brine::test::DescribeAll(children);
  CHECK_THAT(all, Contains("exit 0") && Contains("all well") && Contains("exit 3") && Contains("to stderr"));
  // A signal is named as one; a Run() says the same of its child.
  auto killed = Shell(dir, "killed", "kill -9 $$");
  REQUIRE(killed->Wait(60s) == -SIGKILL);
  CHECK_THAT(killed->Describe(), Contains("killed by signal 9"));
  const auto run = brine::test::Run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK_THAT(brine::test::Describe(run), Contains("exit 3") && Contains("out") && Contains("err"));
}

TEST_CASE("tests: a failure thrown while a JoiningThread and children run joins the thread and kills the children",
          "[hardening][tests]") {
  TempDir dir;
  std::atomic<bool> stop{false};
  std::atomic<bool> body_ended{false};
  pid_t child_pid = -1;
  pid_t grandchild_pid = -1;
  // What a failed REQUIRE does: throw through the scope. With a std::thread
  // here the process would end in std::terminate (SIGABRT), with the
  // children and the brine-master of the test left running.
  auto failing_test = [&] {
    JoiningThread worker(
        [&] {
          while (!stop) std::this_thread::sleep_for(1ms);
          body_ended = true;
        },
        [&] { stop = true; });
    auto child = Shell(dir, "sleeper", "sleep 300 & echo $! > " + (dir / "grandchild.pid").string() + "; wait");
    child_pid = child->pid();
    grandchild_pid = ReadPid(dir / "grandchild.pid");
    throw std::runtime_error("REQUIRE failed");
  };
  CHECK_THROWS_WITH(failing_test(), "REQUIRE failed");
  CHECK(body_ended);
  // The Child was reaped (no zombie of ours), and what it started was killed with it.
  CHECK(waitpid(child_pid, nullptr, WNOHANG) == -1);
  CHECK(DiesWithin(grandchild_pid, 10s));
}

TEST_CASE("tests: a JoiningThread hands what its body threw to Join", "[hardening][tests]") {
  JoiningThread t([] { throw std::runtime_error("the push failed"); });
  CHECK_THROWS_WITH(t.Join(), "the push failed");
  CHECK_FALSE(t.joinable());
  std::vector<JoiningThread> many;
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) many.emplace_back([&] { ++ran; });
  for (JoiningThread& m : many) m.Join();
  CHECK(ran == 4);
}

TEST_CASE("tests: children die with a test process that ends without unwinding", "[hardening][tests]") {
  TempDir dir;
  const pid_t helper = fork();
  REQUIRE(helper >= 0);
  if (helper == 0) {
    // A test process that dies without running destructors (abort, a
    // sanitizer report, ctest's timeout killing it).
    try {
      auto* child = new Child({"/bin/sleep", "300"}, dir / "sleep.log");
      std::ofstream(dir / "child.pid") << child->pid() << "\n";
    } catch (...) {
    }
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(helper, &status, 0) == helper);
  const pid_t orphan = ReadPid(dir / "child.pid");
  CHECK(DiesWithin(orphan, 10s));
  if (!Dead(orphan)) kill(orphan, SIGKILL);
}

TEST_CASE("tests: WaitAll waits while the children make progress, and gives up on a stalled one", "[hardening][tests]") {
  TempDir dir;
  // 2 s of work in steps of 0.1 s, against a stall bound of 1 s: it is the
  // progress, not the wall time, that bounds the wait.
  std::vector<std::unique_ptr<Child>> working;
  working.push_back(Shell(dir, "working", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
                                          "echo step $i; sleep 0.1; done"));
  CHECK(brine::test::WaitAll(working, {.stall = 1s}));
  CHECK(working[0]->exit_code().value_or(-1000) == 0);

  std::vector<std::unique_ptr<Child>> stalled;
  stalled.push_back(Shell(dir, "stalled", "echo waiting forever; exec sleep 300"));
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(brine::test::WaitAll(stalled, {.stall = 300ms}));
  CHECK(std::chrono::steady_clock::now() - started < 60s);
  CHECK_THAT(stalled[0]->Describe(), Contains("still running") && Contains("waiting forever"));

  // A progress measure of the caller's own keeps a silent child waited for.
  std::vector<std::unique_ptr<Child>> silent;
  silent.push_back(Shell(dir, "silent", "sleep 1.5"));
  std::int64_t ticks = 0;
  CHECK(brine::test::WaitAll(silent, {.progress = [&] { return ++ticks; }, .stall = 500ms}));
}

// The other half of item 16: `brine-run queue.pop` beside a brine-master
// ingesting at full speed. The master holds the write lock from each batch's
// BEGIN IMMEDIATE to its COMMIT and takes it again right after; SQLite's own
// busy handler tried every 100 ms and so rarely hit a pause, and the pop
// failed "database is locked" once its busy_timeout had passed.
TEST_CASE("queue store: a pop gets the write lock in the pauses of a writer that commits back to back",
          "[hardening][queue]") {
  TempDir dir;
  const auto db = dir / "brine.sqlite";
  {
    auto q = brine::store::OpenQueues(db);
    std::vector<Value> items;
    for (int i = 0; i < 5; ++i) items.emplace_back(i);
    REQUIRE(q->Insert("work", items).kind == brine::store::InsertOutcome::Kind::kInserted);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> transactions{0};
  // brine-master's pattern: hold the lock 100 ms, let go for about 1 ms.
  JoiningThread writer(
      [&] {
        SQLite::Database w(db.string(), SQLite::OPEN_READWRITE, 60000);
        while (!stop) {
          w.exec("BEGIN IMMEDIATE");
          ++transactions;
          std::this_thread::sleep_for(100ms);
          w.exec("COMMIT");
          std::this_thread::sleep_for(1ms);
        }
      },
      [&] { stop = true; });
  REQUIRE(brine::test::WaitUntil([&] { return transactions > 0; }));
  auto q = brine::store::OpenQueues(db, {.busy_timeout = 2000ms});
  std::vector<Value> popped;
  for (int i = 0; i < 5; ++i) {
    INFO("pop " << i << " after " << transactions << " transactions of the writer");
    std::vector<Value> got;
    REQUIRE_NOTHROW(got = q->Pop("work", 1));
    popped.insert(popped.end(), got.begin(), got.end());
  }
  writer.StopAndJoin();
  CHECK(popped == std::vector<Value>{0, 1, 2, 3, 4});
}
