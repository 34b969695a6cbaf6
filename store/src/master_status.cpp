// Store::GetMasterStatus and Store::HourlyCounts over the Backend (master_status.h).
#include "master_status.h"

#include <algorithm>
#include <map>

namespace brine::store::detail {

std::int64_t HourOf(std::int64_t us) {
  std::int64_t h = us / kHourUs;
  if (us % kHourUs < 0) --h;
  return h * kHourUs;
}

std::vector<MasterStatus> CombineMasterStatus(Backend& backend) {
  std::map<std::string, MasterStatus> by_name;
  Value counters = backend.GetCounters();
  for (auto& [name, values] : counters.as_map()) {
    MasterStatus& s = by_name[name];
    s.master_id = name;
    s.counters = std::move(values);
  }
  for (auto& [name, info] : backend.GetMasterInfos()) {
    MasterStatus& s = by_name[name];
    s.master_id = name;
    s.info = std::move(info);
  }
  std::vector<MasterStatus> out;
  out.reserve(by_name.size());
  for (auto& [name, s] : by_name) {
    if (!s.counters.is_map()) s.counters = Value::EmptyMap();
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<HourCounts> HourlySeries(Backend& backend, Micros from, Micros until,
                                     const std::optional<std::string>& master) {
  const std::int64_t first = HourOf(ToUnixMicros(from));
  const std::int64_t end = HourOf(ToUnixMicros(until));
  if (end <= first) return {};
  if ((end - first) / kHourUs > 24 * 366) {
    throw StoreError("hourly counts: a window of more than 366 days (" + std::to_string((end - first) / kHourUs) +
                     " hours)");
  }
  const std::vector<HourCounts> rows = backend.GetHourlyCounts(first, end, master);
  std::vector<HourCounts> out;
  out.reserve(static_cast<std::size_t>((end - first) / kHourUs));
  auto row = rows.begin();
  for (std::int64_t h = first; h < end; h += kHourUs) {
    while (row != rows.end() && ToUnixMicros(row->hour) < h) ++row;
    if (row != rows.end() && ToUnixMicros(row->hour) == h) {
      out.push_back(*row);
    } else {
      out.push_back({.hour = FromUnixMicros(h)});
    }
  }
  return out;
}

}  // namespace brine::store::detail

namespace brine::store {

std::string_view GapReasonText(GapReason reason) {
  switch (reason) {
    case GapReason::kMasterWentAway: return "master went away";
    case GapReason::kSocketReplaced: return "socket replaced";
    case GapReason::kFellBehind: return "brine fell behind";
    case GapReason::kUndecodableStream: return "undecodable stream";
    case GapReason::kMasterStopped: return "brine-master stopped";
    case GapReason::kPermissionDenied: return "permission denied";
  }
  return "master went away";
}

}  // namespace brine::store
