// brine-master end to end, retention: by age, by class, by size, and the
// warning on a first run that deletes most of the store.

#include <array>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/store/store.h"
#include "support/master_helpers.h"
#include "support/master_process.h"
#include "support/process.h"

using brine::ToJson;
using brine::Value;
using brine::test::MasterProcess;
using brine::test::NewFrame;
using brine::test::PushFrames;
using brine::test::Sql;
using namespace brine::test::master_helpers;

TEST_CASE("master: retention deletes what is old and nothing else", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 3600\nbrine.keep_events_seconds: 3600");
  // The master file already sets loop_interval; master.d overrides it, as in Salt.
  std::filesystem::create_directories(m.conf_dir() / "master.d");
  std::ofstream(m.conf_dir() / "master.d" / "retention.conf") << "loop_interval: 1\n";
  const auto now = Now();
  const auto two_days_ago = now - std::chrono::hours(48);
  const auto half_hour_ago = now - std::chrono::minutes(30);
  const std::string seeded_old = JidAt(two_days_ago);
  const std::string seeded_recent = JidAt(half_hour_ago);
  const std::string pushed_old = JidAt(two_days_ago + std::chrono::seconds(1));
  const std::string pushed_new = JidAt(now);

  // Seed the store as it would look after running for two days: an old job and
  // a recent one, and events and quarantined frames that arrived then.
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(two_days_ago);
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    store->SaveLoad(seeded_old, PublishLoad(seeded_old, "test.ping", {}, StampAt(two_days_ago)),
                    std::vector<std::string>{"m1"});
    (void)store->Returner(ReturnLoad(seeded_old, "m1", "test.ping", true, StampAt(two_days_ago)));
    store->Quarantine("old frame", "seeded", two_days_ago);
    brine::store::Event old_event{
        .tag = "seeded/old", .data = Value::Map({{"n", 1}}), .received = two_days_ago};
    store->EventReturn(std::span<const brine::store::Event>(&old_event, 1));
    then.Set(half_hour_ago);
    store->SaveLoad(seeded_recent,
                    PublishLoad(seeded_recent, "test.ping", {}, StampAt(half_hour_ago)),
                    std::vector<std::string>{"m1"});
    (void)store->Returner(
        ReturnLoad(seeded_recent, "m1", "test.ping", true, StampAt(half_hour_ago)));
    store->Quarantine("recent frame", "seeded", half_hour_ago);
    brine::store::Event recent_event{
        .tag = "seeded/recent", .data = Value::Map({{"n", 2}}), .received = half_hour_ago};
    store->EventReturn(std::span<const brine::store::Event>(&recent_event, 1));
  }
  REQUIRE(Sql(m.database(), "SELECT count(*) FROM jids") == "2\n");

  m.Start();
  // Jobs age by jid time: these two arrive now, one with a two-day-old jid.
  const Value old_ret = ReturnLoad(pushed_old, "m2", "test.ping", true, StampAt(now));
  PushFrames(m.pull_endpoint(),
             {NewFrame("salt/job/" + pushed_old + "/new",
                       PublishLoad(pushed_old, "test.ping", {"m2"}, StampAt(now))),
              NewFrame("salt/job/" + pushed_old + "/ret/m2", old_ret),
              NewFrame("salt/job/" + pushed_new + "/new",
                       PublishLoad(pushed_new, "test.ping", {"m2"}, StampAt(now))),
              NewFrame("salt/job/" + pushed_new + "/ret/m2",
                       ReturnLoad(pushed_new, "m2", "test.ping", true, StampAt(now))),
              NewFrame("live/event", Value::Map({{"n", 3}}))});
  REQUIRE(WaitReceived(m, 5));
  // A pass after the pushes (loop_interval 1) takes the pushed old job too.
  REQUIRE(WaitUntil([&] {
    return Sql(m.database(), "SELECT count(*) FROM job WHERE jid IN ('" + seeded_old + "', '" +
                                 pushed_old + "')") == "0\n";
  }));
  REQUIRE(m.Stop() == 0);

  // Old jobs gone with their loads, expected minions and returns.
  REQUIRE(Sql(m.database(), "SELECT jid FROM jids ORDER BY jid") ==
          seeded_recent + "\n" + pushed_new + "\n");
  REQUIRE(Sql(m.database(), "SELECT jid, id FROM salt_returns ORDER BY jid") ==
          seeded_recent + "|m1\n" + pushed_new + "|m2\n");
  REQUIRE(Sql(m.database(), "SELECT jid, minion FROM jid_minions ORDER BY jid") ==
          seeded_recent + "|m1\n" + pushed_new + "|m2\n");
  // Events and quarantined frames age by arrival: only the two-day-old ones go.
  REQUIRE(Sql(m.database(), "SELECT raw FROM quarantine") == "recent frame\n");
  REQUIRE(Sql(m.database(), "SELECT tag FROM salt_events ORDER BY id") ==
          "seeded/recent\n"
          "salt/job/" +
              pushed_old +
              "/new\n"
              "salt/job/" +
              pushed_old +
              "/ret/m2\n"
              "salt/job/" +
              pushed_new +
              "/new\n"
              "salt/job/" +
              pushed_new +
              "/ret/m2\n"
              "live/event\n");
  // The events of the deleted job keep their payload.
  REQUIRE(Sql(m.database(), "SELECT data FROM salt_events WHERE tag = 'salt/job/" + pushed_old +
                                "/ret/m2'") == ToJson(old_ret) + "\n");
  // Each run that removes something is one line at info with its counts; the
  // first took half, not more. The first pass may run before or after the
  // pushed old job is committed, so the lines are summed.
  const std::string log = brine::test::ReadFile(m.log_file());
  const std::regex line(R"(\[INFO\] retention removed (\d+) jobs, (\d+) returns, (\d+) events, (\d+) quarantined frames\n)");
  std::array<long, 4> removed{};
  int lines = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it, ++lines) {
    for (std::size_t i = 0; i < removed.size(); ++i) removed[i] += std::stol((*it)[i + 1].str());
  }
  CHECK(lines >= 1);
  CHECK(removed == std::array<long, 4>{2, 2, 1, 1});
  CHECK(log.find("more than half") == std::string::npos);
}

TEST_CASE("master: a first retention run that deletes more than half the store is a warning", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 3600");
  const auto now = Now();
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    auto store = brine::store::OpenStore(m.database(), opts);
    for (const auto& t : {now - std::chrono::hours(48), now - std::chrono::hours(47), now}) {
      const std::string jid = JidAt(t);
      store->SaveLoad(jid, PublishLoad(jid, "test.ping", {}, StampAt(t)), std::vector<std::string>{"m1"});
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return Sql(m.database(), "SELECT count(*) FROM job") == "1\n"; }));
  REQUIRE(m.Stop() == 0);
  CHECK(brine::test::ReadFile(m.log_file()).find("[WARNING] retention removed 2 jobs, 0 returns, 0 events, 0 "
                                                 "quarantined frames: more than half of the 3 jobs and 0 events the "
                                                 "store held at start") != std::string::npos);
}

TEST_CASE("master: retention by class keeps each function's jobs and each tag's events for their own time",
          "[master][e2e]") {
  MasterProcess m(
      "keep_jobs_seconds: 86400\n"
      "brine.keep_jobs_by_fun: {saltutil.find_job: 3600, 'state.*': 7776000}\n"
      "brine.keep_events_by_tag: {'salt/auth': 60, 'salt/job/*': 0}");
  const auto now = Now();
  const auto hours_ago = [&](int h) { return now - std::chrono::hours(h); };
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(hours_ago(48));
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    // Two hours old: find_job goes (an hour), test.ping stays (a day).
    // Two days old: state.apply stays (90 days), test.ping goes.
    for (const auto& [h, fun] : std::vector<std::pair<int, std::string>>{
             {2, "saltutil.find_job"}, {2, "test.ping"}, {48, "state.apply"}, {48, "test.ping"}}) {
      const std::string jid = JidAt(hours_ago(h) + std::chrono::microseconds(fun.size()));
      store->SaveLoad(jid, PublishLoad(jid, fun, {}, StampAt(hours_ago(h))), std::vector<std::string>{"m1"});
    }
    // Two days old: auth goes, job events stay (0: forever), others go.
    for (const std::string tag : {"salt/auth", "salt/job/20240101000000000000/prog/m1/0", "minion_start"}) {
      brine::store::Event e{.tag = tag, .data = Value::Map({{"n", 1}}), .received = hours_ago(48)};
      store->EventReturn(std::span<const brine::store::Event>(&e, 1));
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(m.log_file()).find("retention removed") != std::string::npos; }));
  REQUIRE(m.Stop() == 0);
  CHECK(Sql(m.database(), "SELECT json_extract(load, '$.fun') FROM job ORDER BY jid") == "state.apply\ntest.ping\n");
  CHECK(Sql(m.database(), "SELECT tag FROM salt_events") == "salt/job/20240101000000000000/prog/m1/0\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  INFO(log);
  // The third job is the prog event's jid, seen with no load: the default day.
  CHECK(log.find("retention removed 3 jobs, 0 returns, 2 events") != std::string::npos);
}

TEST_CASE("master: over brine.max_store_mb it prunes the oldest first and logs what it pruned", "[master][e2e]") {
  MasterProcess m("keep_jobs_seconds: 0\nbrine.max_store_mb: 1");
  const auto now = Now();
  const std::string payload(100000, 'x');
  std::vector<std::string> jids;
  {
    std::filesystem::create_directories(m.database().parent_path());
    brine::FakeClock then(now);
    brine::store::OpenOptions opts;
    opts.master_id = "test_master";
    opts.clock = &then;
    auto store = brine::store::OpenStore(m.database(), opts);
    // 3 MB in 30 jobs, an hour apart, oldest first.
    for (int h = 30; h > 0; --h) {
      const std::string jid = JidAt(now - std::chrono::hours(h));
      jids.push_back(jid);
      then.Set(now - std::chrono::hours(h));
      store->SaveLoad(jid, PublishLoad(jid, "test.ping", {}, StampAt(now)), std::vector<std::string>{"m1"});
      (void)store->Returner(ReturnLoad(jid, "m1", "test.ping", payload, StampAt(now)));
    }
  }
  m.Start();
  REQUIRE(WaitUntil([&] { return brine::test::ReadFile(m.log_file()).find("brine.max_store_mb") != std::string::npos; }));
  REQUIRE(m.Stop() == 0);
  // About 20 of the 30 went, the oldest: what is left is the newest, in one run.
  const std::int64_t left = std::stoll(Sql(m.database(), "SELECT count(*) FROM job"));
  CHECK(left >= 5);
  CHECK(left <= 10);
  CHECK(Sql(m.database(), "SELECT min(jid) FROM job") == jids[jids.size() - static_cast<std::size_t>(left)] + "\n");
  const std::string log = brine::test::ReadFile(m.log_file());
  CHECK(log.find("over the cap of 1.0 MiB; pruned the oldest " + std::to_string(30 - left) + " jobs, " +
                 std::to_string(30 - left) + " returns, 0 events") != std::string::npos);
}
