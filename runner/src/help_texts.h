// The long help texts of brine-run's functions, kept out of their
// registrations so that a registration reads as a signature and a body.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "functions.h"

namespace brine::runner {

struct HelpText {
  std::string_view function;  // module.function, as registered
  std::string_view text;      // printed after "Usage:" and by -d, after the signature
};

// Every function's help text, one entry per function, sorted by name.
[[nodiscard]] std::span<const HelpText> HelpTexts();

// Sets each function's doc to its text in `help`. Throws std::logic_error
// naming the function or the text when a function has no text, a text
// names no function, or a function has two: a programming error, which
// AllFunctions' first call (and so every test of brine-run) reports.
void AttachHelpTexts(std::vector<FunctionSpec>& functions, std::span<const HelpText> help);

}  // namespace brine::runner
