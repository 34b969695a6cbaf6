// brine-master's status row and hourly rollups (master_status.sql), over the
// Backend's primitives: one implementation of the readers' shapes for both
// backends. Writes are one statement each in sqlite_master_status.cpp and
// postgres_master_status.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend.h"

namespace brine::store::detail {

inline constexpr std::int64_t kHourUs = 3'600'000'000;

// The hour's start of `us` (UTC microseconds), also before 1970.
[[nodiscard]] std::int64_t HourOf(std::int64_t us);

// Store::GetMasterStatus: the counters and the MasterInfo of every master.
[[nodiscard]] std::vector<MasterStatus> CombineMasterStatus(Backend& backend);

// Store::HourlyCounts: the rollups of [from, until) with every hour filled.
[[nodiscard]] std::vector<HourCounts> HourlySeries(Backend& backend, Micros from, Micros until,
                                                   const std::optional<std::string>& master);

}  // namespace brine::store::detail
