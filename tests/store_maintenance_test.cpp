// The store's upkeep, on SQLite (or PostgreSQL under ctest
// store_maintenance:postgresql): retention by age and by class, pruning to a
// size, incremental vacuum, maintenance and Describe, export, lazy libpq.

#include <catch2/catch.hpp>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/store.h"
#include "support/master_process.h"
#include "support/store_fixture.h"

using brine::ToJson;
using brine::Value;
using brine::store::Event;
using namespace brine::test::store_fixture;

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
