// Salt's `nested` outputter (salt/output/nested.py, spec section 12.2).
#pragma once

#include <string>

#include "brine/core/value.h"
#include "palette.h"

namespace brine::output {

struct NestedStyle {
  Palette colors;
  // Salt's `_retcode`: non-zero draws keys, separators and `|_` red.
  int retcode = 0;
  // Salt's `strip_colors`: ESC in string values becomes `?`.
  bool strip_esc = true;
  // Salt's `nested_indent`: the indent the top level starts at.
  int base_indent = 0;
};

// The outputter's return value: lines joined with "\n", not yet right-stripped.
[[nodiscard]] std::string RenderNested(const Value& data, const NestedStyle& style);

}  // namespace brine::output
