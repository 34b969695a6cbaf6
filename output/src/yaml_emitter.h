// PyYAML's safe_dump of a brine::Value, byte for byte, with either of the
// two emitters PyYAML can run:
//
//   - kLibyaml: libyaml 0.2.5's emitter, which PyYAML uses through
//     yaml.CSafeDumper. Salt's salt.utils.yaml.safe_dump builds on CSafeDumper
//     whenever PyYAML has libyaml (Debian's python3-yaml and PyPI's wheels
//     do), so this is what `salt-run --out yaml` prints.
//   - kPyYaml: PyYAML's pure-Python emitter (yaml.SafeDumper, which
//     yaml.safe_dump uses), for a PyYAML without libyaml.
//
// Both share PyYAML's SafeRepresenter and Resolver: keys sorted by code point,
// None/bool/int as `null`/`true`/`false`/digits, floats as repr() lower-cased
// with `.0` added before a bare exponent (`1.0e+16`), `.inf`, `-.inf`, `.nan`;
// a str that would read back as another type (`'yes'`, `'1.5'`, `'null'`,
// `'20240101120000123456'`, `''`) is quoted. The emitters differ where noted
// in yaml_emitter.cpp: which characters count as printable and as line breaks,
// the simple-key length rule, folding of double-quoted scalars, and the `...`
// PyYAML writes after a plain top-level scalar.
#pragma once

#include <string>

#include "brine/core/value.h"

namespace brine::output {

enum class YamlDialect { kLibyaml, kPyYaml };

struct YamlStyle {
  // The `indent` argument of yaml.dump; PyYAML and libyaml use 2 unless 2..9.
  int indent = 2;
  // default_flow_style=True: every collection in flow style (`{a: [1, 2]}`).
  bool flow = false;
  YamlDialect dialect = YamlDialect::kLibyaml;
};

// The text yaml.dump returns (ending in a line break).
[[nodiscard]] std::string DumpYaml(const Value& data, const YamlStyle& style);

}  // namespace brine::output
