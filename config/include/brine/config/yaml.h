// YAML text -> brine::Value, typed the way Salt's loader types it.
//
// Salt reads its config files and salt-run's CLI arguments with
// salt.utils.yaml.safe_load: PyYAML's SafeLoader (YAML 1.1 implicit typing)
// with Salt's SaltYamlSafeLoader changes. brine must read the same files and
// arguments to the same values, so the typing here is PyYAML's resolver,
// regex for regex, plus Salt's changes:
//
//   plain scalar                        Value
//   ----------------------------------  -----------------------------------------
//   ~ null Null NULL (or nothing)       null
//   yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF
//                                       bool (no other spellings: `yES` is a string)
//   [-+]?0b[01_]+                       int, binary: 0b101 = 5
//   [-+]?0x[0-9a-fA-F_]+                int, hex: 0x1F = 31
//   [-+]?0[0-7_]+                       int; SALT: unsigned leading zeros are
//                                       dropped, so 010 = 10 and 0777 = 777, while a
//                                       signed -010 / +010 is still octal (-8 / 8).
//                                       Plain PyYAML reads 010 as 8. `08`, `0o10`
//                                       are strings.
//   [-+]?(0|[1-9][0-9_]*)               int, decimal; `_` ignored: 1_000 = 1000
//   [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+    int, base 60: 1:20 = 80, 190:20:30 = 685230
//   [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?
//   \.[0-9][0-9_]*([eE][-+][0-9]+)?     float: 1.5, 1., .5, 1.0e+5. The exponent needs
//                                       a sign and the number a dot, so `1e5`,
//                                       `1.0e5` and `-.5` are strings.
//   [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
//                                       float, base 60: 1:20.5 = 80.5
//   [-+]?\.(inf|Inf|INF), \.(nan|NaN|NAN)
//                                       float infinities and NaN (`-.nan` is a string)
//   YYYY-MM-DD..., a timestamp          string, exactly as written (SALT: Salt keeps
//                                       timestamps as text; PyYAML makes datetimes)
//   =  and  <<  as values               YamlError (PyYAML has no constructor for them)
//   anything else                       string
//
// Quoted and block scalars are always strings. A decimal integer that does not
// fit 64 bits (Python would keep it exact) becomes the string of its digits, so
// a 20-digit jid keeps every digit; a hex, octal or binary one becomes a float.
#pragma once

#include <cstddef>
#include <string_view>

#include "brine/config/config_error.h"
#include "brine/core/value.h"

namespace brine::config {

// Nesting (maps and lists) deeper than this is refused; so is a document whose
// aliases expand to more than kMaxYamlValues values (a "billion laughs" file).
inline constexpr int kMaxYamlDepth = 1000;
inline constexpr std::size_t kMaxYamlValues = 1'000'000;

// The value of a plain (unquoted) scalar whose text is `text`, by the table
// above. `text` is the scalar's content as YAML delivers it: a plain scalar
// never starts or ends with a space or a line break, so text with those is not
// expected here and simply does not match any typed form (it stays a string).
// Throws YamlError where PyYAML fails to construct the value: `=`, `<<`, and a
// 0b/0x prefix followed only by underscores (`0x_`). brine-run, like Salt's
// yamlify_arg, keeps the argument as a string in that case.
[[nodiscard]] Value TypeYamlScalar(std::string_view text);

// Parses one YAML document into a Value, as salt.utils.yaml.safe_load does:
//   - maps keep the document's key order; lists keep their order;
//   - plain scalars are typed by TypeYamlScalar, quoted and block ones are strings;
//   - explicit tags !!str !!int !!float !!bool !!null !!binary (raw bytes)
//     !!timestamp (kept as text) !!map !!seq !!omap (a map) are honoured; any
//     other tag (!!set, !!pairs, !!python/..., local !tags) is a YamlError;
//   - map keys become strings the way json.dumps writes Python keys:
//     1 -> "1", true -> "true", null -> "null", 1.5 -> "1.5";
//     a list or map used as a key is a YamlError;
//   - a key given twice in one map is a YamlError ("found conflicting ID 'a'",
//     Salt's rule; plain PyYAML would keep the last);
//   - merge keys (`<<: *base` or `<<: [*a, *b]`) copy the entries of the merged
//     maps that the map does not set itself, ahead of its own entries (Salt's
//     flatten_mapping); the same key from two merged maps is a conflict;
//   - an empty document (or only comments) is null; a stream of more than one
//     document is a YamlError.
// Throws YamlError "line L, column C: <what>" (1-based) on a syntax error or
// any refusal above. Known gap: a scalar with the explicit non-specific tag
// `! 12` is a string here, where PyYAML types it as if plain (12).
[[nodiscard]] Value ParseYaml(std::string_view document);

}  // namespace brine::config
