// The time arguments of jobs.list_jobs (start_time, end_time).
#pragma once

#include <optional>
#include <string_view>

#include "brine/core/time.h"

namespace brine::args {

// Parses, as UTC (a given zone is converted to UTC):
//   ISO 8601: 2024-01-01T12:00:00[.ffffff][Z|+HH:MM|+HHMM|-HH:MM], `T` or a space
//   2024-01-01 12:00 and 2024-01-01T12:00 (seconds left out)
//   2024-01-01 (midnight)
//   Salt's StartTime form: 2024, Jan 01 12:00:00[.ffffff]
//   what dateutil.parser.parse (Salt's reader) takes in practice, word by
//   word: "Nov 23 2026", "23 Nov 2026 10:00", "November 23, 2026 10:00:05 PM",
//   "2026/11/23", "11/23/2026" (month first, dateutil's default), "Mon Nov 23
//   2026 10:00 UTC"; a month name in any case, Jan or January; a year is
//   required (dateutil would take the current one)
// nullopt for anything else.
[[nodiscard]] std::optional<Micros> ParseTimeArg(std::string_view text);

}  // namespace brine::args
