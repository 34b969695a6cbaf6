// The queue runner with other processes: 8 poppers on one queue (SQLite and
// PostgreSQL), and process_queue and process_runner against a live brine-master.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/queues.h"
#include "brine/wire/codec.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/process.h"
#include "support/queue_site.h"
#include "support/temp_dir.h"
#include "support/value_printer.h"

using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::store::InsertOutcome;
using brine::store::OpenQueues;
using brine::test::MasterProcess;
using brine::test::RunResult;
using brine::test::TempDir;
namespace fs = std::filesystem;
using namespace brine::test::queue_site;

namespace {

// A SUB socket on the master's PUB that has seen its subscription through.
class Subscriber {
 public:
  explicit Subscriber(MasterProcess& m) : sub_(ctx_, zmq::socket_type::sub) {
    sub_.set(zmq::sockopt::subscribe, "");
    sub_.connect(m.pub_endpoint());
    // PUB drops what it sends before the subscription arrives: probe until one gets through.
    bool joined = false;
    for (int i = 0; i < 200 && !joined; ++i) {
      brine::test::PushFrames(m.pull_endpoint(),
                              {brine::wire::EncodeFrame("probe", Value::EmptyMap(), brine::wire::Framing::kNew)});
      sub_.set(zmq::sockopt::rcvtimeo, 50);
      zmq::message_t msg;
      joined = sub_.recv(msg, zmq::recv_flags::none).has_value();
    }
    REQUIRE(joined);
    zmq::message_t stray;
    while (sub_.recv(stray, zmq::recv_flags::none)) {
    }
  }

  // The next event whose tag is `tag`, skipping others; nullopt after 10 s.
  std::optional<brine::wire::DecodedEvent> Next(const std::string& tag) {
    sub_.set(zmq::sockopt::rcvtimeo, 10000);
    zmq::message_t msg;
    while (sub_.recv(msg, zmq::recv_flags::none)) {
      auto decoded = brine::wire::DecodeFrame(msg.to_string_view());
      auto* event = std::get_if<brine::wire::DecodedEvent>(&decoded);
      if (event != nullptr && event->tag == tag) return *event;
    }
    return std::nullopt;
  }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t sub_;
};

// The rows of `query` once there are `lines` of them (brine-master commits
// every 100 ms); what there is after 10 s.
std::string SqlEventually(const fs::path& db, const std::string& query, std::size_t lines = 1) {
  std::string rows;
  for (int i = 0; i < 200; ++i) {
    if (fs::exists(db)) {
      rows = brine::test::Sql(db, query);
      if (static_cast<std::size_t>(std::count(rows.begin(), rows.end(), '\n')) >= lines) return rows;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rows;
}

// _stamp taken off a process_queue payload, after checking it is Salt's form.
Value WithoutStamp(Value payload) {
  const std::string* stamp = payload.FindString("_stamp");
  REQUIRE(stamp != nullptr);
  REQUIRE(brine::ParseStamp(*stamp).has_value());
  REQUIRE(payload.as_map().back().first == "_stamp");
  payload.Erase("_stamp");
  return payload;
}

// Pops `queue` in a fresh connection until it is empty, `quantity` at a time,
// writing each popped item's JSON to `out`, one a line. For a forked child.
int PopUntilEmpty(const fs::path& db, const std::string& queue, std::int64_t quantity, const fs::path& out) {
  try {
    auto q = OpenQueues(db, {.busy_timeout = std::chrono::milliseconds(60000)});
    std::ofstream file(out);
    while (true) {
      const auto items = q->Pop(queue, quantity);
      if (items.empty()) break;
      for (const Value& v : items) file << ToJson(v) << "\n";
      file.flush();
    }
    return file ? 0 : 3;
  } catch (const std::exception& e) {
    std::ofstream(out.string() + ".error") << e.what();
    return 4;
  }
}

// 2,000 items queued through confs[0], then 8 brine-run processes (process c
// on confs[c % size], each a loop of 10 pops of 25) pop at once: every item
// exactly once. `dir` takes their output.
void EightPoppers(const std::vector<fs::path>& confs, const fs::path& dir) {
  std::vector<Value> items;
  for (int i = 0; i < 2000; ++i) items.emplace_back(i);
  REQUIRE(JsonRun(confs[0], {"queue.insert", "work", ToJson(Value(items))}) == true);
  std::vector<std::unique_ptr<brine::test::Child>> children;
  for (int c = 0; c < 8; ++c) {
    // Each process pops 25 at a time, 10 times: 8 * 10 * 25 = 2000. The JSON
    // goes to popped.<c>; stderr and a failing pop's exit code to the log.
    const std::string loop = "for i in 1 2 3 4 5 6 7 8 9 10; do \"$0\" -c \"$1\" --out=json --out-indent=-1 "
                             "queue.pop work 25 >>\"$2\" || { s=$?; echo \"pop $i exited $s\" >&2; exit $s; }; done";
    children.push_back(std::make_unique<brine::test::Child>(
        std::vector<std::string>{"/bin/sh", "-c", loop, brine::test::Binary("brine-run").string(),
                                 confs[static_cast<std::size_t>(c) % confs.size()].string(),
                                 (dir / ("popped." + std::to_string(c))).string()},
        dir / ("popper." + std::to_string(c) + ".log")));
  }
  // Bounded by progress (the pops' output), not wall time; a failure prints
  // each popper's exit status and stderr.
  const bool exited = brine::test::WaitAll(children, {.progress = [&] {
    std::int64_t bytes = 0;
    for (int c = 0; c < 8; ++c) {
      std::error_code ec;
      bytes += static_cast<std::int64_t>(fs::file_size(dir / ("popped." + std::to_string(c)), ec));
    }
    return bytes;
  }});
  {
    INFO(brine::test::DescribeAll(children));
    REQUIRE(exited);
  }
  for (auto& child : children) {
    INFO(child->Describe());
    CHECK(child->exit_code().value_or(-1000) == 0);  // -1000: still running
  }
  REQUIRE(std::all_of(children.begin(), children.end(), [](auto& c) { return c->exit_code() == 0; }));
  std::multiset<long long> seen;
  for (int c = 0; c < 8; ++c) {
    std::istringstream in(brine::test::ReadFile(dir / ("popped." + std::to_string(c))));
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      const Value got = ParseJson(line);
      REQUIRE(got.as_list().size() == 25);
      for (const Value& v : got.as_list()) seen.insert(v.as_int());
      ++lines;
    }
    REQUIRE(lines == 10);
  }
  REQUIRE(seen.size() == 2000);
  REQUIRE(std::set<long long>(seen.begin(), seen.end()).size() == 2000);
  REQUIRE(JsonRun(confs.back(), {"queue.list_length", "work"}) == 0);
}

}  // namespace

TEST_CASE("queue: 8 processes popping one queue of 20,000 items get every item exactly once", "[queue]") {
  TempDir dir;
  const auto db = dir / "brine.sqlite";
  {
    auto q = OpenQueues(db);
    std::vector<Value> items;
    for (int i = 0; i < 20000; ++i) items.emplace_back(i);
    REQUIRE(q->Insert("work", items).kind == InsertOutcome::Kind::kInserted);
  }  // no connection crosses the fork
  std::vector<pid_t> children;
  for (int c = 0; c < 8; ++c) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(PopUntilEmpty(db, "work", 1 + c % 4, dir / ("popped." + std::to_string(c))));
    children.push_back(pid);
  }
  for (std::size_t c = 0; c < children.size(); ++c) {
    int status = 0;
    REQUIRE(waitpid(children[c], &status, 0) == children[c]);
    INFO(brine::test::ReadFile(dir / ("popped." + std::to_string(c) + ".error")));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  std::vector<int> count(20000, 0);
  int consumers_that_got_items = 0;
  for (int c = 0; c < 8; ++c) {
    std::ifstream in(dir / ("popped." + std::to_string(c)));
    std::string line;
    long long previous = -1;
    bool any = false;
    while (std::getline(in, line)) {
      const long long n = std::stoll(line);
      REQUIRE(n >= 0);
      REQUIRE(n < 20000);
      REQUIRE(n > previous);  // each consumer sees the queue's order
      previous = n;
      ++count[static_cast<std::size_t>(n)];
      any = true;
    }
    if (any) ++consumers_that_got_items;
  }
  REQUIRE(std::all_of(count.begin(), count.end(), [](int n) { return n == 1; }));
  REQUIRE(consumers_that_got_items > 1);
  REQUIRE(OpenQueues(db)->Length("work") == 0);
}

TEST_CASE("queue: 8 brine-run processes popping at once never get the same item", "[queue][e2e]") {
  Site site;
  EightPoppers({site.conf()}, site.dir());
}

TEST_CASE("queue: 8 brine-run processes on two masters' configs popping one PostgreSQL queue get each item once",
          "[queue][e2e][postgres]") {
  if (auto why = brine::test::PostgresServer::Unavailable()) {
    WARN(*why);
    return;
  }
  const std::string database = "brine.database: '" + brine::test::PostgresServer::Shared().CreateDatabase() + "'";
  Site a(database + "\nid: master_a");
  Site b(database + "\nid: master_b");
  EightPoppers({a.conf(), b.conf()}, a.dir());
}

// --- process_queue and process_runner ---------------------------------------------------

TEST_CASE("queue: process_queue without a master pops nothing and exits 1", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"(["item1","item2"])"}) == true);
  const RunResult r = BrineRun(site.conf(), {"queue.process_queue", "myqueue", "all"});
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("brine-master is not reachable at ipc://") != std::string::npos);
  REQUIRE(r.err.find("nothing was popped from queue myqueue") != std::string::npos);
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "myqueue"}) == StringList({"item1", "item2"}));
  // process_runner needs the bus too, and leaves its call in place.
  REQUIRE(JsonRun(site.conf(), {"queue.insert_runner", "jobs.master", "queue=runners"}) == true);
  const RunResult p = BrineRun(site.conf(), {"queue.process_runner", "queue=runners"});
  REQUIRE(p.exit_code == 1);
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "runners"}) == 1);
}

TEST_CASE("queue: process_queue fires salt/queue/<queue>/process to a live master, which archives it (G10)",
          "[queue][e2e]") {
  MasterProcess m;
  m.Start();
  Subscriber sub(m);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert", "myqueue", R"(["item1",{"k":5},3])"}) == true);

  const Value payload = JsonRun(m.conf_dir(), {"queue.process_queue", "myqueue", "2"});
  REQUIRE(WithoutStamp(payload) ==
          ParseJson(R"({"items":["item1",{"k":5}],"backend":"sqlite","queue":"myqueue"})"));
  const auto event = sub.Next("salt/queue/myqueue/process");
  REQUIRE(event.has_value());
  REQUIRE(event->data == payload);  // the same dict, _stamp included
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_items", "myqueue"}) == Value::List({3}));

  // Nested prints the payload; the empty queue still fires (Salt's walkthrough rows 11-12).
  const RunResult nested = BrineRun(m.conf_dir(), {"queue.process_queue", "myqueue", "all"});
  REQUIRE(nested.exit_code == 0);
  REQUIRE(nested.out.rfind("_stamp:\n", 0) == 0);
  REQUIRE(nested.out.find("backend:\n    sqlite\nitems:\n    - 3\nqueue:\n    myqueue\n") != std::string::npos);
  REQUIRE(sub.Next("salt/queue/myqueue/process").has_value());
  const Value empty = JsonRun(m.conf_dir(), {"queue.process_queue", "myqueue"});
  REQUIRE(WithoutStamp(empty) == ParseJson(R"({"items":[],"backend":"sqlite","queue":"myqueue"})"));
  REQUIRE(sub.Next("salt/queue/myqueue/process")->data == empty);

  const std::string archived = SqlEventually(
      m.database(), "SELECT data FROM salt_events WHERE tag = 'salt/queue/myqueue/process' ORDER BY id", 3);
  std::istringstream lines(archived);
  std::vector<Value> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(ParseJson(line));
  REQUIRE(rows.size() == 3);
  REQUIRE(rows.front() == payload);
  REQUIRE(rows.back() == empty);
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("queue: process_queue reaches a master on tcp with ipc_mode tcp", "[queue][e2e]") {
  const brine::test::TcpBusPorts ports = brine::test::FreeTcpBusPorts();
  MasterProcess m(ports.Config());
  m.set_tcp_ports(ports.pull, ports.pub);
  m.Start();
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert", "tcpq", "over-tcp"}) == true);
  REQUIRE(WithoutStamp(JsonRun(m.conf_dir(), {"queue.process_queue", "tcpq"})) ==
          ParseJson(R"({"items":["over-tcp"],"backend":"sqlite","queue":"tcpq"})"));
  REQUIRE(SqlEventually(m.database(), "SELECT json_extract(data, '$.items[0]') FROM salt_events "
                                      "WHERE tag = 'salt/queue/tcpq/process'") == "over-tcp\n");
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("queue: process_runner pops and runs queued calls, and leaves one it cannot run in place (A2)",
          "[queue][e2e]") {
  MasterProcess m("runner_queue:\n  queue: runners\n");
  m.Start();
  Subscriber sub(m);
  // The queued call is itself a queue call, so its effect is visible.
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert_runner", "queue.insert", R"(args=["results", "ran-1"])"}) == true);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert_runner", "queue.insert",
                                 R"(kwargs={"queue": "results", "items": ["ran-2", "ran-3"]})"}) == true);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert_runner", "test.stdout_print"}) == true);

  const RunResult first = BrineRun(m.conf_dir(), {"queue.process_runner"});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  REQUIRE(first.out == "None\n");
  const auto event = sub.Next("salt/queue/runners/process");
  REQUIRE(event.has_value());
  REQUIRE(WithoutStamp(event->data) ==
          ParseJson(R"({"items":[{"fun":"queue.insert","args":["results","ran-1"],"kwargs":{}}],)"
                    R"("backend":"sqlite","queue":"runners"})"));
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_items", "results"}) == StringList({"ran-1"}));

  // quantity 2 takes the kwargs call and test.stdout_print, which brine-run does not have:
  // nothing is popped, nothing runs, and the message names it.
  const RunResult blocked = BrineRun(m.conf_dir(), {"queue.process_runner", "2"});
  REQUIRE(blocked.exit_code == 1);
  REQUIRE(blocked.err ==
          "brine-run: the queued runner function test.stdout_print is not available in brine-run; it was left in "
          "queue runners\n");
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_length", "runners"}) == 2);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_items", "results"}) == StringList({"ran-1"}));

  REQUIRE(BrineRun(m.conf_dir(), {"queue.process_runner", "queue=runners", "backend=sqlite"}).exit_code == 0);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_items", "results"}) == StringList({"ran-1", "ran-2", "ran-3"}));
  const RunResult head = BrineRun(m.conf_dir(), {"queue.process_runner"});
  REQUIRE(head.exit_code == 1);
  REQUIRE(head.err.find("test.stdout_print is not available") != std::string::npos);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_items", "runners"}) ==
          ParseJson(R"([{"fun":"test.stdout_print","args":[],"kwargs":{}}])"));

  // A call whose arguments the function does not take is left in place too.
  REQUIRE(JsonRun(m.conf_dir(), {"queue.pop", "runners"}).as_list().size() == 1);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert_runner", "jobs.master", "args=[1, 2]"}) == true);
  const RunResult bad_args = BrineRun(m.conf_dir(), {"queue.process_runner"});
  REQUIRE(bad_args.exit_code == 1);
  REQUIRE(bad_args.err.find("the queued call to jobs.master has invalid arguments: master() takes 0 positional "
                            "arguments but 2 were given; it was left in queue runners") != std::string::npos);
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_length", "runners"}) == 1);
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("queue: jobs.master lists process_runner while its queued call runs", "[queue][e2e]") {
  MasterProcess m("runner_queue:\n  queue: runners\n");
  m.Start();
  REQUIRE(JsonRun(m.conf_dir(), {"queue.insert_runner", "state.event", "args=[release/*]",
                                 R"(kwargs={"count": 1, "quiet": true})"}) == true);
  brine::test::Child runner({brine::test::Binary("brine-run").string(), "-c", m.conf_dir().string(),
                             "queue.process_runner"},
                            m.dir() / "process_runner.out");
  Value running;
  for (int i = 0; i < 200; ++i) {
    running = JsonRun(m.conf_dir(), {"jobs.master"});
    if (running.as_list().size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::set<std::string> funs;
  for (const Value& call : running.as_list()) {
    funs.insert(*call.FindString("fun"));
    REQUIRE(call.Find("pid")->as_int() == runner.pid());
  }
  REQUIRE(funs == std::set<std::string>{"runner.queue.process_runner", "runner.state.event"});
  // Release the watch: state.event may subscribe late, so fire until it ends.
  std::optional<int> code;
  for (int i = 0; i < 200 && !code; ++i) {
    brine::test::PushFrames(m.pull_endpoint(), {brine::wire::EncodeFrame("release/now", Value::EmptyMap(),
                                                                         brine::wire::Framing::kNew)});
    code = runner.Wait(std::chrono::milliseconds(50));
  }
  REQUIRE(code == 0);
  REQUIRE(JsonRun(m.conf_dir(), {"jobs.master"}) == Value::EmptyList());
  REQUIRE(JsonRun(m.conf_dir(), {"queue.list_length", "runners"}) == 0);
  REQUIRE(m.Stop() == 0);
}
