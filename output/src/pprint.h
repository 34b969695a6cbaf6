// Python's pprint.pformat(object) with its defaults (width 80, indent 1,
// sort_dicts=True, compact=False), which Salt's txt outputter prints for data
// that is neither a dict nor a str, and the highstate outputter prints for a
// state return that lacks `__run_num__`.
#pragma once

#include <string>

#include "brine/core/value.h"

namespace brine::output {

[[nodiscard]] std::string PFormat(const Value& v);

}  // namespace brine::output
