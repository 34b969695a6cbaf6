// salt-run's argument handling: typing each CLI word, splitting KEY=VALUE,
// and binding the result to a function's parameters with Python's rules.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"

namespace brine::runner {

// A usage error: salt-run reports it as "Passed invalid arguments: <what>"
// followed by the function's usage; brine-run exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure while running a function (store unreadable, master down): exit 1.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// salt.utils.args.yamlify_arg: YAML-types one CLI word. Kept as the string:
// empty or blank text, `---`/`...`, digits with underscores, text with a tab,
// CR or LF, a dict not written with `{` or a list not written with `[` (but
// text with `#` that parses to a dict or list is that dict or list, as in
// Salt), text with `#` that parses to a string or null, `|` and `!`, and
// anything YAML refuses. `None` is null. A decimal integer too big for 64 bits
// comes back as its digits (config's YAML typing), so a jid such as
// 20240101120000123456 keeps every digit.
[[nodiscard]] Value YamlifyArg(std::string_view word);

struct ParsedArgs {
  std::vector<Value> positional;
  ValueMap keyword;  // in command-line order
};

// salt.utils.args.parse_input: `name=value` words whose name looks like a
// Python keyword (a letter or `_`, then letters, digits, `_`, `.`, `-`) are
// keyword arguments; everything else is positional. Values are yamlified.
[[nodiscard]] ParsedArgs ParseInput(const std::vector<std::string>& words);

struct Param {
  std::string name;
  std::optional<Value> default_value;  // nullopt: required
};

// Binds `args` to `params` as Python binds a call to `fun(params...)`, and
// returns one value per parameter (defaults filled in). Throws UsageError
// with Python's TypeError text: missing required arguments, too many
// positional arguments, an unexpected keyword, a value given twice.
[[nodiscard]] std::vector<Value> BindArgs(const std::string& function, const std::vector<Param>& params,
                                          const ParsedArgs& args);

}  // namespace brine::runner
