// PyYAML's scalar constructors, shared by TypeYamlScalar (implicit typing) and
// ParseYaml (explicit !!int / !!float / !!bool tags). Internal to brine_config.
#pragma once

#include <string_view>

#include "brine/core/value.h"

namespace brine::config::internal {

// construct_yaml_int with Salt's leading-zero change. Accepts any text the int
// forms in yaml.h accept, and more (an explicit !!int need not match the regex).
// Throws YamlError when the text has no digits where PyYAML's int() needs some.
[[nodiscard]] Value ConstructYamlInt(std::string_view text);

// construct_yaml_float. Throws YamlError when Python's float() would refuse.
[[nodiscard]] Value ConstructYamlFloat(std::string_view text);

// construct_yaml_bool: yes/true/on and no/false/off in any case. Throws
// YamlError for other text.
[[nodiscard]] bool ConstructYamlBool(std::string_view text);

}  // namespace brine::config::internal
