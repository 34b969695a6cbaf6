// The fleet simulator (sim/): the event stream, brine-sim's command line, and
// runs into a real brine-master.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/sim/cli.h"
#include "brine/sim/fleet.h"
#include "brine/sim/tally.h"
#include "brine/wire/codec.h"
#include "support/master_process.h"
#include "support/process.h"
#include "support/temp_dir.h"

using brine::FormatJid;
using brine::FormatStamp;
using brine::Micros;
using brine::Value;
using brine::sim::Fleet;
using brine::sim::FleetOptions;
using brine::sim::Function;
using brine::sim::SimEvent;
using brine::wire::Framing;

namespace {

Micros At(const std::string& stamp) {
  auto t = brine::ParseStamp(stamp);
  REQUIRE(t.has_value());
  return *t;
}

// A small fleet that exercises everything: down minions, failures, runners,
// slow returns and therefore find_job polls.
FleetOptions SmallFleet(std::uint64_t seed) {
  FleetOptions o;
  o.start = At("2024-01-01T00:00:00");
  o.speed = 10;
  o.layout_rate = 500;
  o.minions = 24;
  o.jobs = 15;
  o.seed = seed;
  o.missing_rate = 0.15;
  o.fail_rate = 0.3;
  o.runner_rate = 0.3;
  o.return_size = {300, 2000, 20000};
  return o;
}

std::vector<SimEvent> Events(FleetOptions o) {
  Fleet fleet(std::move(o));
  std::vector<SimEvent> out;
  while (auto e = fleet.Next()) out.push_back(std::move(*e));
  return out;
}

std::vector<std::string> Frames(FleetOptions o, Framing framing) {
  std::vector<std::string> out;
  for (const auto& e : Events(std::move(o))) out.push_back(brine::wire::EncodeFrame(e.tag, e.data, framing));
  return out;
}

std::vector<std::string> Keys(const Value& map) {
  std::vector<std::string> out;
  for (const auto& [k, v] : map.as_map()) out.push_back(k);
  return out;
}

const std::string& Str(const Value& map, const char* key) {
  const std::string* s = map.FindString(key);
  REQUIRE(s != nullptr);
  return *s;
}

std::set<std::string> StringSet(const Value& list) {
  std::set<std::string> out;
  for (const auto& v : list.as_list()) out.insert(v.as_string());
  return out;
}

bool IsFindJob(const Value& data) {
  const std::string* fun = data.FindString("fun");
  return fun != nullptr && *fun == "saltutil.find_job";
}

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// brine-sim's Main in this process.
CliResult RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "brine-sim");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  CliResult r;
  r.code = brine::sim::Main(static_cast<int>(args.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The frames of a --dry-run-format frames file.
std::vector<std::string> ReadFrames(const std::filesystem::path& path) {
  const std::string bytes = ReadBytes(path);
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos + 4 <= bytes.size()) {
    const auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[pos + i])); };
    const std::uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    pos += 4;
    REQUIRE(pos + n <= bytes.size());
    out.push_back(bytes.substr(pos, n));
    pos += n;
  }
  REQUIRE(pos == bytes.size());
  return out;
}

std::vector<Value> ReadJsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<Value> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(brine::ParseJson(line));
  return out;
}

std::int64_t Int(const Value& map, const char* key) {
  const Value* v = map.Find(key);
  REQUIRE(v != nullptr);
  REQUIRE(v->is_int());
  return v->as_int();
}

std::int64_t SqlCount(const std::filesystem::path& db, const std::string& query) {
  return std::stoll(brine::test::Sql(db, query));
}

}  // namespace

TEST_CASE("sim: the same seed gives the same frames byte for byte, another seed different ones", "[sim]") {
  const auto a = Frames(SmallFleet(42), Framing::kNew);
  const auto b = Frames(SmallFleet(42), Framing::kNew);
  const auto c = Frames(SmallFleet(43), Framing::kNew);
  REQUIRE(a.size() > 100);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(Frames(SmallFleet(42), Framing::kOld) == Frames(SmallFleet(42), Framing::kOld));
}

TEST_CASE("sim: brine-sim --dry-run writes the library's stream, the same file for the same seed", "[sim]") {
  brine::test::TempDir dir;
  const std::vector<std::string> common{"--minions", "24", "--jobs", "15", "--rate", "500", "--clock",
                                        "2024-01-01T00:00:00,10", "--missing-rate", "0.15", "--fail-rate", "0.3",
                                        "--runner-rate", "0.3", "--return-size", "300,2000,20000",
                                        "--dry-run-format", "frames"};
  auto run = [&](const std::string& file, const std::string& seed) {
    auto args = common;
    args.insert(args.end(), {"--seed", seed, "--dry-run", (dir / file).string()});
    const CliResult r = RunCli(args);
    REQUIRE(r.code == 0);
    REQUIRE(r.err.empty());
    return r;
  };
  const CliResult first = run("a.frames", "42");
  (void)run("b.frames", "42");
  (void)run("c.frames", "43");
  CHECK(ReadBytes(dir / "a.frames") == ReadBytes(dir / "b.frames"));
  CHECK(ReadBytes(dir / "a.frames") != ReadBytes(dir / "c.frames"));
  CHECK(ReadFrames(dir / "a.frames") == Frames(SmallFleet(42), Framing::kNew));
  CHECK_FALSE(std::filesystem::exists(dir / "a.frames.tmp"));

  // The one-line summary names what it wrote.
  const auto n = Frames(SmallFleet(42), Framing::kNew).size();
  CHECK(first.out.starts_with("brine-sim: wrote " + std::to_string(n) + " events ("));
  CHECK(first.out.find(" jobs, ") != std::string::npos);
  CHECK(first.out.find(" find_job polls (") != std::string::npos);
  CHECK(first.out.find("; virtual time 2024-01-01T00:00:00") != std::string::npos);
  CHECK(std::count(first.out.begin(), first.out.end(), '\n') == 1);
}

TEST_CASE("sim: every job is announced by its bare jid, then its new event, and only targeted minions return, once",
          "[sim]") {
  const auto events = Events(SmallFleet(7));
  std::map<std::string, std::set<std::string>> minions;  // jid -> expected
  std::map<std::string, Micros> announced;                // jid -> new event time
  std::set<std::pair<std::string, std::string>> returned;
  std::string previous_bare;
  Micros last{};
  for (const auto& e : events) {
    INFO(e.tag);
    // Every data map ends with its own _stamp (a runner's ret keeps it where
    // its new event put it), and time never runs backwards.
    REQUIRE(e.data.is_map());
    if (e.kind != SimEvent::Kind::kRunnerReturn) REQUIRE(e.data.as_map().back().first == "_stamp");
    CHECK(Str(e.data, "_stamp") == FormatStamp(e.at));
    CHECK(e.at >= last);
    last = e.at;
    // Each event decodes back to itself.
    auto decoded = brine::wire::DecodeFrame(brine::wire::EncodeFrame(e.tag, e.data, Framing::kNew));
    REQUIRE(std::holds_alternative<brine::wire::DecodedEvent>(decoded));
    CHECK(std::get<brine::wire::DecodedEvent>(decoded).data == e.data);

    switch (e.kind) {
      case SimEvent::Kind::kPublish:
        CHECK(brine::IsJid(e.tag));
        CHECK(Keys(e.data) == std::vector<std::string>{"minions", "_stamp"});
        CHECK(minions.count(e.tag) == 0);
        minions[e.tag] = StringSet(*e.data.Find("minions"));
        CHECK_FALSE(minions[e.tag].empty());
        previous_bare = e.tag;
        break;
      case SimEvent::Kind::kNew: {
        const std::string& jid = Str(e.data, "jid");
        CHECK(e.tag == "salt/job/" + jid + "/new");
        CHECK(jid == previous_bare);
        CHECK(Keys(e.data) == std::vector<std::string>{"jid", "tgt_type", "tgt", "user", "fun", "arg", "minions",
                                                      "missing", "_stamp"});
        CHECK(StringSet(*e.data.Find("minions")) == minions[jid]);
        const std::string& tgt_type = Str(e.data, "tgt_type");
        CHECK((tgt_type == "glob" || tgt_type == "list"));
        CHECK(e.data.Find("tgt")->is_string() == (tgt_type == "glob"));
        // The jid is the publish time.
        CHECK(brine::JidToMicros(jid).value() <= e.at);
        announced[jid] = e.at;
        break;
      }
      case SimEvent::Kind::kReturn: {
        const std::string& jid = Str(e.data, "jid");
        const std::string& id = Str(e.data, "id");
        CHECK(e.tag == "salt/job/" + jid + "/ret/" + id);
        REQUIRE(announced.count(jid) == 1);
        CHECK(announced[jid] < e.at);
        CHECK(minions[jid].count(id) == 1);
        CHECK(returned.insert({jid, id}).second);
        CHECK(Str(e.data, "cmd") == "_return");
        const auto retcode = Int(e.data, "retcode");
        CHECK(e.data.Find("success")->as_bool() == (retcode == 0));
        break;
      }
      default: break;
    }
  }
  CHECK(minions.size() == announced.size());
  CHECK_FALSE(returned.empty());
}

TEST_CASE("sim: the functions return what Salt's do, and failures carry a non-zero retcode", "[sim]") {
  FleetOptions o = SmallFleet(3);
  o.jobs = 40;
  std::map<std::string, int> seen;
  int failed_states = 0;
  for (const auto& e : Events(o)) {
    if (e.kind != SimEvent::Kind::kReturn || IsFindJob(e.data)) continue;
    const std::string& fun = Str(e.data, "fun");
    const Value& ret = *e.data.Find("return");
    const auto retcode = Int(e.data, "retcode");
    ++seen[fun + (retcode != 0 ? " failed" : "")];
    INFO(fun << " " << brine::ToJson(e.data).substr(0, 400));
    if (fun == "test.ping") {
      CHECK(ret == Value(true));
      CHECK(retcode == 0);
    } else if (fun == "cmd.run") {
      CHECK(ret.is_string());
      CHECK(e.data.Find("fun_args")->as_list().size() == 1);
    } else if (fun == "grains.items") {
      CHECK(Str(ret, "id") == Str(e.data, "id"));
      CHECK(ret.Find("os_family") != nullptr);
      CHECK(retcode == 0);
    } else {
      REQUIRE(fun == "state.apply");
      CHECK(Str(e.data, "out") == "highstate");
      REQUIRE(ret.is_map());
      bool any_false = false;
      std::int64_t run_num = 0;
      for (const auto& [key, state] : ret.as_map()) {
        // <mod>_|-<id>_|-<name>_|-<fun>
        std::size_t parts = 1;
        for (std::size_t p = key.find("_|-"); p != std::string::npos; p = key.find("_|-", p + 3)) ++parts;
        CHECK(parts == 4);
        CHECK(Keys(state) == std::vector<std::string>{"__id__", "__run_num__", "__sls__", "changes", "comment",
                                                     "duration", "name", "result", "start_time"});
        CHECK(Int(state, "__run_num__") == run_num++);
        CHECK(state.Find("duration")->is_float());
        CHECK(Str(state, "start_time").size() == 15);  // HH:MM:SS.ffffff
        if (!state.Find("result")->as_bool()) any_false = true;
      }
      CHECK(any_false == (retcode != 0));
      if (retcode != 0) {
        CHECK(retcode == 2);
        ++failed_states;
      }
    }
  }
  CHECK(seen["test.ping"] > 0);
  CHECK(seen["cmd.run"] > 0);
  CHECK(seen["cmd.run failed"] > 0);
  CHECK(seen["grains.items"] > 0);
  CHECK(seen["state.apply"] > 0);
  CHECK(failed_states > 0);
}

TEST_CASE("sim: state.apply returns have about the size asked for", "[sim]") {
  FleetOptions o = SmallFleet(5);
  o.functions = {Function::kStateApply};
  o.missing_rate = 0;
  SECTION("one fixed size") {
    o.return_size = {3000, 3000, 3000};
    int n = 0;
    for (const auto& e : Events(o)) {
      if (e.kind != SimEvent::Kind::kReturn || IsFindJob(e.data)) continue;
      const auto size = brine::ToJson(*e.data.Find("return")).size();
      CHECK(size >= 3000 * 0.98);
      CHECK(size <= 3000 + 1000);
      ++n;
    }
    CHECK(n > 20);
  }
  SECTION("a spread, clamped to SMALL and LARGE") {
    o.return_size = {1000, 5000, 40000};
    std::size_t smallest = SIZE_MAX, largest = 0;
    for (const auto& e : Events(o)) {
      if (e.kind != SimEvent::Kind::kReturn || IsFindJob(e.data)) continue;
      const auto size = brine::ToJson(*e.data.Find("return")).size();
      smallest = std::min(smallest, size);
      largest = std::max(largest, size);
    }
    CHECK(smallest >= 1000 * 0.98);
    CHECK(largest <= 40000 + 1000);
    CHECK(largest > smallest * 2);
  }
}

TEST_CASE("sim: find_job polls go to minions that have not returned, and a running one answers with its pid",
          "[sim]") {
  FleetOptions o = SmallFleet(11);
  o.jobs = 30;
  const auto events = Events(o);
  std::map<std::string, Value> news;                               // jid -> new event data
  std::map<std::pair<std::string, std::string>, Micros> returns;  // (jid, minion) -> time
  for (const auto& e : events) {
    if (e.kind == SimEvent::Kind::kNew) news[Str(e.data, "jid")] = e.data;
    if (e.kind == SimEvent::Kind::kReturn) returns[{Str(e.data, "jid"), Str(e.data, "id")}] = e.at;
  }
  int polls = 0, running_answers = 0, empty_answers = 0;
  for (const auto& e : events) {
    if (e.kind == SimEvent::Kind::kNew && IsFindJob(e.data)) {
      ++polls;
      const std::string polled = e.data.Find("arg")->as_list().at(0).as_string();
      REQUIRE(news.count(polled) == 1);
      const Value& job = news[polled];
      CHECK_FALSE(IsFindJob(job));
      CHECK(Str(e.data, "tgt_type") == "list");
      CHECK(Str(e.data, "user") == Str(job, "user"));
      CHECK(Str(job, "user") != "saltapi");  // salt-api's async jobs are not polled
      // Salt's CLI waits `timeout` (5 s) before it polls.
      CHECK(e.at - brine::JidToMicros(polled).value() >= std::chrono::seconds(5));
      const auto job_minions = StringSet(*job.Find("minions"));
      for (const auto& m : StringSet(*e.data.Find("minions"))) {
        CHECK(job_minions.count(m) == 1);
        // Not yet returned when polled.
        auto it = returns.find({polled, m});
        if (it != returns.end()) CHECK(it->second > e.at);
      }
    }
    if (e.kind == SimEvent::Kind::kReturn && IsFindJob(e.data)) {
      const Value& ret = *e.data.Find("return");
      const std::string polled = e.data.Find("fun_args")->as_list().at(0).as_string();
      if (ret.as_map().empty()) {
        ++empty_answers;
        continue;
      }
      ++running_answers;
      // The fixture's shape: the polled job's data and the pid running it.
      CHECK(Str(ret, "jid") == polled);
      CHECK(Int(ret, "pid") > 0);
      CHECK(Str(ret, "fun") == Str(news[polled], "fun"));
      CHECK(*ret.Find("arg") == *news[polled].Find("arg"));
      CHECK(*ret.Find("tgt") == *news[polled].Find("tgt"));
      // It really was still running: its return (if any) comes later.
      auto it = returns.find({polled, Str(e.data, "id")});
      if (it != returns.end()) CHECK(it->second > e.at);
    }
  }
  CHECK(polls > 0);
  CHECK(running_answers > 0);
  (void)empty_answers;
}

TEST_CASE("sim: auth, minion start, presence and runner events come as Salt fires them", "[sim]") {
  FleetOptions o = SmallFleet(13);
  o.speed = 200;  // several presence intervals
  o.jobs = 30;
  std::set<std::string> authed;
  std::map<std::string, Value> runner_new;
  int starts = 0, presents = 0, changes = 0, runner_rets = 0;
  for (const auto& e : Events(o)) {
    INFO(e.tag);
    switch (e.kind) {
      case SimEvent::Kind::kAuth:
        CHECK(e.tag == "salt/auth");
        CHECK(Keys(e.data) == std::vector<std::string>{"result", "act", "id", "pub", "_stamp"});
        CHECK(Str(e.data, "act") == "accept");
        CHECK(Str(e.data, "pub").starts_with("-----BEGIN PUBLIC KEY-----\n"));
        authed.insert(Str(e.data, "id"));
        break;
      case SimEvent::Kind::kMinionStart: {
        const std::string& id = Str(e.data, "id");
        CHECK(e.tag == "salt/minion/" + id + "/start");
        CHECK(authed.count(id) == 1);
        CHECK(Str(e.data, "cmd") == "_minion_event");
        CHECK(Str(e.data, "tag") == e.tag);
        CHECK(Str(e.data, "data").starts_with("Minion " + id + " started at "));
        CHECK(e.data.Find("pretag")->is_null());
        ++starts;
        break;
      }
      case SimEvent::Kind::kPresence:
        CHECK(e.tag == "salt/presence/present");
        CHECK(e.data.Find("present")->is_list());
        ++presents;
        break;
      case SimEvent::Kind::kPresenceChange:
        CHECK(e.tag == "salt/presence/change");
        CHECK(Keys(e.data) == std::vector<std::string>{"new", "lost", "_stamp"});
        ++changes;
        break;
      case SimEvent::Kind::kRunnerNew:
        CHECK(e.tag == "salt/run/" + Str(e.data, "jid") + "/new");
        CHECK(Keys(e.data) == std::vector<std::string>{"fun", "jid", "user", "fun_args", "_stamp"});
        CHECK(Str(e.data, "fun").starts_with("runner."));
        runner_new[Str(e.data, "jid")] = e.data;
        break;
      case SimEvent::Kind::kRunnerReturn: {
        const std::string& jid = Str(e.data, "jid");
        CHECK(e.tag == "salt/run/" + jid + "/ret");
        REQUIRE(runner_new.count(jid) == 1);
        // The same dict as the new event, _stamp replaced in place (spec 9.6).
        CHECK(Keys(e.data) ==
              std::vector<std::string>{"fun", "jid", "user", "fun_args", "_stamp", "return", "success"});
        CHECK(Str(e.data, "fun") == Str(runner_new[jid], "fun"));
        CHECK(Str(e.data, "_stamp") > Str(runner_new[jid], "_stamp"));
        ++runner_rets;
        break;
      }
      default: break;
    }
  }
  CHECK(authed.size() > 15);
  CHECK(starts > 15);
  CHECK(presents >= 2);
  CHECK(changes >= 1);
  CHECK(runner_rets == static_cast<int>(runner_new.size()));
  CHECK(runner_rets > 0);
}

TEST_CASE("sim: the tally counts missing minions as targets that did not return", "[sim]") {
  const auto events = Events(SmallFleet(17));
  brine::sim::Tally tally;
  std::map<std::string, std::int64_t> expected;
  std::map<std::string, bool> find_job;
  std::map<std::string, std::int64_t> returned;
  for (const auto& e : events) {
    tally.Count(e, 100);
    if (e.kind == SimEvent::Kind::kPublish) expected[e.tag] = static_cast<std::int64_t>(e.data.Find("minions")->as_list().size());
    if (e.kind == SimEvent::Kind::kNew) find_job[Str(e.data, "jid")] = IsFindJob(e.data);
    if (e.kind == SimEvent::Kind::kReturn) ++returned[Str(e.data, "jid")];
  }
  std::int64_t missing = 0, poll_missing = 0, jobs = 0, polls = 0;
  for (const auto& [jid, n] : expected) {
    (find_job[jid] ? poll_missing : missing) += n - returned[jid];
    ++(find_job[jid] ? polls : jobs);
  }
  const auto& t = tally.totals();
  CHECK(t.events == static_cast<std::int64_t>(events.size()));
  CHECK(t.bytes == 100 * t.events);
  CHECK(t.jobs == 15);
  CHECK(t.jobs == jobs);
  CHECK(t.find_job_polls == polls);
  CHECK(t.missing == missing);
  CHECK(t.find_job_missing == poll_missing);
  CHECK(t.missing > 0);  // with missing_rate 0.15 some never return
  CHECK(t.first == events.front().at);
  CHECK(t.last == events.back().at);
}

TEST_CASE("sim: the virtual clock drives jids and stamps, and the rate spreads them over virtual time", "[sim]") {
  auto span = [](double layout_rate, double speed) {
    FleetOptions o = SmallFleet(19);
    o.missing_rate = 0;  // the same minions return whatever the layout
    o.start = At("2024-03-01T12:00:00");
    o.speed = speed;
    o.layout_rate = layout_rate;
    o.jobs = 40;
    const auto events = Events(o);
    std::vector<Micros> jids;
    for (const auto& e : events) {
      CHECK(e.at >= o.start);
      if (e.kind == SimEvent::Kind::kNew && !IsFindJob(e.data)) jids.push_back(*brine::JidToMicros(Str(e.data, "jid")));
      if (e.kind == SimEvent::Kind::kRunnerNew) CHECK(*brine::JidToMicros(Str(e.data, "jid")) >= o.start);
    }
    REQUIRE(jids.size() == 40);
    CHECK(std::is_sorted(jids.begin(), jids.end()));
    CHECK(jids.front() >= o.start);
    CHECK(jids.back() <= events.back().at);
    // Jobs are laid out at layout_rate/speed events per virtual second.
    const double seconds = std::chrono::duration<double>(jids.back() - o.start).count();
    const double expected = speed * static_cast<double>(events.size()) / layout_rate;
    CHECK(seconds > 0.5 * expected);
    CHECK(seconds < 1.5 * expected);
    return seconds;
  };
  const double slow = span(100, 60);
  const double fast = span(200, 60);
  CHECK(slow / fast > 1.5);
  CHECK(slow / fast < 2.5);
  // Speed stretches virtual time the same way.
  const double faster_clock = span(100, 120);
  CHECK(faster_clock / slow > 1.5);
  CHECK(faster_clock / slow < 2.5);
}

TEST_CASE("sim: old framing pads tags of 20 bytes or fewer with '|' and decodes back", "[sim]") {
  int padded = 0;
  for (const auto& e : Events(SmallFleet(23))) {
    const std::string frame = brine::wire::EncodeFrame(e.tag, e.data, Framing::kOld);
    if (e.tag.size() <= 20) {
      CHECK(frame.substr(0, e.tag.size()) == e.tag);
      CHECK(frame.substr(e.tag.size(), 20 - e.tag.size()) == std::string(20 - e.tag.size(), '|'));
      ++padded;
    }
    auto decoded = brine::wire::DecodeFrame(frame);
    REQUIRE(std::holds_alternative<brine::wire::DecodedEvent>(decoded));
    const auto& d = std::get<brine::wire::DecodedEvent>(decoded);
    CHECK(d.tag == e.tag);
    CHECK(d.data == e.data);
  }
  CHECK(padded > 10);  // salt/auth and every bare jid
}

TEST_CASE("sim: --duration at a paced rate stops publishing at the virtual time it reaches, and jobs finish",
          "[sim]") {
  brine::test::TempDir dir;
  auto run = [&](const std::string& file) {
    const CliResult r = RunCli({"--minions", "20", "--duration", "2", "--rate", "200", "--clock",
                                "2024-01-01T00:00:00,30", "--missing-rate", "0", "--dry-run", (dir / file).string(),
                                "--summary-json"});
    REQUIRE(r.code == 0);
    return brine::ParseJson(r.out);
  };
  const Value summary = run("a.jsonl");
  (void)run("b.jsonl");
  CHECK(ReadBytes(dir / "a.jsonl") == ReadBytes(dir / "b.jsonl"));
  CHECK(Str(summary, "ended") == "stream");
  const auto lines = ReadJsonl(dir / "a.jsonl");
  REQUIRE(static_cast<std::int64_t>(lines.size()) == Int(summary, "events"));
  CHECK(Int(summary, "jobs") > 3);
  const Micros cutoff = At("2024-01-01T00:01:00");  // 2 s at 30x
  int jobs_published = 0;
  for (const auto& line : lines) {
    const std::string& tag = Str(line, "tag");
    const Value& data = *line.Find("data");
    if (tag.starts_with("salt/job/") && tag.ends_with("/new") && !IsFindJob(data)) {
      ++jobs_published;
      CHECK(brine::JidToMicros(Str(data, "jid")).value() < cutoff);
    }
  }
  CHECK(jobs_published == Int(summary, "jobs"));
  // Every job ran to the end: with no minion down, nobody is missing.
  CHECK(Int(summary, "missing") == 0);
  CHECK(Int(summary, "returns") > 0);
  // About --rate x --duration events, and the tail of the jobs in flight.
  CHECK(lines.size() > 200);
  CHECK(lines.size() < 800);
}

TEST_CASE("sim: bad options are usage errors that name the option", "[sim]") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"--minions", "0"}, "brine-sim: --minions: expected an integer from 1 to 1000000, got '0'\n"},
      {{"--rate", "fast"}, "brine-sim: --rate: expected a positive number of events per second, or 'unlimited', got 'fast'\n"},
      {{"--return-size", "5,3,4"}, "brine-sim: --return-size: expected SMALL <= MEDIAN <= LARGE, got '5,3,4'\n"},
      {{"--clock", "yesterday"},
       "brine-sim: --clock: expected START[,SPEED] with START an ISO UTC time such as 2024-01-01T00:00:00 or 'now', got "
       "'yesterday'\n"},
      {{"--clock", "2024-01-01,0"}, "brine-sim: --clock: expected a positive SPEED after the comma, got '0'\n"},
      {{"--fail-rate", "1.5"}, "brine-sim: --fail-rate: expected a number from 0 to 1, got '1.5'\n"},
      {{"--functions", "test.ping,pkg.upgrade"},
       "brine-sim: --functions: expected names from test.ping, cmd.run, grains.items, state.apply, got 'pkg.upgrade'\n"},
      {{"--framing", "2014"}, "brine-sim: --framing: expected new or old, got '2014'\n"},
      {{"--pull", "ipc:///x", "-c", "/etc/salt"}, "brine-sim: give -c CONFIG_DIR or --pull ENDPOINT, not both\n"},
      {{"--nope"}, "brine-sim: unknown option '--nope'\n"},
      {{"--jobs"}, "brine-sim: --jobs: needs a value\n"},
  };
  for (const auto& c : cases) {
    INFO(c.args[0]);
    const CliResult r = RunCli(c.args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == c.message + "Try 'brine-sim --help'.\n");
  }
  const CliResult help = RunCli({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.starts_with("usage: brine-sim [options]\n"));
}

TEST_CASE("sim: no bus at the endpoint is a runtime error, not a hang", "[sim]") {
  brine::test::TempDir dir;
  SECTION("no socket file") {
    const std::string endpoint = "ipc://" + (dir / "nothing.ipc").string();
    const CliResult r = RunCli({"--pull", endpoint, "--jobs", "1", "--minions", "2"});
    CHECK(r.code == 1);
    CHECK(r.err.starts_with("brine-sim: no event bus at " + endpoint + " ("));
    CHECK(r.err.find("does not exist") != std::string::npos);
  }
  SECTION("a stale socket file that nothing listens on") {
    const auto path = dir / "stale.ipc";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);
    REQUIRE(std::filesystem::exists(path));
    const CliResult r = RunCli({"--pull", "ipc://" + path.string(), "--jobs", "1", "--minions", "2"});
    CHECK(r.code == 1);
    CHECK(r.err.find("nothing listens on " + path.string()) != std::string::npos);
  }
}

TEST_CASE("sim: --progress shows events, rate and virtual time on stderr, ending the line", "[sim]") {
  brine::test::TempDir dir;
  const CliResult r = RunCli({"--dry-run", (dir / "out").string(), "--jobs", "3", "--minions", "2", "--clock",
                              "2024-01-01T00:00:00", "--progress"});
  REQUIRE(r.code == 0);
  CHECK(r.err.starts_with("\rbrine-sim: "));
  CHECK(r.err.ends_with("\n"));
  CHECK(r.err.find(" events/s, virtual time 2024-01-01T00:00:") != std::string::npos);
  // Without it (stderr is not a terminal here), nothing.
  CHECK(RunCli({"--dry-run", (dir / "out2").string(), "--jobs", "3", "--minions", "2"}).err.empty());
}

TEST_CASE("sim: a --clock older than the master's keep_jobs_seconds is warned about", "[sim]") {
  brine::test::TempDir dir;
  std::ofstream(dir / "master") << "sock_dir: " << (dir / "sock").string() << "\nbrine.bus: bind\nkeep_jobs_seconds: 3600\n";
  const CliResult old = RunCli({"-c", dir.path().string(), "--clock", "2024-01-01", "--jobs", "1"});
  CHECK(old.err.starts_with("brine-sim: warning: --clock starts at 2024-01-01T00:00:00, older than the "
                            "master's keep_jobs_seconds (3600 s): its retention deletes these jobs"));
  CHECK(old.code == 1);  // then: no master listens there
  const CliResult now = RunCli({"-c", dir.path().string(), "--clock", "now", "--jobs", "1"});
  CHECK(now.err.find("warning") == std::string::npos);
}

TEST_CASE("sim: a small run into brine-master stores exactly the jobs, returns and missing minions it reports",
          "[sim][e2e]") {
  brine::test::MasterProcess m;
  m.Start();
  const std::vector<std::string> args{"--minions",  "30",   "--jobs", "25", "--missing-rate", "0.1",
                                      "--fail-rate", "0.2", "--runner-rate", "0.3", "--clock",
                                      "2024-01-01T00:00:00,20", "--seed", "11", "--summary-json"};
  auto argv = args;
  argv.insert(argv.begin(), brine::test::Binary("brine-sim").string());
  argv.insert(argv.end(), {"--pull", m.pull_endpoint(), "--rate", "unlimited"});
  const auto run = brine::test::Run(argv);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const Value s = brine::ParseJson(run.out);
  REQUIRE(m.Stop() == 0);

  const auto db = m.database();
  CHECK(Int(s, "jobs") == 25);
  CHECK(Int(s, "missing") > 0);
  CHECK(Int(s, "find_job_polls") > 0);
  CHECK(Int(s, "runner_jobs") > 0);
  CHECK(SqlCount(db, "SELECT count(*) FROM jids") ==
        Int(s, "jobs") + Int(s, "find_job_polls") + Int(s, "runner_jobs"));
  CHECK(SqlCount(db, "SELECT count(*) FROM jids WHERE fun NOT LIKE 'runner.%' AND fun <> 'saltutil.find_job'") ==
        Int(s, "jobs"));
  CHECK(SqlCount(db, "SELECT count(*) FROM salt_returns") ==
        Int(s, "returns") + Int(s, "find_job_returns") + Int(s, "runner_jobs"));
  CHECK(SqlCount(db, "SELECT count(*) FROM salt_returns WHERE retcode <> 0") == Int(s, "failed"));
  CHECK(SqlCount(db, "SELECT count(*) FROM jid_missing") == Int(s, "missing") + Int(s, "find_job_missing"));
  CHECK(SqlCount(db, "SELECT count(*) FROM jid_missing AS m JOIN jids AS j ON j.jid = m.jid "
                     "WHERE j.fun <> 'saltutil.find_job'") == Int(s, "missing"));
  CHECK(SqlCount(db, "SELECT value FROM brine_counters WHERE name = 'received'") == Int(s, "events"));
  CHECK(SqlCount(db, "SELECT count(*) FROM salt_events") == Int(s, "events"));
  CHECK(SqlCount(db, "SELECT count(*) FROM quarantine") == 0);

  // The same seed without a master: the stored jids are the stream's.
  brine::test::TempDir dir;
  auto dry = args;
  dry.insert(dry.end(), {"--dry-run", (dir / "run.jsonl").string(), "--rate", "unlimited"});
  REQUIRE(RunCli(dry).code == 0);
  std::string jids;
  std::set<std::string> sorted;
  for (const auto& line : ReadJsonl(dir / "run.jsonl")) {
    const std::string& tag = Str(line, "tag");
    if (tag.starts_with("salt/job/") && tag.ends_with("/new")) sorted.insert(tag.substr(9, tag.size() - 13));
    if (tag.starts_with("salt/run/") && tag.ends_with("/ret")) sorted.insert(tag.substr(9, tag.size() - 13));
  }
  for (const auto& jid : sorted) jids += jid + "\n";
  CHECK(brine::test::Sql(db, "SELECT jid FROM jids ORDER BY jid") == jids);

  // The virtual clock made the jids: they span the run's virtual interval.
  const std::string first = brine::test::Sql(db, "SELECT min(jid) FROM jids");
  const std::string last = brine::test::Sql(db, "SELECT max(jid) FROM jids");
  CHECK(first >= FormatJid(At("2024-01-01T00:00:00")));
  CHECK(first < FormatJid(At("2024-01-01T00:00:10")));
  CHECK(last.substr(0, 20) <= FormatJid(At(Str(s, "last_stamp"))));
  CHECK(brine::test::Sql(db, "SELECT min(json_extract(data, '$._stamp')) FROM salt_events") ==
        Str(s, "first_stamp") + "\n");
  CHECK(brine::test::Sql(db, "SELECT max(json_extract(data, '$._stamp')) FROM salt_events") ==
        Str(s, "last_stamp") + "\n");
}

TEST_CASE("sim: old framing through -c CONFIG_DIR stores what new framing stores", "[sim][e2e]") {
  const std::vector<std::string> args{"--minions", "20", "--jobs", "12", "--missing-rate", "0.1",
                                      "--clock", "2024-06-01T08:00:00,5", "--seed", "29",
                                      "--rate", "unlimited", "--summary-json"};
  const std::string returns =
      "SELECT jid, id, retcode, success, json_extract(full_ret, '$._stamp') FROM salt_returns ORDER BY jid, id";
  std::map<std::string, std::string> stored;
  std::map<std::string, Value> summaries;
  for (const std::string framing : {"new", "old"}) {
    brine::test::MasterProcess m;
    m.Start();
    auto argv = args;
    argv.insert(argv.begin(), brine::test::Binary("brine-sim").string());
    argv.insert(argv.end(), {"-c", m.conf_dir().string(), "--framing", framing});
    const auto run = brine::test::Run(argv);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    REQUIRE(m.Stop() == 0);
    summaries[framing] = brine::ParseJson(run.out);
    stored[framing] = brine::test::Sql(m.database(), returns) +
                      brine::test::Sql(m.database(), "SELECT jid, load FROM jids ORDER BY jid") +
                      brine::test::Sql(m.database(), "SELECT jid, minion FROM jid_missing ORDER BY jid, minion");
    CHECK(SqlCount(m.database(), "SELECT count(*) FROM quarantine") == 0);
    CHECK(SqlCount(m.database(), "SELECT value FROM brine_counters WHERE name = 'received'") ==
          Int(summaries[framing], "events"));
  }
  CHECK(stored["new"] == stored["old"]);
  CHECK(Int(summaries["new"], "events") == Int(summaries["old"], "events"));
  CHECK(Int(summaries["old"], "bytes") != Int(summaries["new"], "bytes"));  // the padding and the str types differ
  CHECK(stored["old"].find("saltutil.find_job") != std::string::npos);
}
