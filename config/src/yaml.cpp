// ParseYaml: yaml-cpp parses, this file builds the Value the way
// SaltYamlSafeLoader constructs Python objects (salt/utils/yamlloader.py on top
// of PyYAML's SafeConstructor). yaml-cpp types stay in this file.
//
// yaml-cpp reports a plain scalar with the tag "?" and a quoted or block one
// with "!", which is all the implicit typing needs; the plain null spellings
// arrive as NodeType::Null. Map entries come in document order and duplicates
// are kept, so the conflict check below sees them.
#include "brine/config/yaml.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "yaml_scalar.h"

namespace brine::config {
namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

std::string Where(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

[[noreturn]] void Fail(const YAML::Node& node, const std::string& what) {
  throw YamlError(Where(node.Mark()) + what);
}

// The standard tag's short name ("int" for tag:yaml.org,2002:int), "" for the
// non-specific tags "?" and "!", or the tag itself for anything else.
std::string ShortTag(const std::string& tag) {
  if (tag == "?" || tag == "!" || tag.empty()) return "";
  if (tag.starts_with(kTagPrefix)) return tag.substr(kTagPrefix.size());
  return tag;
}

bool IsPlain(const YAML::Node& node) { return node.Tag() == "?"; }

// The value of one base64 character, or -1 for `=`, -2 for a blank, -3 for junk.
int Base64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  if (c == '=') return -1;
  if (c == ' ' || c == '\n' || c == '\r' || c == '\t') return -2;
  return -3;
}

// base64 as !!binary carries it (line breaks and spaces allowed), to raw bytes.
std::string DecodeBase64(const YAML::Node& node, const std::string& text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    int v = Base64Digit(c);
    if (v == -2) continue;
    if (v == -1) {
      padding = true;
      continue;
    }
    if (v == -3 || padding) Fail(node, "failed to decode base64 data");
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6) Fail(node, "failed to decode base64 data");
  return out;
}

// A map key as a string, the way json.dumps writes a Python dict's keys.
std::string KeyString(const YAML::Node& key_node, const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString:
      return key.as_string();
    case Value::Kind::kNull:
      return "null";
    case Value::Kind::kBool:
      return key.as_bool() ? "true" : "false";
    case Value::Kind::kInt:
      return std::to_string(key.as_int());
    case Value::Kind::kUint:
      return std::to_string(key.as_uint());
    case Value::Kind::kFloat: {
      double d = key.as_float();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return PythonFloatRepr(d);
    }
    case Value::Kind::kList:
    case Value::Kind::kMap:
      break;
  }
  Fail(key_node, "found unacceptable key (a list or map cannot be a key)");
}

class Builder {
 public:
  Value Build(const YAML::Node& node, int depth) {
    if (depth > kMaxYamlDepth) Fail(node, "nesting deeper than " + std::to_string(kMaxYamlDepth));
    if (++values_ > kMaxYamlValues) {
      Fail(node, "document expands to more than " + std::to_string(kMaxYamlValues) + " values");
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
        return BuildNull(node);
      case YAML::NodeType::Scalar:
        return BuildScalar(node);
      case YAML::NodeType::Sequence:
        return BuildSequence(node, depth);
      case YAML::NodeType::Map:
        return BuildMap(node, depth);
      case YAML::NodeType::Undefined:
        break;
    }
    return Value();
  }

 private:
  static Value BuildNull(const YAML::Node& node) {
    std::string tag = ShortTag(node.Tag());
    if (tag.empty() || tag == "null") return Value();
    return BuildTaggedScalar(node, tag, "");
  }

  static Value BuildScalar(const YAML::Node& node) {
    const std::string& text = node.Scalar();
    if (IsPlain(node)) {
      try {
        return TypeYamlScalar(text);
      } catch (const YamlError& e) {
        Fail(node, e.what());
      }
    }
    std::string tag = ShortTag(node.Tag());
    if (tag.empty()) return Value(text);
    return BuildTaggedScalar(node, tag, text);
  }

  static Value BuildTaggedScalar(const YAML::Node& node, const std::string& tag,
                                 const std::string& text) {
    try {
      if (tag == "str") return Value(text);
      if (tag == "int") return internal::ConstructYamlInt(text);
      if (tag == "float") return internal::ConstructYamlFloat(text);
      if (tag == "bool") return Value(internal::ConstructYamlBool(text));
      if (tag == "null") return Value();
      // SALT: timestamps stay text (3006 constructs them as plain scalars).
      if (tag == "timestamp") return Value(text);
      if (tag == "binary") return Value(DecodeBase64(node, text));
    } catch (const YamlError& e) {
      Fail(node, e.what());
    }
    Fail(node, "could not determine a constructor for the tag '" + node.Tag() + "'");
  }

  Value BuildSequence(const YAML::Node& node, int depth) {
    std::string tag = ShortTag(node.Tag());
    if (tag == "omap") return BuildOmap(node, depth);
    if (!tag.empty() && tag != "seq") {
      Fail(node, "could not determine a constructor for the tag '" + node.Tag() + "'");
    }
    ValueList list;
    list.reserve(node.size());
    for (const YAML::Node& item : node) list.push_back(Build(item, depth + 1));
    return Value(std::move(list));
  }

  // !!omap: a list of one-entry maps, read as one map (Salt 3007's OrderedDict).
  Value BuildOmap(const YAML::Node& node, int depth) {
    ValueMap map;
    for (const YAML::Node& item : node) {
      if (!item.IsMap() || item.size() != 1) {
        Fail(item, "expected a single mapping item in an ordered map");
      }
      for (auto it = item.begin(); it != item.end(); ++it) {
        const YAML::Node key_node = it->first;
        const YAML::Node value_node = it->second;
        std::string key = KeyString(key_node, Build(key_node, depth + 1));
        map.emplace_back(std::move(key), Build(value_node, depth + 1));
      }
    }
    return CheckConflicts(node, std::move(map));
  }

  static bool IsMergeKey(const YAML::Node& key) {
    if (!key.IsScalar()) return false;
    if (IsPlain(key)) return key.Scalar() == "<<";
    return ShortTag(key.Tag()) == "merge";
  }

  Value BuildMap(const YAML::Node& node, int depth) {
    std::string tag = ShortTag(node.Tag());
    if (!tag.empty() && tag != "map") {
      Fail(node, "could not determine a constructor for the tag '" + node.Tag() + "'");
    }
    ValueMap own;
    ValueMap merged;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies: the iterator's pair is a temporary proxy.
      const YAML::Node key_node = it->first;
      const YAML::Node value_node = it->second;
      if (IsMergeKey(key_node)) {
        AppendMerged(value_node, depth, merged);
        continue;
      }
      std::string key;
      // PyYAML (and Salt's flatten_mapping) read a plain `=` key as the string "=".
      if (key_node.IsScalar() && IsPlain(key_node) && key_node.Scalar() == "=") {
        key = "=";
      } else {
        key = KeyString(key_node, Build(key_node, depth + 1));
      }
      own.emplace_back(std::move(key), Build(value_node, depth + 1));
    }
    if (merged.empty()) return CheckConflicts(node, std::move(own));
    // SALT flatten_mapping: merged entries whose key the map sets itself are
    // dropped; the rest go first, and the conflict check then runs on the whole.
    std::unordered_set<std::string> own_keys;
    for (const auto& entry : own) own_keys.insert(entry.first);
    ValueMap all;
    for (auto& entry : merged) {
      if (!own_keys.contains(entry.first)) all.push_back(std::move(entry));
    }
    for (auto& entry : own) all.push_back(std::move(entry));
    return CheckConflicts(node, std::move(all));
  }

  // `<<: map` adds the map's entries; `<<: [a, b]` adds b's, then a's (PyYAML
  // reverses the list so earlier maps were meant to win; under Salt's conflict
  // check two merged maps may simply not share a key).
  void AppendMerged(const YAML::Node& value, int depth, ValueMap& merged) {
    if (value.IsMap()) {
      Value m = Build(value, depth + 1);
      for (auto& entry : m.as_map()) merged.push_back(std::move(entry));
      return;
    }
    if (value.IsSequence()) {
      std::vector<Value> maps;
      for (const YAML::Node& item : value) {
        if (!item.IsMap()) Fail(item, "expected a mapping for merging");
        maps.push_back(Build(item, depth + 1));
      }
      for (auto it = maps.rbegin(); it != maps.rend(); ++it) {
        for (auto& entry : it->as_map()) merged.push_back(std::move(entry));
      }
      return;
    }
    Fail(value, "expected a mapping or list of mappings for merging");
  }

  // SALT: a key twice in one mapping is an error ("found conflicting ID"),
  // where PyYAML would keep the last value silently.
  static Value CheckConflicts(const YAML::Node& node, ValueMap map) {
    std::unordered_set<std::string_view> seen;
    for (const auto& entry : map) {
      if (!seen.insert(entry.first).second) {
        Fail(node, "found conflicting ID '" + entry.first + "'");
      }
    }
    return Value(std::move(map));
  }

  std::size_t values_ = 0;
};

// yaml-cpp 0.7 never returns from LoadAll, allocating until memory runs out,
// when a ',' (YAML's flow entry indicator) starts a token outside any [ ] or
// { }: ",", ", {a", "[a] ,", "&x ,", "\"a\" ,", "--- ,". PyYAML refuses all of
// these, and "!!bin,ary x" (an unknown tag to PyYAML). Found by
// fuzz/fuzz_arguments through brine-run's argument typing.
// This scans one line (CLI words have no line breaks) the way YAML's scanner
// splits tokens and returns the 0-based column of such a ',', or npos. A ','
// inside a plain scalar ("a, b", "a ,") or a flow collection is fine.
std::size_t BlockLevelFlowEntry(std::string_view s) {
  constexpr std::string_view kFlowIndicators = ",[]{}";
  const std::size_t n = s.size();
  auto blank = [&](std::size_t k) { return k >= n || s[k] == ' ' || s[k] == '\t'; };
  auto flow_indicator = [&](std::size_t k) { return k < n && kFlowIndicators.find(s[k]) != std::string_view::npos; };
  int flow = 0;
  bool in_plain = false;
  std::size_t i = 0;
  if ((s.substr(0, 3) == "---" || s.substr(0, 3) == "...") && blank(3)) i = 3;
  while (i < n) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      ++i;
      if (i < n && s[i] == '#') return std::string_view::npos;  // a comment
      continue;
    }
    if (in_plain) {
      // Spaces do not end a plain scalar; ": " does, and in flow an indicator.
      if (c == ':' && (blank(i + 1) || (flow > 0 && flow_indicator(i + 1)))) {
        in_plain = false;
        ++i;
      } else if (flow > 0 && flow_indicator(i)) {
        in_plain = false;  // read again as a token
      } else {
        ++i;
      }
      continue;
    }
    // A token starts here.
    if (c == '#') return std::string_view::npos;
    if (c == ',') {
      if (flow == 0) return i;
      ++i;
    } else if (c == '[' || c == '{') {
      ++flow;
      ++i;
    } else if (c == ']' || c == '}') {
      if (flow > 0) --flow;
      ++i;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < n) {
        if (c == '"' && s[i] == '\\') {
          i += 2;
        } else if (s[i] == c && c == '\'' && i + 1 < n && s[i + 1] == '\'') {
          i += 2;
        } else if (s[i++] == c) {
          break;
        }
      }
    } else if ((c == '-' || c == '?' || c == ':') && blank(i + 1)) {
      ++i;
    } else if (flow == 0 && (c == '|' || c == '>')) {
      return std::string_view::npos;  // a block scalar header
    } else if (c == '&' || c == '*' || c == '!') {
      // yaml-cpp ends an anchor, alias or tag at ',' ("!!str,x": PyYAML reads
      // the unknown tag `str,x` and refuses it too).
      while (i < n && !blank(i) && s[i] != ',' && !(flow > 0 && flow_indicator(i))) ++i;
    } else {
      in_plain = true;
      ++i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Value ParseYaml(std::string_view document) {
  if (document.find_first_of("\r\n") == std::string_view::npos) {
    if (const std::size_t column = BlockLevelFlowEntry(document); column != std::string_view::npos) {
      throw YamlError("line 1, column " + std::to_string(column + 1) +
                      ": did not find expected node content (',' outside a flow collection)");
    }
  }
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(document));
  } catch (const YAML::Exception& e) {
    throw YamlError(Where(e.mark) + e.msg);
  }
  if (docs.empty()) return Value();
  if (docs.size() > 1) {
    throw YamlError(Where(docs[1].Mark()) + "expected a single document in the stream");
  }
  try {
    return Builder().Build(docs[0], 0);
  } catch (const YAML::Exception& e) {
    throw YamlError(Where(e.mark) + e.msg);
  }
}

}  // namespace brine::config
