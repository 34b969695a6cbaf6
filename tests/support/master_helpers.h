// Helpers of the master_*_test.cpp files: the 2014 fixture, the store's
// counters, waiting for a condition, and the loads a minion and a publish send.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "support/master_process.h"

namespace brine::test::master_helpers {

struct FixtureEvent {
  std::string tag;
  Value data;
};

std::vector<FixtureEvent> Fixture2014();

// Salt 2014 packed tags of at most 20 bytes the old way, longer ones new style.
std::vector<std::string> Frames2014(const std::vector<FixtureEvent>& events);

std::string Counter(const MasterProcess& m, const std::string& name);

std::int64_t CounterInt(const MasterProcess& m, const std::string& name);

// Polls `done` every 20 ms until it holds; false when `timeout` passes first.
bool WaitUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Waits until the master has committed `n` received frames (the counters
// commit with the data they count).
bool WaitReceived(const MasterProcess& m, std::int64_t n);

std::size_t CountOf(const std::string& haystack, const std::string& needle);

brine::Micros Now();

std::string JidAt(brine::Micros t);

std::string StampAt(brine::Micros t);

// A minion's return load as a 2016+ minion fires it under salt/job/<jid>/ret/<id>.
Value ReturnLoad(const std::string& jid, const std::string& minion, const std::string& fun,
                 Value ret, const std::string& stamp, Value fun_args = Value::EmptyList());

Value PublishLoad(const std::string& jid, const std::string& fun,
                  const std::vector<std::string>& minions, const std::string& stamp);

}  // namespace brine::test::master_helpers
