// salt-run's argument handling: typing each CLI word, splitting KEY=VALUE,
// and binding the result to a function's parameters with Python's rules.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"

namespace brine::args {

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

// A function's bound arguments, read by parameter name: `a["jid"]`. Reading
// by name, not by position, keeps a parameter added in the middle of a
// signature from shifting what every later read gets.
class Args {
 public:
  // One value per parameter of `function`, in `params`' order. `params`
  // must outlive the Args (it is a FunctionSpec's, which lives as long as
  // the program). Throws std::logic_error when the counts differ.
  Args(std::string function, const std::vector<Param>& params, std::vector<Value> values);

  // The value bound to the parameter `name`. Throws std::logic_error, naming
  // the function and `name`, when the function declares no such parameter:
  // a misspelt name is a programming error, caught by the first call.
  [[nodiscard]] const Value& operator[](std::string_view name) const;

  [[nodiscard]] const std::string& function() const { return function_; }
  [[nodiscard]] const std::vector<Param>& params() const { return *params_; }
  // The values in params()' order (for -l debug's "calling f(a=1, ...)").
  [[nodiscard]] const std::vector<Value>& values() const { return values_; }

 private:
  std::string function_;
  const std::vector<Param>* params_;  // not owned: see the constructor
  std::vector<Value> values_;
};

// Binds `args` to `params` as Python binds a call to `fun(params...)`, and
// returns one value per parameter (defaults filled in), readable by name;
// `params` must outlive the result. Throws UsageError with Python's
// TypeError text: missing required arguments, too many positional
// arguments, an unexpected keyword, a value given twice. A last parameter
// named `**name` is Python's **kwargs: it gets a map of the keywords no other
// parameter takes (an empty map when none), and no default is needed.
[[nodiscard]] Args BindArgs(const std::string& function, const std::vector<Param>& params, const ParsedArgs& args);

}  // namespace brine::args
