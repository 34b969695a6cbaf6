// The returner layer against a real SQLite file in a fresh temp dir.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <catch2/catch.hpp>
#include <thread>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/golden.h"
#include "support/joining_thread.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

using brine::FakeClock;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::store::Event;
using brine::store::OpenOptions;
using brine::store::OpenStore;
using brine::store::ReturnOutcome;
using brine::store::Store;
using brine::test::PostgresServer;
using brine::test::TempDir;

namespace {

const brine::Micros kT0 = brine::FromUnixMicros(1704110400000000);  // 2024-01-01 12:00:00 UTC

Value J(const std::string& text) { return ParseJson(text); }

// A return load as a minion sends it.
Value Ret(const std::string& jid, const std::string& minion, Value ret_value, int retcode = 0) {
  Value r = Value::EmptyMap();
  r.Set("fun_args", Value::EmptyList());
  r.Set("jid", jid);
  r.Set("return", std::move(ret_value));
  r.Set("retcode", retcode);
  r.Set("success", retcode == 0);
  r.Set("cmd", "_return");
  r.Set("_stamp", "2024-01-01T12:00:01.000001");
  r.Set("fun", "test.ping");
  r.Set("id", minion);
  return r;
}

std::vector<std::string> Strings(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

// The suite runs on SQLite, and on PostgreSQL when BRINE_TEST_BACKEND is
// "postgresql" (ctest's store:postgresql runs it so, leaving out the cases
// tagged [sqlite], which test what only SQLite has).
bool OnPostgres() {
  const char* backend = std::getenv("BRINE_TEST_BACKEND");
  return backend != nullptr && std::string(backend) == "postgresql";
}

struct Fixture {
  TempDir dir;
  FakeClock clock{kT0};
  // A SQLite file, or a fresh database on this process's PostgreSQL server.
  std::filesystem::path path = OnPostgres() ? std::filesystem::path(PostgresServer::Shared().CreateDatabase())
                                            : dir / "brine.sqlite";
  [[nodiscard]] bool sqlite() const { return !OnPostgres(); }
  // Runs SQL on the store's database: rows a line, fields separated by '|'.
  [[nodiscard]] std::string Q(const std::string& sql) const {
    return sqlite() ? brine::test::Sql(path, sql) : PostgresServer::Shared().Query(path.native(), sql);
  }
  OpenOptions Options() {
    OpenOptions o;
    o.clock = &clock;
    o.master_id = "salt_master";
    return o;
  }
  std::unique_ptr<Store> Open() { return OpenStore(path, Options()); }
  // An SQL expression that is 1 when `column` holds the JSON `json`, else 0
  // (text on SQLite; on PostgreSQL the views are jsonb, which compares by value).
  [[nodiscard]] std::string JsonEq(const std::string& column, const std::string& json) const {
    std::string quoted;
    for (char c : json) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return sqlite() ? "(" + column + " = '" + quoted + "')" : "(" + column + " = '" + quoted + "'::jsonb)::int";
  }
};

}  // namespace

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

TEST_CASE("store: retention deletes old jobs, returns and events and nothing else", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string old_jid = "20231231120000000000";
  const std::string new_jid = "20240101115900000000";
  // Arrival order is the archive's order: the old event arrives first.
  std::vector<Event> old_event{{.tag = "salt/auth", .data = J(R"({"id":"m1"})"), .received = kT0 - std::chrono::hours(48)}};
  s->EventReturn(old_event);
  for (const auto& jid : {old_jid, new_jid}) {
    s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1", "m2"}));
    auto out = s->Returner(Ret(jid, "m1", jid));
    std::vector<Event> ev;
    ev.push_back({.tag = "salt/job/" + jid + "/ret/m1", .data = Ret(jid, "m1", jid), .received = kT0, .same_as_return = out.id});
    s->EventReturn(ev);
  }
  s->Quarantine("junk", "no tag terminator", kT0 - std::chrono::hours(48));

  const auto cut = kT0 - std::chrono::hours(1);
  auto result = s->CleanOldJobs(cut, cut, 5000);
  REQUIRE(result.jobs == 1);
  REQUIRE(result.returns == 1);
  REQUIRE(result.events == 1);
  REQUIRE(result.quarantined == 1);
  REQUIRE_FALSE(result.more);
  REQUIRE(s->GetLoad(old_jid) == Value::EmptyMap());
  REQUIRE(s->GetJid(old_jid) == Value::EmptyMap());
  REQUIRE(s->GetJid(new_jid).as_map().size() == 1);
  REQUIRE(f.Q("SELECT count(*) FROM job_minion") == "2\n");
  // The old job's archived return event keeps its data, now stored on its own.
  REQUIRE(f.Q("SELECT tag, " + f.JsonEq("data", ToJson(Ret(old_jid, "m1", old_jid))) +
              " FROM salt_events WHERE tag LIKE '%" + old_jid + "%'") ==
          "salt/job/" + old_jid + "/ret/m1|1\n");
  REQUIRE(f.Q("SELECT count(*) FROM salt_events") == "2\n");
  // A row budget stops early and says so.
  for (int i = 0; i < 10; ++i) s->SaveLoad(brine::FormatJid(kT0 - std::chrono::hours(30) + std::chrono::seconds(i)), J(R"({"fun":"x"})"), std::nullopt);
  result = s->CleanOldJobs(cut, std::nullopt, 4);
  REQUIRE(result.jobs == 4);
  REQUIRE(result.more);
  REQUIRE(s->CleanOldJobs(cut, std::nullopt, 5000).jobs == 6);
}

TEST_CASE("store: retention ages a jid that is not a time by when it was first seen, numeric or not", "[store]") {
  Fixture f;
  auto s = f.Open();  // the fake clock stands at kT0: every job below is first seen then
  const std::vector<std::string> odd = {"12345", "0", "myjob", "20241399000000000000", "2024010112000000000x"};
  for (const auto& jid : odd) {
    s->SaveLoad(jid, J(R"({"fun":"test.ping","tgt":"*"})"), Strings({"m1"}));
    (void)s->Returner(Ret(jid, "m1", 1));
  }
  const std::string real_old = "20231231120000000000";
  s->SaveLoad(real_old, J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  // A day's retention an hour after they arrived: only the real old jid goes.
  auto result = s->CleanOldJobs(kT0 - std::chrono::hours(23), std::nullopt, 5000);
  REQUIRE(result.jobs == 1);
  REQUIRE(s->GetLoad(real_old) == Value::EmptyMap());
  for (const auto& jid : odd) {
    INFO(jid);
    REQUIRE(s->GetJid(jid).as_map().size() == 1);
  }
  // Once they are older than the cut by first sight, they go too.
  result = s->CleanOldJobs(kT0 + std::chrono::seconds(1), std::nullopt, 5000);
  REQUIRE(result.jobs == static_cast<std::int64_t>(odd.size()));
  for (const auto& jid : odd) REQUIRE(s->GetJid(jid) == Value::EmptyMap());
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

TEST_CASE("store: freed pages go back to the file system with incremental_vacuum", "[store][sqlite]") {
  Fixture f;
  auto s = f.Open();
  const std::string payload(2000, 'v');
  {
    auto batch = s->BeginBatch();
    for (int i = 0; i < 500; ++i) (void)s->Returner(Ret(brine::FormatJid(kT0 - std::chrono::hours(100) + std::chrono::seconds(i)), "m", payload));
    batch.Commit();
  }
  while (s->CleanOldJobs(kT0, std::nullopt, 5000).more) {
  }
  brine::store::StoreMaintenance* m = s->Maintenance();
  REQUIRE(m != nullptr);
  m->Checkpoint();
  const auto before = m->Space();
  REQUIRE(before.freelist_count > 100);
  m->IncrementalVacuum(before.freelist_count);
  m->Checkpoint();
  const auto after = m->Space();
  REQUIRE(after.freelist_count == 0);
  REQUIRE(after.page_count < before.page_count - 100);
  REQUIRE(std::filesystem::file_size(f.path) == static_cast<std::uintmax_t>(after.page_count * after.page_size));
}

TEST_CASE("store: maintenance is offered where the database is a file here, and Describe says where it lives",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  const brine::store::StoreLocation where = brine::store::Describe(f.path);
  if (f.sqlite()) {
    REQUIRE(s->Maintenance() != nullptr);
    CHECK(s->Maintenance()->IntegrityCheck() == "ok");
    CHECK(where.kind == brine::store::StoreLocation::Kind::kLocalFiles);
    CHECK(where.folder == f.path.parent_path());
    CHECK(where.lock_file == std::filesystem::path(f.path.string() + ".lock"));
    REQUIRE(where.files.size() == 3);
    CHECK(where.files[1] == std::filesystem::path(f.path.string() + "-wal"));
    std::error_code ec;
    const auto wal = std::filesystem::file_size(where.files[1], ec);
    CHECK(where.bytes == static_cast<std::int64_t>(std::filesystem::file_size(f.path) + (ec ? 0 : wal)));
  } else {
    // PostgreSQL keeps its own (autovacuum, checkpoints, pg_dump): nothing to ask for.
    CHECK(s->Maintenance() == nullptr);
    CHECK(where.kind == brine::store::StoreLocation::Kind::kServer);
    CHECK_FALSE(where.lock_file);
    CHECK(where.files.empty());
    CHECK_FALSE(where.bytes);
  }
}

TEST_CASE("store: a job and the events read back whole for export, in order, within their windows", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string jid = "20240101110000000000";
  f.clock.Set(kT0 - std::chrono::minutes(5));
  s->SaveCacheLoad(jid, J(R"({"cmd":"publish","fun":"test.ping","tgt":"*","jid":"20240101110000000000"})"),
                   Strings({"m2", "m1"}));
  f.clock.Set(kT0);
  const auto out = s->Returner(Ret(jid, "m2", J(R"({"big":18446744073709551615,"t":"é"})")));
  f.clock.Set(kT0 + std::chrono::seconds(1));
  (void)s->Returner(Ret(jid, "m1", true));
  s->UpdateEndtime(jid, "2024, Jan 01 12:00:02.000000");
  s->SaveLoad("20240101130000000000", J(R"({"fun":"x"})"), std::nullopt);
  Value stamped = Ret(jid, "m2", J(R"({"big":18446744073709551615,"t":"é"})"));
  stamped.Set("_stamp", "2024-01-01T12:00:09.000000");
  std::vector<Event> events{
      {.tag = "salt/auth", .data = J(R"({"id":"m1"})"), .received = kT0},
      {.tag = "salt/job/" + jid + "/ret/m2", .data = stamped, .received = kT0 + std::chrono::seconds(2),
       .same_as_return = out.id, .own_stamp = true},
      {.tag = "late", .data = J("{}"), .received = kT0 + std::chrono::hours(1)}};
  s->EventReturn(events);

  std::vector<brine::store::StoredJob> jobs;
  s->ForEachStoredJob(std::nullopt, "20240101120000000000", [&](brine::store::StoredJob&& j) { jobs.push_back(std::move(j)); });
  REQUIRE(jobs.size() == 1);
  const auto& j = jobs[0];
  CHECK(j.jid == jid);
  CHECK(j.origin == brine::store::StoredJob::Origin::kMaster);
  CHECK(J(*j.load_json) == J(R"({"cmd":"publish","fun":"test.ping","tgt":"*","jid":"20240101110000000000"})"));
  CHECK(j.minions == Strings({"m1", "m2"}));
  CHECK(j.endtime == "2024, Jan 01 12:00:02.000000");
  CHECK_FALSE(j.nocache);
  CHECK(j.seen == kT0 - std::chrono::minutes(5));
  REQUIRE(j.returns.size() == 2);
  CHECK(j.returns[0].minion == "m2");  // arrival order, not name order
  CHECK(j.returns[0].received == kT0);
  CHECK(j.returns[0].full_ret_json.find("18446744073709551615") != std::string::npos);
  CHECK(j.returns[1].minion == "m1");
  CHECK(j.returns[1].received == kT0 + std::chrono::seconds(1));

  std::vector<brine::store::ArchivedEvent> got;
  s->ForEachEvent(kT0, kT0 + std::chrono::hours(1), [&](brine::store::ArchivedEvent&& e) { got.push_back(std::move(e)); });
  REQUIRE(got.size() == 2);  // until is exclusive
  CHECK(got[0].tag == "salt/auth");
  CHECK(got[0].master_id == "salt_master");
  CHECK(got[0].received == kT0);
  CHECK(got[1].tag == "salt/job/" + jid + "/ret/m2");
  // The shared payload with the event's own _stamp, the same text on each backend.
  CHECK(got[1].data_json == ToJson(stamped));
}

TEST_CASE("store: retention by class keeps each job and event for its class's time, the first matching glob deciding",
          "[store]") {
  Fixture f;
  auto s = f.Open();
  // Jobs of 2 h, 2 days and 200 days ago, for three functions and one without a load.
  const auto jid_at = [](std::chrono::hours ago) { return brine::FormatJid(kT0 - ago); };
  for (const auto ago : {std::chrono::hours(2), std::chrono::hours(48), std::chrono::hours(4800)}) {
    s->SaveLoad(jid_at(ago) , J(R"({"fun":"saltutil.find_job","tgt":"*"})"), Strings({"m1"}));
    (void)s->Returner(Ret(jid_at(ago), "m1", true));
    s->SaveLoad(jid_at(ago + std::chrono::hours(0)) + "_1", J(R"({"fun":"state.apply","tgt":"*"})"), std::nullopt);
    s->SaveLoad(jid_at(ago) + "_2", J(R"({"fun":"test.ping","tgt":"*"})"), std::nullopt);
  }
  // Events of the same ages: auth (short), a job return (by its canonical tag), others.
  for (const auto ago : {std::chrono::hours(4800), std::chrono::hours(48), std::chrono::hours(2)}) {
    const std::string jid = jid_at(ago);
    const auto same = s->FindSameReturn(Ret(jid, "m1", true));
    REQUIRE(same);
    std::vector<Event> ev{
        {.tag = "salt/auth", .data = J(R"({"id":"m1"})"), .received = kT0 - ago},
        {.tag = "salt/job/" + jid + "/ret/m1", .data = Ret(jid, "m1", true), .received = kT0 - ago + std::chrono::seconds(1),
         .same_as_return = same->id},
        {.tag = "minion_start", .data = J("{}"), .received = kT0 - ago + std::chrono::seconds(2)}};
    s->EventReturn(ev);
  }
  brine::store::Retention r;
  r.jobs_before = kT0 - std::chrono::hours(24);
  r.jobs_by_fun = {{.glob = "saltutil.find_job", .before = kT0 - std::chrono::hours(1)},
                   {.glob = "state.*", .before = kT0 - std::chrono::hours(24 * 90)},
                   {.glob = "*", .before = std::nullopt}};  // never reached for these: the first match decides
  r.events_before = kT0 - std::chrono::hours(24);
  r.events_by_tag = {{.glob = "salt/auth", .before = kT0 - std::chrono::hours(1)},
                     {.glob = "salt/job/*/ret/*", .before = std::nullopt},
                     {.glob = "salt/[!j]*", .before = kT0}};
  const auto result = s->ApplyRetention(r, 5000);
  CHECK_FALSE(result.more);
  auto has = [&](const std::string& jid) { return !s->GetLoad(jid).as_map().empty(); };
  // find_job: an hour; state.*: 90 days; test.ping matches "*" only: kept forever.
  CHECK_FALSE(has(jid_at(std::chrono::hours(2))));
  CHECK_FALSE(has(jid_at(std::chrono::hours(48))));
  CHECK(has(jid_at(std::chrono::hours(2)) + "_1"));
  CHECK(has(jid_at(std::chrono::hours(48)) + "_1"));
  CHECK_FALSE(has(jid_at(std::chrono::hours(4800)) + "_1"));
  CHECK(has(jid_at(std::chrono::hours(4800)) + "_2"));
  CHECK(result.jobs == 4);
  CHECK(result.returns == 3);
  // auth: an hour; return events kept forever (their jobs went: they keep their copy); the
  // rest by the default day.
  CHECK(f.Q("SELECT count(*) FROM salt_events WHERE tag = 'salt/auth'") == "0\n");
  CHECK(f.Q("SELECT count(*) FROM salt_events WHERE tag LIKE 'salt/job/%'") == "3\n");
  CHECK(f.Q("SELECT count(*) FROM salt_events WHERE tag = 'minion_start'") == "1\n");
  CHECK(result.events == 5);
}

TEST_CASE("store: pruning to a size takes the oldest jobs, events and frames first, across the three", "[store]") {
  Fixture f;
  auto s = f.Open();
  const std::string payload(20000, 'x');
  // Oldest first: an event, a job with a return, a frame, a job, an event.
  std::vector<Event> first{{.tag = "a", .data = Value::Map({{"p", payload}}), .received = kT0 - std::chrono::hours(5)}};
  s->EventReturn(first);
  const std::string old_jid = brine::FormatJid(kT0 - std::chrono::hours(4));
  s->SaveLoad(old_jid, J(R"({"fun":"test.ping"})"), std::nullopt);
  (void)s->Returner(Ret(old_jid, "m1", payload));
  s->Quarantine(payload, "bad", kT0 - std::chrono::hours(3));
  const std::string new_jid = brine::FormatJid(kT0 - std::chrono::hours(2));
  s->SaveLoad(new_jid, J(R"({"fun":"test.ping"})"), std::nullopt);
  std::vector<Event> last{{.tag = "b", .data = Value::Map({{"p", payload}}), .received = kT0 - std::chrono::hours(1)}};
  s->EventReturn(last);
  // PostgreSQL's measure comes from its statistics: ANALYZE, then the row
  // counts reach them within about a second.
  if (!f.sqlite()) (void)f.Q("ANALYZE");
  CHECK(brine::test::WaitUntil([&] { return s->UsedBytes() > 0; }, std::chrono::seconds(10)));
  const std::int64_t used = s->UsedBytes();

  // 30,000 bytes: the first event (~20,010) and the old job (~20,200) go, nothing younger.
  auto r = s->PruneOldest(30000, 5000);
  CHECK(r.events == 1);
  CHECK(r.jobs == 1);
  CHECK(r.returns == 1);
  CHECK(r.quarantined == 0);
  CHECK(r.bytes >= 40000);
  CHECK_FALSE(r.more);
  CHECK(s->GetLoad(old_jid) == Value::EmptyMap());
  CHECK_FALSE(s->GetLoad(new_jid).as_map().empty());
  // A row budget stops early and says so.
  r = s->PruneOldest(1000000, 1);
  CHECK(r.quarantined == 1);
  CHECK(r.more);
  // Then the next oldest: the job, then the last event; then there is nothing left.
  r = s->PruneOldest(1000000, 5000);
  CHECK(r.jobs == 1);
  CHECK(r.events == 1);
  CHECK_FALSE(r.more);
  CHECK(f.Q("SELECT count(*) FROM job") == "0\n");
  // On SQLite the pages in use follow the deletes at once (payloads this big
  // sit on overflow pages, freed whole); PostgreSQL's statistics-based
  // estimate is too coarse for rows this few.
  if (f.sqlite()) CHECK(s->UsedBytes() < used - 3 * 20000);
}

TEST_CASE("store: brine-run and brine-master load libpq only when a PostgreSQL store is opened", "[store][sqlite]") {
  // src/libpq.cpp loads it then: linked in, it and the ~20 libraries it pulls
  // in took 7 ms of every brine-run's start on SQLite stores too.
  // LD_TRACE_LOADED_OBJECTS makes the dynamic loader list what a program
  // loads at start (ldd's way) instead of running it.
  for (const char* program : {"brine-run", "brine-master"}) {
    const auto listed = brine::test::Run({"/usr/bin/env", "LD_TRACE_LOADED_OBJECTS=1", brine::test::Binary(program).string()});
    INFO(program << ":\n" << listed.out << listed.err);
    REQUIRE(listed.exit_code == 0);
    REQUIRE(listed.out.find("libsqlite3") != std::string::npos);
    REQUIRE(listed.out.find("libpq") == std::string::npos);
  }
}
