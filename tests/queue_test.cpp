// The queue runner (issue 5; spec salt-queue-and-tests.md section 1, cases
// A1-A2 and G1-G10): queue.* through the real brine-run binary and Salt's
// answers, names and items stored verbatim, and the store's queue API.
// queue_process_test.cpp holds many processes at once and a live brine-master.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "support/master_process.h"
#include "support/process.h"
#include "support/queue_site.h"
#include "support/temp_dir.h"
#include "support/value_printer.h"

using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::store::InsertOutcome;
using brine::store::OpenQueues;
using brine::test::RunResult;
using brine::test::TempDir;
using namespace brine::test::queue_site;

namespace {

constexpr const char* kItemExists =
    "Item already exists in this queue. sqlite error: UNIQUE constraint failed: myqueue.name";

constexpr const char* kItemsExist =
    "One or more items already exists in this queue. sqlite error: UNIQUE constraint failed: myqueue.name";

Value Items(const std::vector<Value>& items) { return Value(items); }

// 10,000 distinct items whose insertion order is neither their text's nor
// their numbers' order: descending strings, descending ints, dicts, lists.
std::vector<Value> UnsortedItems(int n) {
  std::vector<Value> items;
  for (int i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: {
        char text[32];
        std::snprintf(text, sizeof text, "z%05d", n - i);
        items.emplace_back(text);
        break;
      }
      case 1: items.emplace_back(n - i); break;
      case 2: items.push_back(Value::Map({{"n", i}, {"a", "b"}})); break;
      default: items.push_back(Value::List({"item", n - i})); break;
    }
  }
  return items;
}

}  // namespace

// --- the spec's CLI walkthrough (1.5) ------------------------------------------------

TEST_CASE("queue: the CLI walkthrough answers as Salt's sqlite queue does, in nested and json",
          "[queue][e2e]") {
  struct Step {
    std::vector<std::string> args;
    std::string nested;  // exact stdout with the default outputter
    Value json;          // the --out=json value
  };
  const std::vector<Step> steps = {
      {{"queue.insert", "myqueue", "item1"}, "True\n", true},
      {{"queue.insert", "myqueue", R"(["item2","item3"])"}, "True\n", true},
      {{"queue.list_items", "myqueue"}, "- item1\n- item2\n- item3\n", StringList({"item1", "item2", "item3"})},
      {{"queue.list_length", "myqueue"}, "3\n", 3},
      {{"queue.list_queues"}, "- myqueue\n", StringList({"myqueue"})},
      {{"queue.insert", "myqueue", "item1"}, std::string(kItemExists) + "\n", kItemExists},
      {{"queue.insert", "myqueue", R"(["item4","item2"])"}, std::string(kItemsExist) + "\n", kItemsExist},
      // Changed on purpose: the list insert was all or nothing, so item4 is not there.
      {{"queue.list_items", "myqueue"}, "- item1\n- item2\n- item3\n", StringList({"item1", "item2", "item3"})},
      {{"queue.pop", "myqueue"}, "- item1\n", StringList({"item1"})},
      {{"queue.pop", "myqueue", "2"}, "- item2\n- item3\n", StringList({"item2", "item3"})},
      {{"queue.pop", "myqueue"}, "", Value::EmptyList()},
      {{"queue.delete", "myqueue", "nothere"}, "True\n", true},
      {{"queue.insert_runner", "test.stdout_print", "queue=runners", "backend=sqlite"}, "True\n", true},
      {{"queue.list_items", "runners"},
       "|_\n  ----------\n  args:\n  fun:\n      test.stdout_print\n  kwargs:\n      ----------\n",
       ParseJson(R"([{"fun":"test.stdout_print","args":[],"kwargs":{}}])")},
      {{"queue.list_length", "newq"}, "0\n", 0},
      {{"queue.list_queues"}, "- myqueue\n- newq\n- runners\n", StringList({"myqueue", "newq", "runners"})},
  };
  SECTION("nested") {
    Site site;
    for (const auto& step : steps) {
      const RunResult r = BrineRun(site.conf(), step.args);
      INFO(step.args[0] << " " << (step.args.size() > 1 ? step.args[1] : "") << "\n" << r.err);
      REQUIRE(r.exit_code == 0);
      REQUIRE(r.out == step.nested);
      REQUIRE(r.err.empty());
    }
  }
  SECTION("json") {
    Site site;
    for (const auto& step : steps) {
      INFO(step.args[0]);
      REQUIRE(JsonRun(site.conf(), step.args) == step.json);
    }
  }
}

TEST_CASE("queue: pop with a quantity that is not an integer or all fails with Salt's text and exit 2 (G6)",
          "[queue][e2e]") {
  Site site;
  REQUIRE(BrineRun(site.conf(), {"queue.insert", "myqueue", "item1"}).exit_code == 0);
  const std::string salt_text =
      "Quantity must be an integer or \"all\".\nError: \"invalid literal for int() with base 10: 'x'\".";
  for (const char* fn : {"queue.pop", "queue.process_queue"}) {
    const RunResult r = BrineRun(site.conf(), {fn, "myqueue", "x"});
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.out.rfind("\nPassed invalid arguments: " + salt_text + "\n\nUsage:\n", 0) == 0);
    REQUIRE(r.err == "brine-run: " + salt_text + "\n");
  }
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "myqueue"}) == StringList({"item1"}));
}

TEST_CASE("queue: an unknown backend gives Salt's not-available message and exit 1 for every function",
          "[queue][e2e]") {
  Site site;
  const std::vector<std::pair<std::vector<std::string>, std::string>> calls = {
      {{"queue.insert", "q", "a", "backend=redis"}, "redis.insert"},
      {{"queue.delete", "q", "a", "backend=redis"}, "redis.delete"},
      {{"queue.list_queues", "backend=redis"}, "redis.list_queues"},
      {{"queue.list_length", "q", "backend=redis"}, "redis.list_length"},
      {{"queue.list_items", "q", "backend=redis"}, "redis.list_items"},
      {{"queue.pop", "q", "backend=redis"}, "redis.pop"},
      {{"queue.process_queue", "q", "backend=redis"}, "redis.pop"},
      {{"queue.insert_runner", "jobs.master", "queue=q", "backend=pgjsonb"}, "pgjsonb.insert"},
      {{"queue.process_runner", "queue=q", "backend=pgjsonb"}, "pgjsonb.pop"},
  };
  for (const auto& [args, function] : calls) {
    const RunResult r = BrineRun(site.conf(), args);
    INFO(args[0]);
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.out.empty());
    REQUIRE(r.err == "brine-run: Function \"" + function + "\" is not available\n");
  }
  // Nothing was recorded: an unknown backend never reaches the store.
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == Value::EmptyList());
}

TEST_CASE("queue: 10,000 items pop and list in insertion order, not in their sort order", "[queue]") {
  TempDir dir;
  auto q = OpenQueues(dir / "brine.sqlite");
  // The spec's own example first: SQLite's index order would be alpha, mid, zeta.
  REQUIRE(q->Insert("order", std::vector<Value>{"zeta"}).kind == InsertOutcome::Kind::kInserted);
  REQUIRE(q->Insert("order", std::vector<Value>{"alpha", "mid"}).kind == InsertOutcome::Kind::kInserted);
  REQUIRE(Items(q->Items("order")) == StringList({"zeta", "alpha", "mid"}));

  const std::vector<Value> items = UnsortedItems(10000);
  // Some one at a time, the rest in lists, interleaved with another queue.
  for (std::size_t i = 0; i < 100; ++i) {
    REQUIRE(q->Insert("fifo", std::span(&items[i], 1)).kind == InsertOutcome::Kind::kInserted);
    REQUIRE(q->Insert("other", std::vector<Value>{static_cast<long long>(i)}).kind == InsertOutcome::Kind::kInserted);
  }
  for (std::size_t i = 100; i < items.size(); i += 990) {
    const auto end = std::min(items.size(), i + 990);
    REQUIRE(q->Insert("fifo", std::span(items.data() + i, end - i)).kind == InsertOutcome::Kind::kInserted);
  }
  REQUIRE(q->Length("fifo") == 10000);
  REQUIRE(q->Items("fifo") == items);

  std::vector<Value> popped;
  for (std::int64_t n = 1; popped.size() < items.size(); ++n) {
    auto got = q->Pop("fifo", n % 50);
    popped.insert(popped.end(), got.begin(), got.end());
  }
  REQUIRE(popped == items);
  REQUIRE(q->Length("fifo") == 0);
  REQUIRE(q->Length("other") == 100);
}

TEST_CASE("queue: brine-run lists and pops 10,000 items in insertion order", "[queue][e2e]") {
  Site site;
  const std::vector<Value> items = UnsortedItems(10000);
  // Four inserts of 2,500, each one YAML flow sequence on the command line
  // (a single argument may not exceed 128 KiB).
  for (std::size_t i = 0; i < items.size(); i += 2500) {
    const auto from = items.begin() + static_cast<long>(i);
    const Value chunk(std::vector<Value>(from, from + 2500));
    REQUIRE(JsonRun(site.conf(), {"queue.insert", "fifo", ToJson(chunk)}) == true);
  }
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "fifo"}) == 10000);
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "fifo"}) == Value(items));
  const Value first = JsonRun(site.conf(), {"queue.pop", "fifo", "3"});
  REQUIRE(first == Value(std::vector<Value>(items.begin(), items.begin() + 3)));
  const Value rest = JsonRun(site.conf(), {"queue.pop", "fifo", "all"});
  REQUIRE(rest == Value(std::vector<Value>(items.begin() + 3, items.end())));
}

// --- kept from Salt --------------------------------------------------------------------

TEST_CASE("queue: inserting a queued item again returns Salt's Item-already-exists text (G2)", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", "item1"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", "item1"}) == kItemExists);
  // A dict is one item, so its duplicate gets the single-item text too.
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"({"fun": "x", "args": []})"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"({"fun": "x", "args": []})"}) == kItemExists);
  // Key order is part of the item, as in Salt's json.dumps text.
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"({"args": [], "fun": "x"})"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "myqueue"}) == 3);
  // Other queues may hold the same item.
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "another", "item1"}) == true);
}

TEST_CASE("queue: a list holding a queued item returns Salt's One-or-more-items text (G3)", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"(["item1","item2","item3"])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"(["item4","item2"])"}) == kItemsExist);
  // Even a one-element list gets the list form, as Salt's isinstance(items, list) does.
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "myqueue", R"(["item1"])"}) == kItemsExist);
}

TEST_CASE("queue: list_queues lists every queue any call has named, even empty ones (G9)", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == Value::EmptyList());
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "e"}) == 0);
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "d"}) == Value::EmptyList());
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "c"}) == Value::EmptyList());
  REQUIRE(JsonRun(site.conf(), {"queue.delete", "b", "x"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "a", "x"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "a"}) == StringList({"x"}));
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == StringList({"a", "b", "c", "d", "e"}));
  REQUIRE(BrineRun(site.conf(), {"queue.list_queues"}).out == "- a\n- b\n- c\n- d\n- e\n");
}

TEST_CASE("queue: pop 0 gives [] and removes nothing, a negative quantity pops all (G5)", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"(["a","b","c"])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "0"}) == Value::EmptyList());
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "q"}) == 3);
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "-1"}) == StringList({"a", "b", "c"}));
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "q"}) == 0);
}

TEST_CASE("queue: pop takes all, truncates a float and pops [] from an empty queue (G4)", "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", "item1"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"(["item2","item3","item4","item5"])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q"}) == StringList({"item1"}));
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "1.9"}) == StringList({"item2"}));
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "quantity=1_0"}) == StringList({"item3", "item4", "item5"}));
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "all"}) == Value::EmptyList());
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"(["item6","item7"])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "all"}) == StringList({"item6", "item7"}));
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "all"}) == Value::EmptyList());
  // Python's int() errors for other types.
  const RunResult none = BrineRun(site.conf(), {"queue.pop", "q", "None"});
  REQUIRE(none.exit_code == 2);
  REQUIRE(none.err ==
          "brine-run: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'\n");
}

TEST_CASE("queue: delete returns True and removes equal items, a dict and list elements too (G8)",
          "[queue][e2e]") {
  Site site;
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"({"fun":"test.stdout_print","args":[],"kwargs":{}})"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"(["a","b","c",5])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.delete", "q", R"({"fun":"test.stdout_print","args":[],"kwargs":{}})"}) ==
          true);
  REQUIRE(JsonRun(site.conf(), {"queue.delete", "q", R"(["a","c","nothere"])"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.delete", "q", "5"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.delete", "q", "missing"}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "q"}) == StringList({"b"}));
}

// --- changed on purpose ------------------------------------------------------------------

TEST_CASE("queue: a list insert with one queued item inserts none of them (changed: Salt keeps those before it)",
          "[queue]") {
  TempDir dir;
  auto q = OpenQueues(dir / "brine.sqlite");
  REQUIRE(q->Insert("q", std::vector<Value>{"item1", "item2", "item3"}).kind == InsertOutcome::Kind::kInserted);
  const InsertOutcome dup = q->Insert("q", std::vector<Value>{"item4", "item5", "item2", "item6"});
  REQUIRE(dup.kind == InsertOutcome::Kind::kDuplicate);
  REQUIRE(dup.duplicate_index == 2);
  REQUIRE(Items(q->Items("q")) == StringList({"item1", "item2", "item3"}));
  // A list repeating an item within itself is refused whole too.
  const InsertOutcome twice = q->Insert("fresh", std::vector<Value>{"x", "y", "x"});
  REQUIRE(twice.kind == InsertOutcome::Kind::kDuplicate);
  REQUIRE(twice.duplicate_index == 2);
  REQUIRE(q->Items("fresh").empty());
  // ... but the queue it named is recorded, as any call records it.
  REQUIRE(q->ListQueues() == std::vector<std::string>{"fresh", "q"});
  // An empty list inserts nothing and succeeds.
  REQUIRE(q->Insert("q", std::vector<Value>{}).kind == InsertOutcome::Kind::kInserted);
}

TEST_CASE("queue: items keep their JSON type, a dict is a dict and 5 is 5 (changed: G7)", "[queue][e2e]") {
  Site site;
  const std::string job = R"({"fun":"test.stdout_print","args":[],"kwargs":{}})";
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", job}) == true);
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", "5"}) == true);  // Salt stored nothing for an int
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"([1.5, true, null, [1, "2"], "5"])"}) == true);
  const Value expected = ParseJson("[" + job + R"(, 5, 1.5, true, null, [1, "2"], "5"])");
  REQUIRE(JsonRun(site.conf(), {"queue.list_items", "q"}) == expected);
  // is_runner changes nothing: the dict already is a dict.
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "1", "is_runner=True"}) == ParseJson("[" + job + "]"));
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q", "all"}) == ParseJson(R"([5, 1.5, true, null, [1, "2"], "5"])"));
}

TEST_CASE("queue: insert_runner defaults to runner_queue's backend, else sqlite (changed: A1)", "[queue][e2e]") {
  SECTION("no runner_queue: sqlite, and a queue must be given") {
    Site site;
    REQUIRE(JsonRun(site.conf(), {"queue.insert_runner", "jobs.list_jobs", "queue=salt"}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.list_items", "salt"}) ==
            ParseJson(R"([{"fun":"jobs.list_jobs","args":[],"kwargs":{}}])"));
    const RunResult r = BrineRun(site.conf(), {"queue.insert_runner", "jobs.list_jobs"});
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.err.find("no queue given") != std::string::npos);
  }
  SECTION("runner_queue.queue names the queue; args split on commas; kwargs a dict") {
    Site site("runner_queue:\n  queue: runners\n");
    REQUIRE(JsonRun(site.conf(), {"queue.insert_runner", "event.send", "test_insert_runner",
                                  R"(kwargs={"data": {"foo": "bar"}})"}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.insert_runner", "jobs.lookup_jid", "args=a,b"}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.list_items", "runners"}) ==
            ParseJson(R"([{"fun":"event.send","args":["test_insert_runner"],"kwargs":{"data":{"foo":"bar"}}},)"
                      R"({"fun":"jobs.lookup_jid","args":["a","b"],"kwargs":{}}])"));
  }
  SECTION("runner_queue.backend pgjsonb is Salt's default, which brine does not have") {
    Site site("runner_queue:\n  queue: runners\n  backend: pgjsonb\n");
    const RunResult r = BrineRun(site.conf(), {"queue.insert_runner", "jobs.list_jobs"});
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.err == "brine-run: Function \"pgjsonb.insert\" is not available\n");
    const RunResult p = BrineRun(site.conf(), {"queue.process_runner"});
    REQUIRE(p.exit_code == 1);
    REQUIRE(p.err == "brine-run: Function \"pgjsonb.pop\" is not available\n");
    // An explicit backend still wins over the config.
    REQUIRE(JsonRun(site.conf(), {"queue.insert_runner", "jobs.list_jobs", "backend=sqlite"}) == true);
  }
}

// --- names and items ------------------------------------------------------------------------

TEST_CASE("queue: names and items made of quotes, %, _, semicolons and -- are stored verbatim and never executed",
          "[queue][e2e]") {
  Site site;
  const std::vector<std::string> nasty = {
      "it's",           "\"quoted\"",    "100%",         "a_b",           "x; DROP TABLE queue_item; --",
      "') OR 1=1 --",   "%_%",           "name",         "id",            "--",
      ";",              "q\"; DELETE FROM queue; --",
  };
  for (const std::string& name : nasty) {
    INFO(name);
    // A name is the first word; the item is a JSON string holding the same text.
    // Each word is a JSON string, which YAML types back to exactly this text.
    const std::string word = ToJson(Value(name));
    REQUIRE(JsonRun(site.conf(), {"queue.insert", word, word}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.insert", word, R"(["plain", "other"])"}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.list_items", word}) == Value::List({name, "plain", "other"}));
  }
  std::vector<std::string> sorted = nasty;
  std::sort(sorted.begin(), sorted.end());
  brine::ValueList names(sorted.begin(), sorted.end());
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == Value(names));
  for (const std::string& name : nasty) {
    INFO(name);
    // Salt's pop deleted by `name IN ("...")`: an item `name` or `id` emptied the queue and
    // one holding `"` was a syntax error. Here each pops alone.
    const std::string word = ToJson(Value(name));
    REQUIRE(JsonRun(site.conf(), {"queue.pop", word}) == Value::List({name}));
    REQUIRE(JsonRun(site.conf(), {"queue.delete", word, "other"}) == true);
    REQUIRE(JsonRun(site.conf(), {"queue.list_items", word}) == Value::List({"plain"}));
  }
  REQUIRE(brine::test::Sql(site.database(), "SELECT count(*) FROM queue_item") == std::to_string(nasty.size()) + "\n");
  REQUIRE(brine::test::Sql(site.database(), "SELECT count(*) FROM queue") == std::to_string(nasty.size()) + "\n");
}

TEST_CASE("queue: NUL in an item is kept verbatim, and a name with NUL is refused with exit 2", "[queue][e2e]") {
  Site site;
  // YAML's "\0" escape puts a real NUL byte in the typed argument.
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"("a\0b")"}) == true);
  const Value items = JsonRun(site.conf(), {"queue.list_items", "q"});
  REQUIRE(items == Value::List({std::string("a\0b", 3)}));
  REQUIRE(JsonRun(site.conf(), {"queue.insert", "q", R"("a\0b")"}) ==
          "Item already exists in this queue. sqlite error: UNIQUE constraint failed: q.name");
  const RunResult name = BrineRun(site.conf(), {"queue.insert", R"("q\0x")", "item"});
  REQUIRE(name.exit_code == 2);
  REQUIRE(name.err == "brine-run: invalid queue name 'q\\x00x': a queue name is 1-255 bytes of UTF-8 without '/', "
                      "NUL or control characters\n");
  REQUIRE(JsonRun(site.conf(), {"queue.pop", "q"}) == Value::List({std::string("a\0b", 3)}));
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == StringList({"q"}));
}

TEST_CASE("queue: a queue name that is empty, too long, has '/', a control character or bad UTF-8 exits 2",
          "[queue][e2e]") {
  Site site;
  const std::string ok255(255, 'n');
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", ok255}) == 0);
  REQUIRE(JsonRun(site.conf(), {"queue.list_length", "caf\xc3\xa9 queue"}) == 0);
  for (const std::string& bad : {std::string("''"), std::string(256, 'n'), std::string("a/b"), std::string("tab\there"),
                                 std::string("\"new\\nline\""), std::string("bad\xff"), std::string(R"("c1\u0085")")}) {
    INFO(bad);
    const RunResult r = BrineRun(site.conf(), {"queue.insert", bad, "item"});
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.err.find("invalid queue name") != std::string::npos);
  }
  REQUIRE(JsonRun(site.conf(), {"queue.list_queues"}) == Value::List({"caf\xc3\xa9 queue", ok255}));
}

// --- the store API ------------------------------------------------------------------------------

TEST_CASE("queue store: a held pop removes its items only on Commit, and dropping it puts them back in place",
          "[queue]") {
  TempDir dir;
  auto q = OpenQueues(dir / "brine.sqlite");
  REQUIRE(q->Insert("q", std::vector<Value>{"a", "b", "c"}).kind == InsertOutcome::Kind::kInserted);
  {
    auto batch = q->BeginPop("q", 2);
    REQUIRE(batch.items() == std::vector<Value>{"a", "b"});
    // The connection is busy with the pop until it ends.
    REQUIRE_THROWS_AS(q->Length("q"), brine::store::StoreError);
    REQUIRE_THROWS_AS(q->BeginPop("q", 1), brine::store::StoreError);
  }
  REQUIRE(Items(q->Items("q")) == StringList({"a", "b", "c"}));
  {
    auto batch = q->BeginPop("q", 2);
    batch.Commit();
    REQUIRE(batch.items() == std::vector<Value>{"a", "b"});
  }
  REQUIRE(Items(q->Items("q")) == StringList({"c"}));
  REQUIRE(q->Pop("q", 0).empty());
  REQUIRE(q->Pop("q", brine::store::kAllItems) == std::vector<Value>{"c"});
}

TEST_CASE("queue store: a held pop keeps other connections' pops waiting, then they get the next items",
          "[queue]") {
  TempDir dir;
  auto a = OpenQueues(dir / "brine.sqlite");
  auto b = OpenQueues(dir / "brine.sqlite", {.busy_timeout = std::chrono::milliseconds(100)});
  REQUIRE(a->Insert("q", std::vector<Value>{1, 2, 3}).kind == InsertOutcome::Kind::kInserted);
  {
    auto held = a->BeginPop("q", 1);
    REQUIRE(held.items() == std::vector<Value>{1});
    REQUIRE_THROWS_AS(b->Pop("q", 1), brine::store::BusyError);
    // Reads go on meanwhile and see the committed queue.
    REQUIRE(b->Length("q") == 3);
    held.Commit();
  }
  REQUIRE(b->Pop("q", 1) == std::vector<Value>{2});
  REQUIRE(a->Pop("q", 5) == std::vector<Value>{3});
}

TEST_CASE("queue store: invalid names and over-deep items are refused, read-only access too", "[queue]") {
  TempDir dir;
  auto q = OpenQueues(dir / "brine.sqlite");
  REQUIRE_FALSE(brine::store::IsValidQueueName(""));
  REQUIRE_FALSE(brine::store::IsValidQueueName(std::string("a\0b", 3)));
  REQUIRE_FALSE(brine::store::IsValidQueueName("a/b"));
  REQUIRE_FALSE(brine::store::IsValidQueueName("del\x7f"));
  REQUIRE(brine::store::IsValidQueueName("x'; DROP TABLE queue; --"));
  REQUIRE_THROWS_AS(q->Insert("a/b", std::vector<Value>{"x"}), std::invalid_argument);
  REQUIRE_THROWS_AS(q->Items(""), std::invalid_argument);
  Value deep = 1;
  for (int i = 0; i <= brine::kMaxJsonDepth; ++i) deep = Value::List({deep});
  REQUIRE_THROWS_AS(q->Insert("q", std::vector<Value>{deep}), std::invalid_argument);
  Value ok = 1;
  for (int i = 0; i < brine::kMaxJsonDepth; ++i) ok = Value::List({ok});
  REQUIRE(q->Insert("q", std::vector<Value>{ok}).kind == InsertOutcome::Kind::kInserted);
  REQUIRE(q->Pop("q", 1) == std::vector<Value>{ok});
  // Read-only (brine-web's /queues) opens, but every write is refused.
  auto ro = OpenQueues(dir / "brine.sqlite", {.access = brine::store::OpenOptions::Access::kReadOnly});
  REQUIRE_THROWS_AS(ro->Insert("q", std::vector<Value>{"x"}), brine::store::StoreError);
}
