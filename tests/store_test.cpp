// The returner layer against a real SQLite file in a fresh temp dir (or, under
// ctest store:postgresql, a private PostgreSQL server): migrations, the schema,
// and the reads (get_load, get_jid, get_jids, get_fun, ForEachReturnJson).
// store_writes_test.cpp and store_maintenance_test.cpp hold the rest.
#include <SQLiteCpp/Database.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <catch2/catch.hpp>

#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/golden.h"
#include "support/master_process.h"
#include "support/store_fixture.h"

using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::store::OpenOptions;
using brine::store::OpenStore;
using brine::store::ReturnOutcome;
using brine::store::Store;
using namespace brine::test::store_fixture;

TEST_CASE("store: migrations apply to a fresh file and re-opening is a no-op", "[store][sqlite]") {
  Fixture f;
  { auto s = f.Open(); REQUIRE(s->SchemaVersion() == brine::store::LatestSchemaVersion()); }
  const std::string before = f.Q("SELECT type, name, sql FROM sqlite_schema ORDER BY name");
  { auto s = f.Open(); REQUIRE(s->SchemaVersion() == brine::store::LatestSchemaVersion()); }
  REQUIRE(f.Q("SELECT type, name, sql FROM sqlite_schema ORDER BY name") == before);
  // auto_vacuum can only be set before the first table: check it took.
  REQUIRE(f.Q("PRAGMA auto_vacuum") == "2\n");
  REQUIRE(f.Q("PRAGMA journal_mode") == "wal\n");
}

TEST_CASE("store: a database from a newer brine is refused naming both versions", "[store][sqlite]") {
  Fixture f;
  { auto s = f.Open(); }
  {
    SQLite::Database d(f.path.string(), SQLite::OPEN_READWRITE);
    d.exec("PRAGMA user_version = 99");
  }
  const auto latest = std::to_string(brine::store::LatestSchemaVersion());
  try {
    auto s = f.Open();
    FAIL("opened a too-new store");
  } catch (const brine::store::TooNewError& e) {
    const std::string what = e.what();
    CHECK(what.find("99") != std::string::npos);
    CHECK(what.find(latest) != std::string::npos);
  }
  // Read-only opens refuse too, and neither touched the file.
  REQUIRE_THROWS_AS(OpenStore(f.path, {.access = OpenOptions::Access::kReadOnly}),
                    brine::store::TooNewError);
  REQUIRE(f.Q("PRAGMA user_version") == "99\n");
}

TEST_CASE("store: a file that is not a brine store is refused and left alone", "[store][sqlite]") {
  Fixture f;
  {
    SQLite::Database d(f.path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    d.exec("CREATE TABLE other (x)");
  }
  REQUIRE_THROWS_AS(f.Open(), brine::store::FatalError);
  REQUIRE(f.Q("SELECT name FROM sqlite_schema") == "other\n");
  std::ofstream(f.dir / "garbage.sqlite") << std::string(8192, 'x');
  REQUIRE_THROWS_AS(OpenStore(f.dir / "garbage.sqlite", f.Options()), brine::store::FatalError);
  REQUIRE_THROWS_AS(OpenStore(f.dir / "missing.sqlite", {.access = OpenOptions::Access::kReadOnly}),
                    brine::store::StoreError);
}

TEST_CASE("store: the schema after all migrations matches the golden file", "[store][golden][sqlite]") {
  Fixture f;
  { auto s = f.Open(); }
  const std::string schema = f.Q("SELECT type, name, sql FROM sqlite_schema ORDER BY name");
  const std::string diff = brine::test::CheckGolden("schema.txt", schema);
  INFO(diff);
  REQUIRE(diff.empty());
}

TEST_CASE("store: unknown jids give empty answers, not errors", "[store]") {
  Fixture f;
  auto s = f.Open();
  REQUIRE(s->GetLoad("20240101120000123456") == Value::EmptyMap());
  REQUIRE(s->GetJid("20240101120000123456") == Value::EmptyMap());
  REQUIRE(s->GetJidFull("nope") == Value::EmptyMap());
  REQUIRE_FALSE(s->GetEndtime("20240101120000123456").has_value());
  REQUIRE(s->GetJids({}).empty());
  REQUIRE(s->GetMinions().empty());
  REQUIRE(s->GetFun("test.ping") == Value::EmptyMap());
}

TEST_CASE("store: the spec's worked example gives local_cache's get_load and get_jid", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000123456";
  REQUIRE(s->PrepJid(Store::Caching::kCache, jid) == jid);
  const Value load = J(R"({"cmd":"publish","tgt":"*","fun":"test.ping","arg":[],"tgt_type":"glob",)"
                       R"("ret":"","jid":"20240101120000123456","kwargs":{"show_jid":false},"user":"root"})");
  s->SaveLoad(jid, load, Strings({"web2", "web1"}));
  const ReturnOutcome out = s->Returner(Ret(jid, "web1", true));
  REQUIRE(out.kind == ReturnOutcome::Kind::kStored);
  REQUIRE(out.jid == jid);

  Value expected_load = load;
  expected_load.Set("Minions", Value::List({"web1", "web2"}));
  REQUIRE(s->GetLoad(jid) == expected_load);
  REQUIRE(ToJson(s->GetJid(jid)) == R"({"web1":{"return":true,"retcode":0,"success":true}})");
  REQUIRE(s->GetMinions() == Strings({"web1"}));
  // The missing minion is a query.
  REQUIRE(f.Q("SELECT jid, minion FROM jid_missing") == jid + "|web2\n");
}

// On PostgreSQL the order is the backend's own sort (no ORDER BY on the
// server, which sorted whole returns): minions first heard of in another
// order than their names' get ids in that order, which is the index's.
TEST_CASE("store: get_jid, get_jid_full and ForEachReturnJson list minions in the byte order of their names, not in "
          "arrival order",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000042";
  s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*","jid":"20240101120000000042"})"), Strings({}));
  for (const char* m : {"web2", "\xc3\xa9" "clair", "web10", "Web1", "_x", "web1"}) {
    REQUIRE(s->Returner(Ret(jid, m, true)).kind == ReturnOutcome::Kind::kStored);
  }
  const std::vector<std::string> expected = {"Web1", "_x", "web1", "web10", "web2", "\xc3\xa9" "clair"};
  for (const Value& v : {s->GetJid(jid), s->GetJidFull(jid)}) {
    std::vector<std::string> keys;
    for (const auto& [k, _] : v.as_map()) keys.push_back(k);
    CHECK(keys == expected);
  }
  // The texts are the stored return loads, as GetJidFull parses them.
  const Value full = s->GetJidFull(jid);
  std::vector<std::string> names;
  s->ForEachReturnJson(jid, [&](std::string_view minion, std::string_view text) {
    names.emplace_back(minion);
    CHECK(ParseJson(text) == *full.Find(minion));
  });
  CHECK(names == expected);
}

// On PostgreSQL the names are read after the returns, by one range of
// minion ids when the job's minions are most of it, else by a list of ids
// (postgres_reads.cpp, NamesOf): both are taken here, a wrong name or a
// missing one fails the case.
TEST_CASE("store: each return comes back under its own minion's name when the job's minions are a few of many, "
          "side by side or spread out",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  auto name = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "m%03d", i);
    return std::string(buf);
  };
  // 300 minions known to the store, in this order.
  const std::string all = "20240101120000000050";
  s->SaveLoad(all, J(R"({"fun":"test.ping","tgt":"*","jid":"20240101120000000050"})"), Strings({}));
  for (int i = 0; i < 300; ++i) REQUIRE(s->Returner(Ret(all, name(i), name(i))).kind == ReturnOutcome::Kind::kStored);
  auto check = [&](const std::string& jid, const std::vector<int>& minions) {
    s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*","jid":")" + jid + R"("})"), Strings({}));
    // Sent in reverse, so that neither ids nor arrival give the order.
    for (auto it = minions.rbegin(); it != minions.rend(); ++it) {
      REQUIRE(s->Returner(Ret(jid, name(*it), "from " + name(*it))).kind == ReturnOutcome::Kind::kStored);
    }
    std::vector<std::string> expected;
    for (int i : minions) expected.push_back(name(i));
    std::sort(expected.begin(), expected.end());
    std::vector<std::string> got;
    s->ForEachReturnJson(jid, [&](std::string_view minion, std::string_view text) {
      got.emplace_back(minion);
      const Value full = ParseJson(text);
      CHECK(*full.FindString("id") == minion);
      CHECK(*full.FindString("return") == "from " + std::string(minion));
    });
    CHECK(got == expected);
    std::vector<std::string> keys;
    const Value returns = s->GetJid(jid);
    for (const auto& [k, v] : returns.as_map()) {
      keys.push_back(k);
      CHECK(*v.FindString("return") == "from " + k);
    }
    CHECK(keys == expected);
  };
  check("20240101120000000051", {40, 42, 43, 47, 51, 60, 61, 62, 80});  // side by side, with others between
  check("20240101120000000052", {3, 150, 299});                         // spread over the 300
}

TEST_CASE("store: ForEachReturnJson hands out one return, nothing for an unknown jid, and the caller's failure as itself",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  std::vector<std::string> names;
  // One return (handed out as the database holds it) and an unknown jid.
  const std::string one = "20240101120000000044";
  REQUIRE(s->Returner(Ret(one, "solo", "alone")).kind == ReturnOutcome::Kind::kStored);
  const Value solo = *s->GetJidFull(one).Find("solo");
  s->ForEachReturnJson(one, [&](std::string_view minion, std::string_view text) {
    names.emplace_back(minion);
    CHECK(ParseJson(text) == solo);
  });
  CHECK(names == std::vector<std::string>{"solo"});
  s->ForEachReturnJson("20240101120000000045", [](std::string_view, std::string_view) { FAIL("no returns"); });
  // The caller's own failure comes back as itself, not as a StoreError, and
  // ends the read: later returns are not handed out.
  const std::string jid = "20240101120000000043";
  for (const char* m : {"web2", "web1"}) REQUIRE(s->Returner(Ret(jid, m, true)).kind == ReturnOutcome::Kind::kStored);
  struct Mine {};
  int calls = 0;
  CHECK_THROWS_AS(s->ForEachReturnJson(jid,
                                       [&](std::string_view, std::string_view) {
                                         ++calls;
                                         throw Mine{};
                                       }),
                  Mine);
  CHECK(calls == 1);
}

TEST_CASE("store: the first return from a minion wins and repeats are classified", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000001";
  s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*","jid":"20240101120000000001"})"), Strings({"m1"}));
  Value first = Ret(jid, "m1", "first");
  REQUIRE(s->Returner(first).kind == ReturnOutcome::Kind::kStored);

  Value same = first;
  auto again = s->Returner(same);
  REQUIRE(again.kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE_FALSE(again.stamp_differs);

  Value restamped = first;
  restamped.Set("_stamp", "2024-01-01T12:00:09.999999");
  again = s->Returner(restamped);
  REQUIRE(again.kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(again.stamp_differs);

  Value other = Ret(jid, "m1", "second");
  REQUIRE(s->Returner(other).kind == ReturnOutcome::Kind::kConflict);
  REQUIRE(ToJson(s->GetJid(jid).Find("m1")->as_map()[0].second) == R"("first")");
  REQUIRE(f.Q("SELECT count(*) FROM salt_returns") == "1\n");
}

TEST_CASE("store: find_same_return names a stored return with the same payload apart from _stamp, writing nothing",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101120000000002";
  Value first = Ret(jid, "m1", "first");
  REQUIRE_FALSE(s->FindSameReturn(first).has_value());  // nothing stored yet
  REQUIRE(f.Q("SELECT count(*) FROM jids") == "0\n");  // and the lookup created no job
  const ReturnOutcome stored = s->Returner(first);
  REQUIRE(stored.kind == ReturnOutcome::Kind::kStored);

  auto same = s->FindSameReturn(first);
  REQUIRE(same.has_value());
  REQUIRE(same->kind == ReturnOutcome::Kind::kRepeat);
  REQUIRE(same->id == stored.id);
  REQUIRE(same->jid == jid);
  REQUIRE_FALSE(same->stamp_differs);

  Value restamped = first;
  restamped.Set("_stamp", "2024-01-01T12:00:09.999999");
  {
    auto batch = s->BeginBatch();  // also inside a batch
    same = s->FindSameReturn(restamped);
    batch.Commit();
  }
  REQUIRE(same.has_value());
  REQUIRE(same->stamp_differs);

  REQUIRE_FALSE(s->FindSameReturn(Ret(jid, "m1", "second")).has_value());  // another payload
  REQUIRE_FALSE(s->FindSameReturn(Ret(jid, "m2", "first")).has_value());   // another minion
  REQUIRE(f.Q("SELECT count(*) FROM salt_returns") == "1\n");
}

TEST_CASE("store: row counts count jobs and archived events", "[store]") {
  Fixture f;
  auto s = f.Open();
  s->SaveLoad("20240101120000000003", J(R"({"fun":"test.ping","jid":"20240101120000000003"})"), std::nullopt);
  std::vector<brine::store::Event> events;
  events.push_back({.tag = "test/a", .data = J(R"({"a":1})"), .received = kT0});
  events.push_back({.tag = "test/b", .data = J(R"({"b":2})"), .received = kT0});
  s->EventReturn(events);
  const auto counts = s->CountRows();
  REQUIRE(counts.jobs == 1);
  REQUIRE(counts.events == 2);
}

TEST_CASE("store: get_jids filters by jid window, function, target and limit in jid order", "[store]") {
  Fixture f;
  auto s = f.Open();
  s->SaveLoad("20240101100000000000", J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  s->SaveLoad("20240101110000000000", J(R"({"fun":"cmd.run","tgt":"web*"})"), std::nullopt);
  s->SaveLoad("20240101120000000000", J(R"({"fun":"cmd.run","tgt":["db1","web2"],"tgt_type":"list"})"), std::nullopt);
  s->SaveLoad("20240101130000000000", J(R"({"fun":"saltutil.find_job","tgt":"*"})"), std::nullopt);
  s->SaveMinions("20240101140000000000", Strings({"x"}), std::nullopt);  // no load: not a listed job
  auto jids = [](const std::vector<brine::store::JobRecord>& v) {
    std::string out;
    for (const auto& r : v) out += r.jid.substr(8, 2) + " ";
    return out;
  };
  REQUIRE(jids(s->GetJids({})) == "10 11 12 13 ");
  REQUIRE(jids(s->GetJids({.jid_min = "20240101110000000000", .jid_max = "20240101120000000000"})) == "11 12 ");
  REQUIRE(jids(s->GetJids({.function_globs = {"cmd.run"}})) == "11 12 ");
  REQUIRE(jids(s->GetJids({.function_globs = {"cmd.*", "test.pin?"}})) == "10 11 12 ");
  REQUIRE(jids(s->GetJids({.target_globs = {"web2"}})) == "12 ");
  REQUIRE(jids(s->GetJids({.target_globs = {"web*"}})) == "11 12 ");
  REQUIRE(jids(s->GetJids({.limit = 2})) == "12 13 ");
  // A listing can have the load and metadata as JSON text instead.
  const auto text = s->GetJids({.jid_min = "20240101120000000000", .json_text = true});
  REQUIRE(text.size() == 2);
  REQUIRE(text[0].load_json == R"({"fun":"cmd.run","tgt":["db1","web2"],"tgt_type":"list"})");
  REQUIRE(text[0].load.is_null());
  REQUIRE(!text[0].metadata_json);
  // ForEachJob hands out the same records one at a time, and a failure of the
  // caller's own reaches the caller as it was thrown, not as a store error.
  std::string seen;
  s->ForEachJob({.limit = 3}, [&](brine::store::JobRecord&& r) { seen += r.jid.substr(8, 2) + " "; });
  REQUIRE(seen == "11 12 13 ");
  int calls = 0;
  REQUIRE_THROWS_AS(s->ForEachJob({}, [&](brine::store::JobRecord&&) {
                      ++calls;
                      throw std::out_of_range("caller");
                    }),
                    std::out_of_range);
  REQUIRE(calls == 1);
  REQUIRE(jids(s->GetJids({})) == "10 11 12 13 ");  // the store still answers
  REQUIRE(jids(s->GetJidsFilter(3, Store::FindJobs::kDrop)) == "10 11 12 ");
  REQUIRE(jids(s->GetJidsFilter(2, Store::FindJobs::kKeep)) == "12 13 ");
  // Glob text is never SQL.
  REQUIRE(s->GetJids({.function_globs = {"' OR 1=1 --"}}).empty());
  REQUIRE(s->GetJids({.function_globs = {"%"}}).empty());
}

TEST_CASE("store: get_fun gives each minion's newest return for a function", "[store]") {
  Fixture f;
  auto s = f.Open();
  s->SaveLoad("20240101100000000000", J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  s->SaveLoad("20240101110000000000", J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  REQUIRE(s->Returner(Ret("20240101100000000000", "a", "old")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(s->Returner(Ret("20240101110000000000", "a", "new")).kind == ReturnOutcome::Kind::kStored);
  REQUIRE(s->Returner(Ret("20240101100000000000", "b", "only")).kind == ReturnOutcome::Kind::kStored);
  const Value fun = s->GetFun("test.ping");
  REQUIRE(*fun.Find("a")->FindString("return") == "new");
  REQUIRE(*fun.Find("b")->FindString("return") == "only");
  REQUIRE(fun.Find("a")->FindString("cmd") != nullptr);  // the full return load
}

TEST_CASE("store: endtime is stored and read back", "[store]") {
  Fixture f;
  auto s = f.Open();
  s->UpdateEndtime("20240101100000000000", "2024, Jan 01 10:00:03.114477");
  REQUIRE(s->GetEndtime("20240101100000000000") == std::optional<std::string>("2024, Jan 01 10:00:03.114477"));
}
