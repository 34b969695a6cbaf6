// Salt's `highstate` outputter (salt/output/highstate.py) with Salt's
// defaults: state_verbose True, state_output full, state_output_profile True,
// state_output_diff/state_output_pct/state_compress_ids/state_tabular off.
#pragma once

#include <optional>
#include <string>

#include "brine/core/value.h"
#include "palette.h"

namespace brine::output {

struct HighstateStyle {
  Palette colors;
  bool strip_esc = true;  // Salt's strip_colors
};

// The outputter's text (not yet right-stripped), or nullopt where Salt's
// outputter fails on the data (a KeyError, AttributeError or TypeError, or a
// non-str result such as for an int): Salt then prints the data with
// `nested` instead, and so does Render.
[[nodiscard]] std::optional<std::string> RenderHighstate(const Value& data, const HighstateStyle& style);

}  // namespace brine::output
