// The Salt-like event stream the ingest benchmarks send: per job the
// bare-jid event, the `new` event and `returns_per_job` returns of ~400 bytes
// of JSON from interleaved minions, all framed and back to back in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/wire/codec.h"

namespace brine::bench {

// Every frame back to back in one buffer (5M events are ~2.7 GB; a string per
// frame would double that).
struct Stream {
  std::string blob;
  std::vector<std::uint64_t> ends;
  std::uint64_t json_bytes = 0;  // data plus tag, as JSON
  struct Sample {
    std::size_t index;  // of the frame
    std::string jid;
    std::string minion;
  };
  std::vector<Sample> samples;  // the last return of every 5th job

  [[nodiscard]] std::size_t size() const { return ends.size(); }
  [[nodiscard]] std::string_view frame(std::size_t i) const {
    const std::uint64_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(blob).substr(begin, ends[i] - begin);
  }
};

// The stream, built before the clock starts.
inline Stream BuildStream(long jobs, int minion_count, int returns_per_job, brine::Micros t) {
  std::mt19937 rng(7);
  std::vector<std::string> minions;
  for (int i = 0; i < minion_count; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "minion-%04d.dc1.example.com", i);
    minions.emplace_back(buf);
  }
  Stream out;
  out.ends.reserve(static_cast<std::size_t>(jobs) * static_cast<std::size_t>(returns_per_job + 2));
  out.blob.reserve(out.ends.capacity() * 600);
  auto add = [&](const std::string& tag, const brine::Value& data) {
    out.blob += brine::wire::EncodeFrame(tag, data, brine::wire::Framing::kNew);
    out.ends.push_back(out.blob.size());
    out.json_bytes += tag.size() + brine::ToJson(data).size();
  };
  for (long j = 0; j < jobs; ++j) {
    t += std::chrono::microseconds(1000);
    const std::string jid = brine::FormatJid(t);
    const auto first = rng() % static_cast<unsigned>(minion_count);
    brine::ValueList targets;
    for (int k = 0; k < returns_per_job; ++k) {
      targets.emplace_back(minions[(first + static_cast<unsigned>(k) * 97u) % minions.size()]);
    }
    const std::string stamp = brine::FormatStamp(t);
    add(jid, brine::Value::Map({{"minions", brine::Value(targets)}, {"_stamp", stamp}}));
    add("salt/job/" + jid + "/new",
        brine::Value::Map({{"jid", jid}, {"tgt_type", "list"}, {"tgt", brine::Value(targets)}, {"user", "root"},
                    {"fun", "cmd.run"}, {"arg", brine::Value::List({"systemctl is-active nginx"})},
                    {"minions", brine::Value(targets)}, {"missing", brine::Value::EmptyList()}, {"_stamp", stamp}}));
    for (const brine::Value& m : targets) {
      std::string text = "active\n" + std::string(200 + rng() % 100, 'x');
      add("salt/job/" + jid + "/ret/" + m.as_string(),
          brine::Value::Map({{"cmd", "_return"}, {"id", m}, {"fun", "cmd.run"},
                      {"fun_args", brine::Value::List({"systemctl is-active nginx"})}, {"jid", jid}, {"return", text},
                      {"retcode", 0}, {"success", true}, {"_stamp", stamp}}));
    }
    if (j % 5 == 0) out.samples.push_back({out.size() - 1, jid, targets.back().as_string()});
  }
  return out;
}

}  // namespace brine::bench
