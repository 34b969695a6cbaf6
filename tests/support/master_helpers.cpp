#include "support/master_helpers.h"

#include <fstream>
#include <thread>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/wire/codec.h"

namespace brine::test::master_helpers {

std::vector<FixtureEvent> Fixture2014() {
  std::ifstream in(std::string(BRINE_SOURCE_DIR) + "/tests/fixtures/salt-2014-master-events.jsonl");
  std::vector<FixtureEvent> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Value v = ParseJson(line);
    out.push_back({*v.FindString("tag"), *v.Find("data")});
  }
  return out;
}

std::vector<std::string> Frames2014(const std::vector<FixtureEvent>& events) {
  std::vector<std::string> frames;
  for (const auto& e : events)
    frames.push_back(brine::wire::EncodeFrame(e.tag, e.data, brine::wire::Framing::kOld));
  return frames;
}

std::string Counter(const MasterProcess& m, const std::string& name) {
  return Sql(m.database(), "SELECT value FROM brine_counters WHERE name = '" + name + "'");
}

std::int64_t CounterInt(const MasterProcess& m, const std::string& name) {
  const std::string v = Counter(m, name);
  return v.empty() ? -1 : std::stoll(v);
}

bool WaitUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool WaitReceived(const MasterProcess& m, std::int64_t n) {
  return WaitUntil([&] { return CounterInt(m, "received") >= n; });
}

std::size_t CountOf(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1))
    ++n;
  return n;
}

brine::Micros Now() { return brine::SystemClock().Now(); }

std::string JidAt(brine::Micros t) { return brine::FormatJid(t); }

std::string StampAt(brine::Micros t) { return brine::FormatStamp(t); }

Value ReturnLoad(const std::string& jid, const std::string& minion, const std::string& fun,
                 Value ret, const std::string& stamp, Value fun_args) {
  return Value::Map({{"cmd", "_return"},
                     {"id", minion},
                     {"success", true},
                     {"return", std::move(ret)},
                     {"retcode", 0},
                     {"jid", jid},
                     {"fun", fun},
                     {"fun_args", std::move(fun_args)},
                     {"_stamp", stamp}});
}

Value PublishLoad(const std::string& jid, const std::string& fun,
                  const std::vector<std::string>& minions, const std::string& stamp) {
  ValueList ms;
  for (const auto& m : minions) ms.emplace_back(m);
  return Value::Map({{"jid", jid},
                     {"tgt", "*"},
                     {"tgt_type", "glob"},
                     {"user", "root"},
                     {"fun", fun},
                     {"arg", Value::EmptyList()},
                     {"minions", Value(std::move(ms))},
                     {"_stamp", stamp}});
}

}  // namespace brine::test::master_helpers
