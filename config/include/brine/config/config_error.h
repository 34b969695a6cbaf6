// The exceptions brine_config throws.
//
// ConfigError: a config file or value brine cannot use. The message is meant
// for the operator as is, and names the file, the key and what was expected:
//   /etc/salt/master.d/brine.conf: brine.batch_max_events: expected a positive integer, got 'lots'
// brine-master reports it and exits 2.
//
// YamlError: text that is not YAML, or YAML that Salt's loader would refuse
// (duplicate keys, an unsupported tag, `0x_`). Thrown by ParseYaml and
// TypeYamlScalar without a file name ("line 3, column 5: ..."); the config
// loader rethrows it as a ConfigError prefixed with the file.
#pragma once

#include <stdexcept>

namespace brine::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class YamlError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace brine::config
