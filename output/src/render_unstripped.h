// The outputters' text before Salt's display_output strips and prints it,
// for MapStream, which strips only the end of the whole stream.
#pragma once

#include <string>
#include <string_view>

#include "brine/core/value.h"
#include "brine/output/outputters.h"

namespace brine::output {

// Render() without the final rstrip() and "\n". Throws UnknownOutputter.
[[nodiscard]] std::string RenderUnstripped(std::string_view outputter, const Value& data,
                                           const OutputOptions& options);

}  // namespace brine::output
