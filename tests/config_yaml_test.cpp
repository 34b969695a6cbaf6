// config/'s YAML typing: scalars, documents, keys, merges and errors, as
// Salt's loader types them.
//
// The scalar-typing and document tests use PyYAML itself as the oracle (Debian's
// python3-yaml), with the two SaltYamlSafeLoader changes brine copies written
// out in the oracle script; without python3 + PyYAML those cases only warn.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "brine/config/yaml.h"
#include "brine/core/json.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::config::ParseYaml;
using brine::config::TypeYamlScalar;
using brine::config::YamlError;
using brine::test::TempDir;
using brine::test::WriteFile;

namespace {

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string YamlErrorOf(std::string_view document) {
  try {
    (void)ParseYaml(document);
  } catch (const YamlError& e) {
    return e.what();
  }
  return "";
}

bool PyYamlAvailable() {
  static const bool available = std::system("/usr/bin/python3 -c 'import yaml' >/dev/null 2>&1") == 0;
  return available;
}

// Runs `script` (Python) with python3 over `inputs`, written one JSON string a
// line to a file named by argv[1]; returns stdout's lines.
std::vector<std::string> RunPython(const TempDir& dir, std::string_view script,
                                   const std::vector<std::string>& inputs) {
  std::string in_text;
  for (const std::string& input : inputs) in_text += ToJson(Value(input)) + "\n";
  WriteFile(dir / "oracle.py", script);
  WriteFile(dir / "in.jsonl", in_text);
  std::string cmd = "/usr/bin/python3 '" + (dir / "oracle.py").string() + "' '" +
                    (dir / "in.jsonl").string() + "' > '" + (dir / "out.jsonl").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::string> lines;
  std::istringstream out(ReadFile(dir / "out.jsonl"));
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  REQUIRE(lines.size() == inputs.size());
  return lines;
}

// PyYAML's SafeLoader plus the SaltYamlSafeLoader changes that brine copies
// (salt/utils/yamlloader.py): an unsigned int loses its leading zeros before
// PyYAML's int constructor sees it, and timestamps stay text. Where Salt's
// loader itself crashes (an IndexError on "0_"), brine documents PyYAML's
// answer, so the oracle falls back to plain SafeLoader there.
constexpr std::string_view kOraclePrelude = R"PY(
import json, sys, yaml
from yaml.nodes import ScalarNode

class SaltLike(yaml.SafeLoader):
    def construct_scalar(self, node):
        if (node.tag == "tag:yaml.org,2002:int" and node.value != "0"
                and node.value.startswith("0")
                and not node.value.startswith(("0b", "0x"))):
            node.value = node.value.lstrip("0") or "0"
        return super().construct_scalar(node)

SaltLike.add_constructor("tag:yaml.org,2002:timestamp", SaltLike.construct_scalar)

def inputs():
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)
)PY";

constexpr std::string_view kScalarOracle = R"PY(
def typed(loader_class, text):
    loader = loader_class("")
    tag = loader.resolve(ScalarNode, text, (True, False))
    return loader.construct_object(ScalarNode(tag, text), deep=True)

for text in inputs():
    try:
        try:
            value = typed(SaltLike, text)
        except IndexError:
            value = typed(yaml.SafeLoader, text)
    except Exception:
        print(json.dumps({"t": "error"}))
        continue
    if value is None:
        r = {"t": "null"}
    elif isinstance(value, bool):
        r = {"t": "bool", "v": value}
    elif isinstance(value, int):
        r = {"t": "int", "v": str(value)}
    elif isinstance(value, float):
        r = {"t": "float", "v": repr(value)}
    elif isinstance(value, str):
        r = {"t": "str", "v": value}
    else:
        r = {"t": type(value).__name__}
    print(json.dumps(r))
)PY";

constexpr std::string_view kDocumentOracle = R"PY(
for text in inputs():
    try:
        value = yaml.load(text, Loader=SaltLike)
        print(json.dumps({"ok": json.dumps(value, ensure_ascii=False)}))
    except Exception as e:
        print(json.dumps({"error": type(e).__name__}))
)PY";

// TypeYamlScalar's answer in the oracle's shape.
Value OurScalar(const std::string& text) {
  Value v;
  try {
    v = TypeYamlScalar(text);
  } catch (const YamlError&) {
    return Value::Map({{"t", "error"}});
  }
  switch (v.kind()) {
    case Value::Kind::kNull:
      return Value::Map({{"t", "null"}});
    case Value::Kind::kBool:
      return Value::Map({{"t", "bool"}, {"v", v.as_bool()}});
    case Value::Kind::kInt:
      return Value::Map({{"t", "int"}, {"v", std::to_string(v.as_int())}});
    case Value::Kind::kUint:
      return Value::Map({{"t", "int"}, {"v", std::to_string(v.as_uint())}});
    case Value::Kind::kFloat:
      return Value::Map({{"t", "float"}, {"v", brine::PythonFloatRepr(v.as_float())}});
    case Value::Kind::kString:
      return Value::Map({{"t", "str"}, {"v", v.as_string()}});
    default:
      return Value::Map({{"t", "other"}});
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Scalar typing

TEST_CASE("yaml: plain scalars are typed as Salt's loader types them", "[config]") {
  CHECK(TypeYamlScalar("yes") == Value(true));
  CHECK(TypeYamlScalar("No") == Value(false));
  CHECK(TypeYamlScalar("on") == Value(true));
  CHECK(TypeYamlScalar("OFF") == Value(false));
  CHECK(TypeYamlScalar("True") == Value(true));
  CHECK(TypeYamlScalar("FALSE") == Value(false));
  CHECK(TypeYamlScalar("yES") == Value("yES"));
  CHECK(TypeYamlScalar("y") == Value("y"));
  CHECK(TypeYamlScalar("~").is_null());
  CHECK(TypeYamlScalar("null").is_null());
  CHECK(TypeYamlScalar("Null").is_null());
  CHECK(TypeYamlScalar("NULL").is_null());
  CHECK(TypeYamlScalar("").is_null());
  CHECK(TypeYamlScalar("nULL") == Value("nULL"));
  CHECK(TypeYamlScalar("0x1F") == Value(31));
  CHECK(TypeYamlScalar("-0x1f") == Value(-31));
  CHECK(TypeYamlScalar("0b101") == Value(5));
  CHECK(TypeYamlScalar("1_000") == Value(1000));
  CHECK(TypeYamlScalar("1:20") == Value(80));
  CHECK(TypeYamlScalar("190:20:30") == Value(685230));
  CHECK(TypeYamlScalar("1:60") == Value("1:60"));
  // Salt drops an unsigned int's leading zeros (PyYAML alone would say 8).
  CHECK(TypeYamlScalar("010") == Value(10));
  CHECK(TypeYamlScalar("0777") == Value(777));
  CHECK(TypeYamlScalar("-010") == Value(-8));
  CHECK(TypeYamlScalar("00") == Value(0));
  CHECK(TypeYamlScalar("08") == Value("08"));
  CHECK(TypeYamlScalar("0o10") == Value("0o10"));
  CHECK(TypeYamlScalar("1.5") == Value(1.5));
  CHECK(TypeYamlScalar("1.") == Value(1.0));
  CHECK(TypeYamlScalar(".5") == Value(0.5));
  CHECK(TypeYamlScalar("-.5") == Value("-.5"));
  CHECK(TypeYamlScalar("1.0e+5") == Value(100000.0));
  CHECK(TypeYamlScalar("1e5") == Value("1e5"));
  CHECK(TypeYamlScalar("1.0e5") == Value("1.0e5"));
  CHECK(TypeYamlScalar("1:20.5") == Value(80.5));
  CHECK(TypeYamlScalar(".inf") == Value(std::numeric_limits<double>::infinity()));
  CHECK(TypeYamlScalar("-.inf") == Value(-std::numeric_limits<double>::infinity()));
  CHECK(std::isnan(TypeYamlScalar(".nan").as_float()));
  CHECK(TypeYamlScalar("-.nan") == Value("-.nan"));
  CHECK(TypeYamlScalar("2024-05-01") == Value("2024-05-01"));
  CHECK(TypeYamlScalar("18446744073709551615") == Value(18446744073709551615ULL));
  CHECK(TypeYamlScalar("-9223372036854775808") == Value(std::numeric_limits<std::int64_t>::min()));
  // Beyond 64 bits a decimal int keeps its digits as text (Value has no big ints).
  CHECK(TypeYamlScalar("18446744073709551616") == Value("18446744073709551616"));
  CHECK(TypeYamlScalar("-9223372036854775809") == Value("-9223372036854775809"));
  CHECK(TypeYamlScalar("salt/job/*") == Value("salt/job/*"));
  CHECK_THROWS_AS(TypeYamlScalar("="), YamlError);
  CHECK_THROWS_AS(TypeYamlScalar("<<"), YamlError);
  CHECK_THROWS_AS(TypeYamlScalar("0x_"), YamlError);
  CHECK(TypeYamlScalar("0_") == Value(0));
}

TEST_CASE("yaml: scalar typing agrees with PyYAML plus Salt's changes on many inputs", "[config]") {
  // The README's commands install Debian's python3-yaml: without it this oracle fails.
  REQUIRE(PyYamlAvailable());
  std::vector<std::string> inputs = {"yes",
                                     "Yes",
                                     "YES",
                                     "yEs",
                                     "no",
                                     "No",
                                     "NO",
                                     "nO",
                                     "true",
                                     "True",
                                     "TRUE",
                                     "tRUE",
                                     "false",
                                     "False",
                                     "FALSE",
                                     "on",
                                     "On",
                                     "ON",
                                     "oN",
                                     "off",
                                     "Off",
                                     "OFF",
                                     "y",
                                     "n",
                                     "Y",
                                     "N",
                                     "~",
                                     "null",
                                     "Null",
                                     "NULL",
                                     "nuLL",
                                     "",
                                     "0",
                                     "-0",
                                     "+0",
                                     "00",
                                     "010",
                                     "-010",
                                     "+010",
                                     "0777",
                                     "08",
                                     "0o10",
                                     "0O10",
                                     "0x1F",
                                     "0X1F",
                                     "0x1f",
                                     "-0x1F",
                                     "0x_",
                                     "0x_1",
                                     "0b101",
                                     "0b",
                                     "0b_",
                                     "0b2",
                                     "-0b11",
                                     "1_000",
                                     "_1",
                                     "1__0",
                                     "0_",
                                     "0__7",
                                     "1:20",
                                     "1:2:3",
                                     "-1:20",
                                     "1:60",
                                     "1:5",
                                     "01:20",
                                     "0:10",
                                     "190:20:30",
                                     "1_0:20",
                                     "1:20.5",
                                     "1:20.",
                                     "-1:20.5",
                                     "1.5",
                                     "1.",
                                     ".5",
                                     "-.5",
                                     "+.5",
                                     "1e5",
                                     "1E5",
                                     "1.0e5",
                                     "1.0e+5",
                                     "1.0E-5",
                                     "1.e+5",
                                     ".5e-3",
                                     "1_000.5",
                                     "1._5",
                                     ".inf",
                                     ".Inf",
                                     ".INF",
                                     "-.inf",
                                     "+.inf",
                                     ".iNf",
                                     "inf",
                                     ".nan",
                                     ".NaN",
                                     ".NAN",
                                     "-.nan",
                                     "nan",
                                     "NaN",
                                     "=",
                                     "<<",
                                     "2024-05-01",
                                     "2024-05-01 12:00:00",
                                     "2001-12-14t21:59:43.10-05:00",
                                     "12:30:00",
                                     "123456789",
                                     "9223372036854775807",
                                     "-9223372036854775808",
                                     "salt/job/*",
                                     "a b",
                                     "1 2",
                                     "0.0",
                                     "-0.0",
                                     "00.5",
                                     "0.5_",
                                     "1_",
                                     "+",
                                     "-",
                                     ".",
                                     "..",
                                     "1:",
                                     ":1",
                                     "1::2"};
  // A seeded spray over the characters the resolver cares about.
  std::mt19937 rng(20240501);
  const std::string alphabet = "0123456789012345_:.+-eE.xb.oaAfinIN~yY01";
  std::uniform_int_distribution<std::size_t> length(1, 9);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (std::size_t n = length(rng); n > 0; --n) s += alphabet[pick(rng)];
    inputs.push_back(s);
  }
  TempDir dir;
  std::vector<std::string> lines =
      RunPython(dir, std::string(kOraclePrelude) + std::string(kScalarOracle), inputs);
  int mismatches = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Value expected = ParseJson(lines[i]);
    Value ours = OurScalar(inputs[i]);
    if (!(expected == ours) && ++mismatches <= 20) {
      INFO("input: " << ToJson(Value(inputs[i])) << "  PyYAML: " << lines[i]
                     << "  brine: " << ToJson(ours));
      CHECK(expected == ours);
    }
  }
  CHECK(mismatches == 0);
}

// ---------------------------------------------------------------------------
// Documents

TEST_CASE("yaml: a comma outside any flow collection is an error and not a yaml-cpp hang (fuzz regression)",
          "[config]") {
  // Found by fuzz/fuzz_arguments: yaml-cpp 0.7 loops forever, allocating,
  // on these one-line documents; PyYAML refuses each of them.
  for (const char* doc : {",", ", {01b", "  ,", "&a ,", "!!str ,", "--- ,", "... ,", "[a] ,", "\"a\" ,", "'x' ,",
                          "{a: 1} , b", "[a, [b]] ,", "!!bin,ary x", "!a,b x", "&a,b"}) {
    INFO(doc);
    CHECK(YamlErrorOf(doc).find("',' outside a flow collection") != std::string::npos);
  }
  // A ',' inside a plain scalar or a flow collection is fine.
  CHECK(ParseYaml("a, b") == Value("a, b"));
  CHECK(ParseYaml("a ,") == Value("a ,"));
  CHECK(ParseYaml("- a, b") == Value::List({"a, b"}));
  CHECK(ParseYaml("k: a, b") == Value::Map({{"k", "a, b"}}));
  CHECK(ParseYaml("[a, 'b,', \"c\\\",\"]") == Value::List({"a", "b,", "c\","}));
  CHECK(ParseYaml("{a: [1, 2], b: c}") ==
        Value::Map({{"a", Value::List({1, 2})}, {"b", "c"}}));
  CHECK(ParseYaml("x # , y") == Value("x"));
}

TEST_CASE("yaml: ParseYaml keeps the order of map keys and list items", "[config]") {
  Value v = ParseYaml("zeta: 1\nalpha: [3, 1, 2]\nmid:\n  b: x\n  a: {d: 1, c: 2}\n");
  Value expected = Value::Map({
      {"zeta", 1},
      {"alpha", Value::List({3, 1, 2})},
      {"mid", Value::Map({{"b", "x"}, {"a", Value::Map({{"d", 1}, {"c", 2}})}})},
  });
  CHECK(v == expected);
  CHECK(ParseYaml("- b\n- a\n- {y: 1, x: 2}\n") ==
        Value::List({"b", "a", Value::Map({{"y", 1}, {"x", 2}})}));
}

TEST_CASE("yaml: quoted and block scalars stay strings and explicit tags are honoured",
          "[config]") {
  Value v = ParseYaml(
      "a: '010'\nb: \"yes\"\nc: |\n  1\nd: >\n  true\ne: !!str 12\nf: !!int \"0x10\"\n"
      "g: !!float '1'\nh: !!bool 'on'\ni: !!null ''\nj: !!binary aGVsbG8=\nk: !!timestamp "
      "2001-12-14\n"
      "l: !!omap [x: 1, y: 2]\nm: !!str\n");
  CHECK(*v.Find("a") == Value("010"));
  CHECK(*v.Find("b") == Value("yes"));
  CHECK(*v.Find("c") == Value("1\n"));
  CHECK(*v.Find("d") == Value("true\n"));
  CHECK(*v.Find("e") == Value("12"));
  CHECK(*v.Find("f") == Value(16));
  CHECK(*v.Find("g") == Value(1.0));
  CHECK(*v.Find("h") == Value(true));
  CHECK(v.Find("i")->is_null());
  CHECK(*v.Find("j") == Value("hello"));
  CHECK(*v.Find("k") == Value("2001-12-14"));
  CHECK(*v.Find("l") == Value::Map({{"x", 1}, {"y", 2}}));
  CHECK(*v.Find("m") == Value(""));
  CHECK_THAT(YamlErrorOf("a: !!set {x, y}"), Catch::Contains("could not determine a constructor"));
  CHECK_THAT(YamlErrorOf("a: !custom 1"), Catch::Contains("'!custom'"));
  CHECK_THAT(YamlErrorOf("a: !!int abc"), Catch::StartsWith("line 1, column 4: "));
}

TEST_CASE("yaml: keys become strings as json.dumps writes Python keys", "[config]") {
  Value v = ParseYaml("1: a\ntrue: b\n~: c\n1.5: d\n.inf: e\n'x': f\n");
  CHECK(
      v ==
      Value::Map(
          {{"1", "a"}, {"true", "b"}, {"null", "c"}, {"1.5", "d"}, {"Infinity", "e"}, {"x", "f"}}));
  CHECK_THAT(YamlErrorOf("? [a, b]\n: c\n"), Catch::Contains("unacceptable key"));
}

TEST_CASE("yaml: a duplicate key is refused as Salt refuses it", "[config]") {
  CHECK(YamlErrorOf("a: 1\nb: 2\na: 3\n") == "line 1, column 1: found conflicting ID 'a'");
  CHECK_THAT(YamlErrorOf("top:\n  x: 1\n  x: 2\n"), Catch::Contains("conflicting ID 'x'"));
}

TEST_CASE("yaml: merge keys copy what the map does not set itself", "[config]") {
  Value v = ParseYaml(
      "base: &base {a: 1, b: 2}\nother: &other {c: 3}\n"
      "one:\n  <<: *base\n  b: 20\n  z: 0\n"
      "two:\n  <<: [*base, *other]\n");
  CHECK(*v.Find("one") == Value::Map({{"a", 1}, {"b", 20}, {"z", 0}}));
  CHECK(*v.Find("two") == Value::Map({{"c", 3}, {"a", 1}, {"b", 2}}));
  CHECK_THAT(YamlErrorOf("a: &a {x: 1}\nb: &b {x: 2}\nc:\n  <<: [*a, *b]\n"),
             Catch::Contains("conflicting ID 'x'"));
  CHECK_THAT(YamlErrorOf("c:\n  <<: 5\n"), Catch::Contains("for merging"));
}

TEST_CASE("yaml: empty, multi-document, deep and exploding documents", "[config]") {
  CHECK(ParseYaml("").is_null());
  CHECK(ParseYaml("# nothing here\n").is_null());
  CHECK_THAT(YamlErrorOf("a: 1\n---\nb: 2\n"), Catch::Contains("single document"));
  CHECK_THAT(YamlErrorOf("a: [1, 2\n"), Catch::StartsWith("line "));
  std::string deep(1500, '[');
  deep += std::string(1500, ']');
  CHECK_THROWS_AS(ParseYaml(deep), YamlError);
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char name = 'b'; name <= 'h'; ++name) {
    bomb += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = name;
  }
  CHECK_THAT(YamlErrorOf(bomb), Catch::Contains("more than 1000000 values"));
}

TEST_CASE("yaml: ParseYaml agrees with PyYAML plus Salt's changes on whole documents", "[config]") {
  // The README's commands install Debian's python3-yaml: without it this oracle fails.
  REQUIRE(PyYamlAvailable());
  std::vector<std::string> docs = {
      "interface: 0.0.0.0\npublish_port: 4505\nuser: salt\nfile_roots:\n  base:\n    - /srv/salt\n"
      "    - /srv/formulas\nnodegroups:\n  web: 'L@web1,web2'\n  db: G@role:db\n",
      "keep_jobs: 010\nkeep_jobs_seconds: 0x10\nloop_interval: 1:00\ntimeout: 1_0\n",
      "a: yes\nb: No\nc: ~\nd:\ne: 1.5\nf: .inf\ng: -.inf\nh: 1e5\ni: 2024-05-01\nj: '12'\n",
      "flow: {a: [1, 2, {b: c}], 'd e': \"f\\tg\", h: [], i: {}}\n",
      "anchors:\n  - &x {k: v}\n  - *x\n  - &y [1, 2]\n  - *y\n",
      "block: |\n  line one\n  line two\nfolded: >\n  folded\n  text\n\n  para\nkeep: |+\n  x\n\n"
      "strip: |-\n  y\n",
      "multi: this is\n  a plain\n  multi-line scalar\nquoted: 'it''s'\nuni: \"\\u00e9t\\u00e9\"\n",
      "2: int key\ntrue: bool key\n~: null key\n2.5: float key\n",
      "list:\n- a\n- b:\n    c: d\n- - nested\n  - list\n",
      "tags: [!!str 010, !!int '010', !!float '3', !!bool 'Off', !!null x]\n",
      "event_return_whitelist:\n  - salt/job/*/ret/*\n  - 'salt/run/*'\nbrine.database: "
      "/x.sqlite\n",
      "emoji: \"\\U0001F600\"\nescaped: \"a\\\\b\\\"c\"\n",
      "- 0b1010\n- 0777\n- -0777\n- +12\n- 12:30\n- 1:2:3.5\n- .NaN\n- 00\n",
      "# comment only\n",
      "[1, 2, 3]\n",
      "just a string\n",
  };
  TempDir dir;
  std::vector<std::string> lines =
      RunPython(dir, std::string(kOraclePrelude) + std::string(kDocumentOracle), docs);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    INFO("document: " << docs[i] << "PyYAML: " << lines[i]);
    Value expected = ParseJson(lines[i]);
    REQUIRE(expected.Find("ok") != nullptr);
    std::string ours = ToJson(ParseYaml(docs[i]), JsonStyle::Python(-1));
    CHECK(ours == expected.Find("ok")->as_string());
  }
}
