// libFuzzer target for brine-run's argument typing (runner/src/arguments.cpp):
// the input is a command line, words separated by NUL (argv cannot hold NUL).
// Every word goes through ParseInput (KEY=VALUE split, YamlifyArg) and the
// result is bound to a list_jobs-like signature. Allowed outcomes: values, or
// UsageError; anything else (a crash, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "brine/args/arguments.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      words.emplace_back();
    } else {
      words.back() += static_cast<char>(data[i]);
    }
  }
  for (const auto& w : words) (void)brine::args::YamlifyArg(w);
  const auto parsed = brine::args::ParseInput(words);
  const std::vector<brine::args::Param> params = {
      {"ext_source", brine::Value()}, {"outputter", brine::Value()},  {"search_metadata", brine::Value()},
      {"search_function", brine::Value()}, {"search_target", brine::Value()}, {"start_time", brine::Value()},
      {"end_time", brine::Value()},   {"display_progress", brine::Value(false)}};
  try {
    (void)brine::args::BindArgs("jobs.list_jobs", params, parsed);
  } catch (const brine::args::UsageError&) {
  }
  return 0;
}
