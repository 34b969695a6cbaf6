// The returner layer's writes, on SQLite (or PostgreSQL under ctest
// store_writes:postgresql): loads, returns and events as given, minion lists,
// stubs, every JSON type, batches, replays, a reader beside a writer.

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/joining_thread.h"
#include "support/master_process.h"
#include "support/store_fixture.h"

using brine::ToJson;
using brine::Value;
using brine::store::Event;
using brine::store::OpenOptions;
using brine::store::OpenStore;
using brine::store::ReturnOutcome;
using brine::store::Store;
using namespace brine::test::store_fixture;

TEST_CASE("store: a load, a return and an event whose JSON text the caller made are kept as that text", "[store]") {
  // brine-master makes the text on its reader thread (issue 15). A text other
  // than ToJson(value), which callers never pass, shows which one is kept.
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000004";
  const Value load = J(R"({"fun":"test.ping","jid":"20240101120000000004"})");
  s->SaveLoad(jid, load, R"({"fun":"test.ping","jid":"20240101120000000004","made":"by the caller"})",
              Strings({"m1"}));
  const Value ret = Ret(jid, "m1", true);
  Value ret_text = ret;
  ret_text.Set("made", "by the caller");
  const ReturnOutcome stored = s->Returner(ret, ToJson(ret_text));
  REQUIRE(stored.kind == ReturnOutcome::Kind::kStored);
  std::vector<Event> events;
  events.push_back({.tag = "test/a", .data = J(R"({"a":1})"), .received = kT0, .data_json = R"({"a":1,"made":2})"});
  s->EventReturn(events);
  REQUIRE(*s->GetLoad(jid).FindString("made") == "by the caller");
  REQUIRE(*s->GetJidFull(jid).Find("m1")->FindString("made") == "by the caller");
  std::vector<std::string> archived;
  s->ForEachEvent(std::nullopt, std::nullopt, [&](brine::store::ArchivedEvent&& e) { archived.push_back(e.data_json); });
  REQUIRE(archived == std::vector<std::string>{R"({"a":1,"made":2})"});
  // The same return again without a text is a repeat of it, compared by value.
  REQUIRE(s->Returner(ret_text).kind == ReturnOutcome::Kind::kRepeat);
}

TEST_CASE("store: minion lists merge into the expected set", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000002";
  s->SaveMinions(jid, Strings({"b", "a"}), std::nullopt);
  s->SaveLoad(jid, J(R"({"fun":"cmd.run","tgt":"*"})"), Strings({"c", "a"}));
  s->SaveMinions(jid, Strings({"d"}), std::string("syndic1"));
  REQUIRE(ToJson(*s->GetLoad(jid).Find("Minions")) == R"(["a","b","c","d"])");
}

TEST_CASE("store: a minion list given again adds nothing, yet one whose first adding was rolled back is added",
          "[store]") {
  // JobCache skips a list it added last for the job (Salt announces a job's
  // minions in its `new` event and again in the bare-jid event).
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000003";
  s->SaveLoad(jid, J(R"({"fun":"cmd.run","tgt":"*"})"), Strings({"a", "b"}));
  {
    auto batch = s->BeginBatch();
    s->SaveMinions(jid, Strings({"c"}), std::nullopt);
  }  // dropped: rolled back
  s->SaveMinions(jid, Strings({"c"}), std::nullopt);
  s->SaveMinions(jid, Strings({"a", "b"}), std::nullopt);
  s->SaveMinions(jid, Strings({"a", "b"}), std::nullopt);
  REQUIRE(ToJson(*s->GetLoad(jid).Find("Minions")) == R"(["a","b","c"])");
  // A stub's guess gives way to a list even when the list is the one seen last.
  const std::string stubbed = "20240101120000000004";
  s->SaveMinions(stubbed, Strings({"x"}), std::nullopt);
  REQUIRE(s->Returner(Ret(stubbed, "y", true)).kind == ReturnOutcome::Kind::kStored);
  s->SaveMinions(stubbed, Strings({"x"}), std::nullopt);
  REQUIRE(ToJson(*s->GetLoad(stubbed).Find("Minions")) == R"(["x"])");
}

TEST_CASE("store: a return before its publish gets a stub that the publish replaces", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000003";
  Value r = Ret(jid, "web3", "up 3 days");
  r.Set("fun", "cmd.run");
  r.Set("fun_args", Value::List({"uptime"}));
  REQUIRE(s->Returner(r).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(ToJson(s->GetLoad(jid)) ==
          R"({"jid":"20240101120000000003","fun":"cmd.run","arg":["uptime"],"tgt":"web3","tgt_type":"glob","Minions":["web3"]})");
  REQUIRE(f.Q("SELECT load_source FROM jids") == "return\n");

  s->SaveLoad(jid, J(R"({"fun":"cmd.run","arg":["uptime"],"tgt":"web*","tgt_type":"glob","user":"alice"})"),
              Strings({"web1", "web2", "web3"}));
  const Value load = s->GetLoad(jid);
  REQUIRE(*load.FindString("tgt") == "web*");
  REQUIRE(ToJson(*load.Find("Minions")) == R"(["web1","web2","web3"])");
  REQUIRE(f.Q("SELECT load_source FROM jids") == "publish\n");
  // A later stray return does not touch the publish load.
  REQUIRE(s->Returner(Ret(jid, "web9", "late")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(ToJson(*s->GetLoad(jid).Find("Minions")) == R"(["web1","web2","web3"])");
}

TEST_CASE("store: in one batch, the publish drops the minion a return's stub guessed, and its own list stays",
          "[store]") {
  // The writes of a batch may wait for its commit (PostgreSQL sends the
  // expected minions with it): the stub's guess must not outlive the publish.
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000004";
  {
    auto batch = s->BeginBatch();
    REQUIRE(s->Returner(Ret(jid, "web3", "up 3 days")).kind == ReturnOutcome::Kind::kStored);
    s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"web[12]","tgt_type":"glob"})"), Strings({"web1", "web2"}));
    batch.Commit();
  }
  REQUIRE(ToJson(*s->GetLoad(jid).Find("Minions")) == R"(["web1","web2"])");
  REQUIRE(f.Q("SELECT minion FROM jid_missing ORDER BY minion") == "web1\nweb2\n");
}

TEST_CASE("store: save_load from Salt keeps the publish load over a return's and an event's (case C6)",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000004";
  const Value publish = J(R"({"cmd":"publish","tgt":"m1","fun":"test.echo","arg":["x"],"tgt_type":"glob","jid":"20240101120000000004","user":"root"})");
  s->SaveCacheLoad(jid, publish, Strings({"m1"}));
  // store_job's copy of the return, then the salt/job/<jid>/new event's copy of the load.
  Value r = Ret(jid, "m1", "x");
  r.Set("tgt", "m1");
  r.Set("tgt_type", "glob");
  s->SaveCacheLoad(jid, r, std::nullopt);
  s->SaveLoad(jid, J(R"({"jid":"20240101120000000004","tgt":"*","fun":"test.echo","arg":["x"],"tgt_type":"glob"})"),
              Strings({"m2"}));
  REQUIRE(s->Returner(r).kind == ReturnOutcome::Kind::kStored);
  Value want = publish;
  want.Set("Minions", Value::List({"m1", "m2"}));
  REQUIRE(ToJson(s->GetLoad(jid)) == ToJson(want));
  REQUIRE(f.Q("SELECT load_source FROM jids") == "publish\n");

  // A return's copy first: it makes the stub, and the publish load replaces it.
  const std::string jid2 = "20240101120000000005";
  Value r2 = Ret(jid2, "m3", true);
  r2.Set("tgt", "m3");
  s->SaveCacheLoad(jid2, r2, std::nullopt);
  REQUIRE(ToJson(s->GetLoad(jid2)) ==
          R"({"jid":"20240101120000000005","fun":"test.ping","arg":[],"tgt":"m3","tgt_type":"glob","Minions":["m3"]})");
  REQUIRE(s->Returner(r2).kind == ReturnOutcome::Kind::kStored);
  s->SaveCacheLoad(jid2, J(R"({"cmd":"publish","tgt":"m*","fun":"test.ping","arg":[],"tgt_type":"glob"})"),
                   Strings({"m3", "m4"}));
  REQUIRE(ToJson(s->GetLoad(jid2)) ==
          R"({"cmd":"publish","tgt":"m*","fun":"test.ping","arg":[],"tgt_type":"glob","Minions":["m3","m4"]})");

  // A load with no cmd (a batch job's, case D14) is kept like an event's; lists merge.
  const std::string jid3 = "20240101120000000006";
  s->SaveCacheLoad(jid3, J(R"({"fun":"state.sls","jid":"20240101120000000006","tgt":"","tgt_type":"list","user":"root"})"),
                   std::nullopt);
  s->SaveMinions(jid3, Strings({"b", "a"}), std::nullopt);
  s->SaveMinions(jid3, Strings({"d", "c"}), std::string("syndic"));
  REQUIRE(*s->GetLoad(jid3).FindString("jid") == jid3);
  REQUIRE(ToJson(*s->GetLoad(jid3).Find("Minions")) == R"(["a","b","c","d"])");

  // The same order in one batch, whose load writes may wait for its commit
  // (PostgreSQL sends them as one statement): each keeps its own condition.
  const std::string jid4 = "20240101120000000007";
  Value publish4 = publish;
  publish4.Set("jid", jid4);
  Value r4 = Ret(jid4, "m1", "x");
  r4.Set("tgt", "m1");
  {
    auto batch = s->BeginBatch();
    s->SaveCacheLoad(jid4, publish4, Strings({"m1"}));
    s->SaveCacheLoad(jid4, r4, std::nullopt);
    s->SaveLoad(jid4, J(R"({"tgt":"*","fun":"test.echo","arg":["x"],"tgt_type":"glob"})"), Strings({"m2"}));
    REQUIRE(s->Returner(r4).kind == ReturnOutcome::Kind::kStored);
    batch.Commit();
  }
  want = publish4;
  want.Set("Minions", Value::List({"m1", "m2"}));
  REQUIRE(ToJson(s->GetLoad(jid4)) == ToJson(want));
}

TEST_CASE("store: a req jid gets a fresh jid and nocache jids keep no returns", "[store]") {
  Fixture f;
  auto s = f.Open();
  const auto out = s->Returner(Ret("req", "m1", 1));
  REQUIRE(out.kind == ReturnOutcome::Kind::kStored);
  REQUIRE(out.jid == brine::FormatJid(kT0));
  REQUIRE(s->GetJid(out.jid).as_map().size() == 1);

  f.clock.Advance(std::chrono::seconds(1));
  const std::string jid = s->PrepJid(Store::Caching::kNoCache, std::nullopt);
  REQUIRE(brine::IsJid(jid));
  REQUIRE(s->Returner(Ret(jid, "m1", 1)).kind == ReturnOutcome::Kind::kNotCached);
  REQUIRE(s->GetJid(jid) == Value::EmptyMap());
  // Loads without jid, id or return are not stored.
  REQUIRE(s->Returner(J(R"({"id":"m1","return":1})")).kind == ReturnOutcome::Kind::kNotCached);
  REQUIRE(s->Returner(J(R"({"jid":"20240101120000000009","return":1})")).kind ==
          ReturnOutcome::Kind::kNotCached);
  REQUIRE(s->Returner(J(R"({"jid":"20240101120000000009","id":"m1"})")).kind ==
          ReturnOutcome::Kind::kNotCached);
}

TEST_CASE("store: returns of every JSON type, big ints, floats, non-ASCII and NUL round-trip", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000004";
  std::string nul_text("a\0b\xff\xfe", 5);
  const std::vector<Value> values = {
      Value(),
      Value(true),
      Value(false),
      Value(static_cast<long long>(9007199254740993LL)),
      Value(static_cast<unsigned long long>(18446744073709551615ULL)),
      Value(static_cast<long long>(-9223372036854775807LL - 1)),
      Value(4.0),
      Value(12.5),
      Value(1e16),
      Value(1e-05),
      Value("grüße, 世界, 🧂"),
      Value(nul_text),
      Value::EmptyList(),
      Value::EmptyMap(),
      J(R"({"z":1,"a":[1,2.0,"3",{"x":null}],"m":{"b":true}})"),
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    REQUIRE(s->Returner(Ret(jid, "m" + std::to_string(100 + i), values[i])).kind ==
            ReturnOutcome::Kind::kStored);
  }
  s.reset();
  auto r = OpenStore(f.path, {.access = OpenOptions::Access::kReadOnly});
  const Value got = r->GetJid(jid);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Value* entry = got.Find("m" + std::to_string(100 + i));
    REQUIRE(entry != nullptr);
    INFO("value " << i << ": " << ToJson(values[i]));
    REQUIRE(*entry->Find("return") == values[i]);
  }
  REQUIRE(got.Find("m106")->Find("return")->is_float());
  // SQLite's json functions read what we stored.
  if (f.sqlite()) {
  REQUIRE(f.Q("SELECT json_extract(full_ret, '$.return') FROM ret r JOIN minion m "
                            "ON m.id = r.minion_id WHERE m.name = 'm103'") == "9007199254740993\n");
  REQUIRE(f.Q("SELECT count(*) FROM salt_returns WHERE json_valid(full_ret)") ==
          std::to_string(values.size()) + "\n");
  } else {
    // PostgreSQL's jsonb view reads what we stored.
    REQUIRE(f.Q("SELECT full_ret -> 'return' FROM salt_returns WHERE id = 'm103'") == "9007199254740993\n");
  }
}

TEST_CASE("store: a 5 MB return round-trips byte-exact", "[store]") {
  Fixture f;
  auto s = f.Open();
  std::string big;
  big.reserve(5 << 20);
  for (int i = 0; big.size() < (5u << 20); ++i) big += "line " + std::to_string(i) + " \"quoted\" \t ü\n";
  const std::string jid = "20240101120000000005";
  REQUIRE(s->Returner(Ret(jid, "big", big)).kind == ReturnOutcome::Kind::kStored);
  const Value got = s->GetJid(jid);
  REQUIRE(got.Find("big")->Find("return")->as_string() == big);
}

TEST_CASE("store: archived return events share the return's payload", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000006";
  Value ret = Ret(jid, "m1", "hello");
  auto outcome = s->Returner(ret);
  REQUIRE(outcome.kind == ReturnOutcome::Kind::kStored);
  // Salt 2014 fires every return twice: the bare jid tag and the ret tag, with different stamps.
  Value bare = ret;
  bare.Set("_stamp", "2024-01-01T12:00:01.000099");
  auto repeat = s->Returner(bare);
  REQUIRE(repeat.kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(repeat.stamp_differs);
  std::vector<Event> events;
  events.push_back({.tag = jid, .data = bare, .received = kT0, .same_as_return = repeat.id, .own_stamp = true});
  events.push_back({.tag = "salt/job/" + jid + "/ret/m1", .data = ret, .received = kT0, .same_as_return = outcome.id});
  events.push_back({.tag = "salt/auth", .data = J(R"({"act":"accept","id":"m1","result":true})"), .received = kT0});
  s->EventReturn(events);

  // The payload is stored once: in ret. Events keep references.
  REQUIRE(f.Q("SELECT count(*) FROM event WHERE data IS NULL") == "2\n");
  REQUIRE(f.Q("SELECT tag FROM event ORDER BY id") == jid + "\nNULL\nsalt/auth\n");
  // The view gives Salt's columns back exactly.
  const std::string view = f.Q("SELECT tag, " + f.JsonEq("data", ToJson(bare)) + ", " + f.JsonEq("data", ToJson(ret)) +
                               ", master_id FROM salt_events ORDER BY id");
  REQUIRE(view == jid + "|1|0|salt_master\n" + "salt/job/" + jid + "/ret/m1|0|1|salt_master\nsalt/auth|0|0|salt_master\n");
  REQUIRE(f.Q("SELECT " + f.JsonEq("data", R"({"act":"accept","id":"m1","result":true})") +
              " FROM salt_events WHERE tag = 'salt/auth'") == "1\n");
  // Arrival order is kept even when events arrive in the same microsecond.
  REQUIRE(f.Q("SELECT count(DISTINCT id) FROM event") == "3\n");
  REQUIRE(f.Q("SELECT alter_time FROM salt_events LIMIT 1") ==
          (f.sqlite() ? "2024-01-01 12:00:00.000\n" : "2024-01-01 12:00:00+00\n"));
}

TEST_CASE("store: a batch's archived events keep their order, show to reads and to a replaced return inside the "
          "batch, and go with a rollback",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  auto archived = [&] {
    std::vector<std::string> got;
    s->ForEachEvent(std::nullopt, std::nullopt, [&](brine::store::ArchivedEvent&& e) { got.push_back(e.tag); });
    return got;
  };
  // One call per event, as brine-master files them; 100 is more than one
  // statement's worth where the backend inserts several at once.
  std::vector<std::string> want;
  auto archive = [&](int n) {
    want.clear();
    for (int i = 0; i < n; ++i) {
      want.push_back("t/" + std::to_string(i));
      std::vector<Event> one{{.tag = want.back(), .data = J(R"({"i":1})"), .received = kT0}};
      s->EventReturn(one);
    }
  };
  {
    auto batch = s->BeginBatch();
    archive(100);
    REQUIRE(archived() == want);  // a read inside the batch sees every one, in order
  }  // not committed: rolled back
  REQUIRE(archived().empty());

  const std::string jid = "20240101120000000009";
  const Value whole = Ret(jid, "m1", Value::Map({{"big", std::string(100, 'x')}}));
  const Value trimmed = Ret(jid, "m1", Value::Map({{"big", "VALUE_TRIMMED"}}));
  {
    auto batch = s->BeginBatch();
    archive(100);
    // An event sharing a trimmed return's payload, then the whole return,
    // all in the batch: the event keeps what was sent.
    const auto first = s->Returner(trimmed);
    REQUIRE(first.kind == ReturnOutcome::Kind::kStored);
    std::vector<Event> shared{{.tag = "salt/job/" + jid + "/ret/m1", .data = trimmed, .received = kT0,
                               .same_as_return = first.id}};
    s->EventReturn(shared);
    REQUIRE(s->Returner(whole).kind == ReturnOutcome::Kind::kCompleted);
    batch.Commit();
  }
  want.push_back("salt/job/" + jid + "/ret/m1");
  REQUIRE(archived() == want);
  REQUIRE(f.Q("SELECT " + f.JsonEq("data", ToJson(trimmed)) + " FROM salt_events WHERE tag LIKE 'salt/job/%'") ==
          "1\n");
  REQUIRE(f.Q("SELECT count(DISTINCT id) FROM event") == "101\n");
}

TEST_CASE("store: a return Salt trimmed for its bus gives way to the whole one, and is no duplicate",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000007";
  Value whole = Ret(jid, "m1", Value::Map({{"big", std::string(100, 'x')}, {"small", 1}}));
  Value trimmed = Ret(jid, "m1", Value::Map({{"big", "VALUE_TRIMMED"}, {"small", 1}}));
  // The trimmed event first (event_return), then the returner's whole load.
  const auto first = s->Returner(trimmed);
  REQUIRE(first.kind == ReturnOutcome::Kind::kStored);
  std::vector<Event> events{{.tag = "salt/job/" + jid + "/ret/m1", .data = trimmed, .received = kT0,
                             .same_as_return = first.id}};
  s->EventReturn(events);
  const auto second = s->Returner(whole);
  REQUIRE(second.kind == ReturnOutcome::Kind::kCompleted);
  REQUIRE(second.id == first.id);
  REQUIRE(ToJson(s->GetJid(jid)) == R"({"m1":{"return":{"big":")" + std::string(100, 'x') +
                                        R"(","small":1},"retcode":0,"success":true}})");
  // The archive still holds the event as it was sent.
  REQUIRE(f.Q("SELECT tag, " + f.JsonEq("data", ToJson(trimmed)) + " FROM salt_events") ==
          "salt/job/" + jid + "/ret/m1|1\n");
  REQUIRE(f.Q("SELECT count(*) FROM ret") == "1\n");

  // The other order: the whole one stays, the trimmed copy is not stored.
  const std::string jid2 = "20240101120000000008";
  whole.Set("jid", jid2);
  trimmed.Set("jid", jid2);
  REQUIRE(s->Returner(whole).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(s->Returner(trimmed).kind == ReturnOutcome::Kind::kTrimmedCopy);
  REQUIRE(ToJson(s->GetJid(jid2)) == ToJson(s->GetJid(jid)));
  // Two different whole payloads are still a conflict.
  Value other = whole;
  other.Set("return", "different");
  REQUIRE(s->Returner(other).kind == ReturnOutcome::Kind::kConflict);
}

TEST_CASE("store: job metadata comes from the publish or the first return with a dict", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000007";
  s->SaveLoad(jid, J(R"({"fun":"state.apply","tgt":"web*"})"), Strings({"web1"}));
  Value r = Ret(jid, "web1", true);
  r.Set("metadata", J(R"({"ticket":"OPS-1"})"));
  REQUIRE(s->Returner(r).kind == ReturnOutcome::Kind::kStored);
  brine::store::JobFilter filter;
  filter.metadata = J(R"({"ticket":"OPS-1"})");
  auto jobs = s->GetJids(filter);
  REQUIRE(jobs.size() == 1);
  REQUIRE(ToJson(jobs[0].metadata) == R"({"ticket":"OPS-1"})");
  filter.metadata = J(R"({"ticket":"OPS-2"})");
  REQUIRE(s->GetJids(filter).empty());
}

TEST_CASE("store: a batch commits many writes at once and rolls back when dropped", "[store]") {
  Fixture f;
  auto s = f.Open();
  {
    auto batch = s->BeginBatch();
    for (int i = 0; i < 100; ++i) {
      const std::string jid = brine::FormatJid(kT0 + std::chrono::seconds(i));
      s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1"}));
      REQUIRE(s->Returner(Ret(jid, "m1", i)).kind == ReturnOutcome::Kind::kStored);
    }
    batch.Commit();
  }
  {
    auto batch = s->BeginBatch();
    s->SaveLoad("20300101000000000000", J(R"({"fun":"x"})"), std::nullopt);
    REQUIRE_THROWS_AS(s->BeginBatch(), brine::store::StoreError);
  }  // dropped: rolled back
  REQUIRE(s->GetJids({}).size() == 100);
  REQUIRE(s->GetLoad("20300101000000000000") == Value::EmptyMap());
  // The store stays usable after a rollback it was asked for.
  s->SaveLoad("20300101000000000001", J(R"({"fun":"y"})"), std::nullopt);
  REQUIRE(s->GetJids({}).size() == 101);
}

TEST_CASE("store: a failed commit loses nothing once the batch is replayed", "[store][sqlite]") {
  Fixture f;
  // A page limit makes the store fail the way a full disk does.
  auto opts = f.Options();
  {
    auto s = OpenStore(f.path, opts);
  }
  const auto pages = std::stoll(f.Q("PRAGMA page_count"));
  opts.sqlite.max_page_count = pages + 20;
  std::string payload(3000, 'p');
  std::vector<Value> batch_loads;
  for (int i = 0; i < 200; ++i) batch_loads.push_back(Ret(brine::FormatJid(kT0 + std::chrono::seconds(i)), "m1", payload));

  auto s = OpenStore(f.path, opts);
  bool failed = false;
  try {
    auto batch = s->BeginBatch();
    for (const Value& r : batch_loads) (void)s->Returner(r);
    batch.Commit();
  } catch (const brine::store::WriteFailedError& e) {
    failed = true;
    INFO(e.what());
  }
  REQUIRE(failed);
  // The store refuses writes until reopened.
  REQUIRE_THROWS_AS(s->SaveMinions("20240101000000000000", Strings({"x"}), std::nullopt), brine::store::StoreError);
  s.reset();
  REQUIRE(f.Q("PRAGMA integrity_check") == "ok\n");
  // Space comes back (the quota is lifted); the caller reopens and replays the same batch.
  opts.sqlite.max_page_count = 0;
  s = OpenStore(f.path, opts);
  {
    auto batch = s->BeginBatch();
    for (const Value& r : batch_loads) REQUIRE(s->Returner(r).kind == ReturnOutcome::Kind::kStored);
    batch.Commit();
  }
  REQUIRE(f.Q("SELECT count(*) FROM salt_returns") == "200\n");
}

TEST_CASE("store: a reader sees committed batches while a writer is mid-batch, never busy", "[store]") {
  Fixture f;
  auto w = f.Open();
  std::atomic<int> committed{0};
  std::atomic<bool> done{false};
  std::atomic<int> reader_errors{0};
  std::atomic<int> stale{0};
  brine::test::JoiningThread reader([&] {
    auto r = OpenStore(f.path, {.access = OpenOptions::Access::kReadOnly});
    while (!done) {
      try {
        const int floor = committed.load();
        const auto n = static_cast<int>(r->GetJids({}).size());
        if (n < floor) ++stale;
      } catch (const std::exception&) {
        ++reader_errors;
      }
    }
  }, [&] { done = true; });
  for (int b = 0; b < 30; ++b) {
    auto batch = w->BeginBatch();
    for (int i = 0; i < 50; ++i) {
      const std::string jid = brine::FormatJid(kT0 + std::chrono::seconds(b * 100 + i));
      w->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1", "m2"}));
      (void)w->Returner(Ret(jid, "m1", b));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the reader runs while the batch is open
    batch.Commit();
    committed = (b + 1) * 50;
  }
  done = true;
  reader.Join();
  REQUIRE(reader_errors == 0);
  REQUIRE(stale == 0);
  REQUIRE(w->GetJids({}).size() == 1500);
}

TEST_CASE("store: a second writer's first batch waits for the lock instead of failing after another commit",
          "[store]") {
  // brine-run's writers (brine.import_local_cache) open a store beside a
  // running brine-master. Opening must leave no statement holding a read
  // snapshot: BEGIN IMMEDIATE on a stale snapshot is SQLITE_BUSY_SNAPSHOT at
  // once, without the busy handler, and every retry fails the same way.
  Fixture f;
  auto late = f.Open();
  auto master = f.Open();
  {
    auto batch = master->BeginBatch();
    master->SaveLoad("20240101120000000001", J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1"}));
    batch.Commit();
  }
  auto batch = late->BeginBatch();
  late->SaveLoad("20240101120000000002", J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1"}));
  batch.Commit();
  REQUIRE(master->GetJids({}).size() == 2);
}

// [sqlite]: 120,000 returns take minutes on PostgreSQL (one round trip each);
// postgres_writes.cpp bounds its cache the same way, untested there.
TEST_CASE("store: more distinct minions than the name cache holds still get one row each", "[store][sqlite]") {
  // The minion-name cache starts again past 100,000 names (issue 14: it grew
  // without bound); names it forgot are looked up, never inserted twice.
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000000";
  s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  constexpr int kMinions = 120000;
  {
    auto batch = s->BeginBatch();
    for (int i = 0; i < kMinions; ++i) (void)s->Returner(Ret(jid, "m" + std::to_string(i), i));
    // The first names again, after the cache was cleared: the same rows.
    for (int i = 0; i < 10; ++i) {
      REQUIRE(s->Returner(Ret(jid, "m" + std::to_string(i), i)).kind == brine::store::ReturnOutcome::Kind::kRepeat);
    }
    batch.Commit();
  }
  REQUIRE(f.Q("SELECT count(*), count(DISTINCT name) FROM minion") ==
          std::to_string(kMinions) + "|" + std::to_string(kMinions) + "\n");
}

TEST_CASE("store: read-only stores refuse writes", "[store]") {
  Fixture f;
  { auto s = f.Open(); }
  auto r = OpenStore(f.path, {.access = OpenOptions::Access::kReadOnly});
  REQUIRE_THROWS_AS(r->SaveMinions("20240101000000000000", Strings({"x"}), std::nullopt), brine::store::StoreError);
  REQUIRE_THROWS_AS(r->BeginBatch(), brine::store::StoreError);
}

TEST_CASE("store: counters commit with their batch and read back per master", "[store]") {
  Fixture f;
  auto s = f.Open();
  {
    auto batch = s->BeginBatch();
    s->PutCounters({{"received", 10}, {"stored", 9}, {"quarantined", 1}});
    batch.Commit();
  }
  {
    auto batch = s->BeginBatch();
    s->PutCounters({{"received", 99}});
  }  // rolled back: the counters stay as committed
  auto r = OpenStore(f.path, {.access = OpenOptions::Access::kReadOnly});
  REQUIRE(ToJson(r->GetCounters()) == R"({"salt_master":{"quarantined":1,"received":10,"stored":9}})");
}
