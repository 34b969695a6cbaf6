// queue_bench: the queue runner's insert and pop rates through the store API.
//
// Items are runner calls the size insert_runner makes ({"fun", "args",
// "kwargs"}, ~90 bytes of JSON), each distinct. Measured on a fresh store:
//   insert 1      one Insert call (one transaction) per item, as `queue.insert q item` does
//   insert list   Insert calls of --batch items, as `queue.insert q '[...]'` does
//   pop 1         Pop(1) until empty (one BEGIN IMMEDIATE transaction per item)
//   pop batch     Pop(--batch) until empty
//   held pop 1    BeginPop(1) + Commit, process_queue's path without the event
//   pop 1 x P     P forked processes doing Pop(1) on one queue at once (the rate of all together)
// Prints a table and one JSON line. A brine-run process adds its start-up
// (a few ms) to each call; these are the store's own rates.
//
// usage: queue_bench [--items N] [--batch N] [--procs P] [--db PATH]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/queues.h"

namespace {

using brine::Value;
using Clock = std::chrono::steady_clock;

struct Args {
  int items = 20000;
  int batch = 1000;
  int procs = 8;
  std::filesystem::path db;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--items") a.items = std::stoi(argv[i + 1]);
    else if (k == "--batch") a.batch = std::stoi(argv[i + 1]);
    else if (k == "--procs") a.procs = std::stoi(argv[i + 1]);
    else if (k == "--db") a.db = argv[i + 1];
  }
  if (a.db.empty()) a.db = std::filesystem::temp_directory_path() / "brine-queue-bench.sqlite";
  return a;
}

std::vector<Value> MakeItems(int n, const std::string& tag) {
  std::vector<Value> items;
  items.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    items.push_back(Value::Map({{"fun", "state.orchestrate"},
                                {"args", Value::List({"orch.deploy", tag + "-" + std::to_string(i)})},
                                {"kwargs", Value::Map({{"saltenv", "base"}})}}));
  }
  return items;
}

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void RemoveDb(const std::filesystem::path& db) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
}

struct Row {
  const char* name;
  const char* key;
  int items;
  double secs;
};

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  RemoveDb(a.db);
  std::vector<Row> rows;
  {
    auto q = brine::store::OpenQueues(a.db);
    const std::vector<Value> one = MakeItems(a.items, "one");
    auto t = Clock::now();
    for (const Value& item : one) (void)q->Insert("single", std::span(&item, 1));
    rows.push_back({"insert 1", "insert_1_per_s", a.items, Seconds(t)});

    const std::vector<Value> listed = MakeItems(a.items, "list");
    t = Clock::now();
    for (std::size_t i = 0; i < listed.size(); i += static_cast<std::size_t>(a.batch)) {
      const std::size_t n = std::min(listed.size() - i, static_cast<std::size_t>(a.batch));
      (void)q->Insert("batch", std::span(listed.data() + i, n));
    }
    rows.push_back({"insert list", "insert_list_per_s", a.items, Seconds(t)});

    t = Clock::now();
    int popped = 0;
    while (!q->Pop("single", 1).empty()) ++popped;
    rows.push_back({"pop 1", "pop_1_per_s", popped, Seconds(t)});

    t = Clock::now();
    popped = 0;
    for (std::size_t n; (n = q->Pop("batch", a.batch).size()) > 0;) popped += static_cast<int>(n);
    rows.push_back({"pop batch", "pop_batch_per_s", popped, Seconds(t)});

    (void)q->Insert("held", MakeItems(a.items, "held"));
    t = Clock::now();
    popped = 0;
    while (true) {
      auto batch = q->BeginPop("held", 1);
      if (batch.items().empty()) break;
      batch.Commit();
      ++popped;
    }
    rows.push_back({"held pop 1", "held_pop_1_per_s", popped, Seconds(t)});

    (void)q->Insert("shared", MakeItems(a.items, "shared"));
  }  // no connection crosses the fork
  const auto t = Clock::now();
  std::vector<pid_t> children;
  for (int p = 0; p < a.procs; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        auto q = brine::store::OpenQueues(a.db, {.busy_timeout = std::chrono::milliseconds(60000)});
        while (!q->Pop("shared", 1).empty()) {
        }
        _exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "queue_bench: child: %s\n", e.what());
        _exit(1);
      }
    }
    children.push_back(pid);
  }
  bool ok = true;
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  rows.push_back({"pop 1 x procs", "pop_1_concurrent_per_s", a.items, Seconds(t)});
  RemoveDb(a.db);
  if (!ok) return 1;

  std::printf("queue_bench: %d items of ~90 B JSON, batch %d, %d concurrent processes\n", a.items, a.batch, a.procs);
  std::printf("  %-16s %10s %10s %14s\n", "operation", "items", "seconds", "items/s");
  for (const Row& r : rows) {
    std::printf("  %-16s %10d %10.3f %14.0f\n", r.name, r.items, r.secs, r.items / r.secs);
  }
  std::printf("{\"bench\":\"queue\",\"items\":%d,\"batch\":%d,\"procs\":%d", a.items, a.batch, a.procs);
  for (const Row& r : rows) std::printf(",\"%s\":%.0f", r.key, r.items / r.secs);
  std::printf("}\n");
  return 0;
}
