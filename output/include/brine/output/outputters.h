// Salt's outputters: the text `salt-run` prints for a return value, byte for
// byte (spec section 12, "Output").
//
// Supported names: nested (Salt's default), json, yaml, txt (alias text),
// raw, highstate. Each renders as Salt's outputter of that name does with
// Salt's default configuration, then as Salt's display_output prints it: the
// text right-stripped (Python's str.rstrip(), Unicode whitespace included)
// and followed by one "\n"; text that is empty after stripping prints nothing
// at all (Render returns "").
//
// Strings are brine's byte strings; they are treated as Python str values
// decoded with surrogateescape (each byte that is not valid UTF-8 stands for
// itself), so lengths, sorting and escapes follow Python's rules.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "brine/core/value.h"

namespace brine::output {

struct OutputOptions {
  // `--out-indent N` (salt's `output_indent`); nullopt when not given.
  // json: nullopt -> indent 4; N >= 0 -> indent N; N < 0 -> one line.
  // yaml: nullopt -> block style, indent 2; N >= 0 -> block style with
  //       yaml.dump(indent=N) (PyYAML keeps 2 unless 2 <= N <= 9);
  //       N < 0 -> flow style (`{a: 1, b: [1, 2]}`).
  // Other outputters ignore it.
  std::optional<int> indent;
  // Salt's colour (`--force-color`, or stdout being a TTY without
  // `--no-color`): ANSI colour codes in nested and highstate output.
  enum class Color { kOff, kOn } color = Color::kOff;
  // Salt's `_retcode` for nested: non-zero draws keys, `----------` and `|_`
  // red instead of cyan/green (visible only with colour on).
  int retcode = 0;
  // Salt's `strip_colors` option, on unless the master config turns it off:
  // ESC characters in nested string values and highstate host names are
  // printed as `?`, so returned data cannot drive the terminal.
  enum class StripColors { kOn, kOff } strip_colors = StripColors::kOn;
  // Which PyYAML emitter the yaml outputter reproduces. Salt dumps with
  // PyYAML's CSafeDumper (libyaml) whenever PyYAML was built with libyaml, as
  // Debian's python3-yaml and PyPI's wheels are; kPyYaml is PyYAML's
  // pure-Python emitter (yaml.safe_dump), which differs for non-BMP
  // characters, U+0085, \r, keys of 128+ characters and long double-quoted
  // strings.
  enum class YamlEmitter { kLibyaml, kPyYaml } yaml_emitter = YamlEmitter::kLibyaml;
};

// The outputter name is not one of those above.
class UnknownOutputter : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// True for the names Render accepts (nested, json, yaml, txt, text, raw,
// highstate). salt-run logs "Invalid outputter <name> specified, fall back to
// nested" for any other name and renders with nested.
[[nodiscard]] bool IsKnownOutputter(std::string_view name);

// Renders `data` with the named outputter exactly as salt-run prints it,
// including the final "\n" (and "" when Salt prints nothing, such as nested
// for an empty dict). Where Salt's outputter fails on the data, the result is
// what Salt's fallback prints: highstate falls back to nested (e.g. a state
// return without "changes", or an int). Throws UnknownOutputter for an
// unsupported name; nothing else except std::bad_alloc.
[[nodiscard]] std::string Render(std::string_view outputter, const Value& data, const OutputOptions& options);

}  // namespace brine::output
