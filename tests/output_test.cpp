// Salt's outputters (brine::output) against Salt's own text: the spec's
// examples and Salt's unit-test expectations as golden files, and Python
// itself (json, PyYAML with and without libyaml, str(), pprint) as an oracle
// rendering the same values: tests/oracle/render.py (support/output_oracle.h).
// The highstate outputter is in output_highstate_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "brine/output/map_stream.h"
#include "brine/output/outputters.h"
#include "support/golden.h"
#include "support/output_oracle.h"

using namespace std::string_view_literals;

using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::ValueMap;
using brine::output::IsKnownOutputter;
using brine::output::OutputOptions;
using brine::output::Render;
using brine::test::CheckGolden;
using brine::test::J;
using brine::test::Indent;
using brine::test::Colored;
using brine::test::Repeat;
using brine::test::Case;
using brine::test::CheckAgainstOracle;

namespace {

// Values that exercise the quoting, folding and number rules of the
// outputters. Valid UTF-8 only: CSafeDumper cannot encode the lone
// surrogates Python uses for other bytes.
std::vector<Value> Corpus() {
  std::vector<Value> corpus;
  // Numbers, booleans, None, at the top and inside containers.
  corpus.push_back(J(R"({"f": [4.0, 12.5, 1e16, 1e-05, 0.1, -0.0, 1.5e300, 123456789.125, 2.5e-7]})"));
  corpus.push_back(Value::Map({{"inf", Value(std::numeric_limits<double>::infinity())},
                               {"ninf", Value(-std::numeric_limits<double>::infinity())}}));
  corpus.push_back(Value::Map({{"big", Value(9007199254740993LL)},
                               {"max", Value(std::numeric_limits<std::int64_t>::max())},
                               {"min", Value(std::numeric_limits<std::int64_t>::min())},
                               {"umax", Value(std::numeric_limits<std::uint64_t>::max())},
                               {"zero", Value(0)}}));
  corpus.push_back(J(R"({"t": true, "f": false, "n": null, "l": [true, null, 1.5]})"));
  corpus.push_back(J("4.0"));
  corpus.push_back(J("12"));
  corpus.push_back(J("null"));
  corpus.push_back(J("true"));
  // Strings at the top.
  corpus.push_back(Value("foo"));
  corpus.push_back(Value(""));
  corpus.push_back(Value("yes"));
  corpus.push_back(Value(" leading space"));
  corpus.push_back(Value("two\nlines\n"));
  // Scalars that read back as other types, and indicators.
  ValueList tricky;
  for (const std::string_view s :
       {"yes"sv, "No"sv, "on"sv, "OFF"sv, "true"sv, "False"sv, "null"sv, "Null"sv, "~"sv, ""sv, "1.5"sv, "1e5"sv,
        "1.0e+16"sv, ".5"sv, "+.5"sv, "1_000"sv, "0x1F"sv, "0o17"sv, "017"sv, "0b101"sv, "12:30"sv, "1:30.5"sv,
        "-.inf"sv, ".NaN"sv, "2024-01-01"sv, "2024-1-1 12:00:00"sv, "2024-01-01T12:00:00.5Z"sv,
        "2024-01-01 12:00:00 +01:00"sv, "20240101120000123456"sv, "<<"sv, "="sv, "-"sv, "- a"sv, "-a"sv, "?"sv,
        "? x"sv, "?x"sv, ":"sv, ": y"sv, "a: b"sv, "a:b"sv, "a :b"sv, "a #b"sv, "a#b"sv, "#x"sv, "x#"sv, "---"sv,
        "--- x"sv, "..."sv, "...."sv, "'quoted'"sv, "\"dq\""sv, "it's"sv, "back\\slash"sv, "%x"sv, "@x"sv,
        "`x"sv, "!x"sv, "&x"sv, "*x"sv, "|x"sv, ">x"sv, "[x"sv, "]x"sv, "{x"sv, "}x"sv, ",x"sv, "a,b"sv,
        "a[b]"sv, "a{b}"sv, "x:"sv, "x "sv, " x"sv, "a  b"sv, "tab\there"sv, "\tlead"sv, "ctl\x01x"sv,
        "esc\x1bx"sv, "del\x7fx"sv, "nul\0x"sv, "cr\rx"sv, "ff\x0cx"sv, "vt\x0bx"sv}) {
    tricky.push_back(Value(s));
  }
  corpus.push_back(Value(tricky));
  // The same strings as keys.
  ValueMap tricky_keys;
  for (const Value& s : tricky) tricky_keys.emplace_back(s.as_string(), Value(1));
  corpus.push_back(Value(tricky_keys));
  // Non-ASCII: printable, NBSP, NEL, line and paragraph separators, BOM,
  // characters above U+FFFF.
  corpus.push_back(J(R"({"héllo": "wörld", "日本": "語", "nbsp": "a b", "x": ["é", " é", "é "]})"));
  corpus.push_back(J(R"(["a\u0085b", "a\u2028b", "a\u2029b", "\ufeffbom", "emoji \ud83d\ude00 x", "\ud83d\ude00"])"));
  corpus.push_back(J(R"({"\ud83d\ude00": 1, "k\u0085": 2, "k\u2028": 3, "k\r": 4})"));
  // Multi-line strings.
  corpus.push_back(J(R"({"a": "l1\nl2", "b": "l1\n\nl2\n", "c": "\n", "d": "x\n  indented\n", "e": "trail \nx",
                       "f": "a\r\nb", "g": "only\n"})"));
  // Long strings: plain, quoted and escaped ones fold at column 80.
  const std::string words = Repeat("lorem ipsum dolor ", 8);
  const std::string nospace = Repeat("x", 120);
  corpus.push_back(Value::Map({{"plain", Value(words)},
                               {"nospace", Value(nospace)},
                               {"single", Value(" " + words)},
                               {"double", Value("\t" + words)},
                               {"escapes", Value(Repeat("ab\tcd ", 30))},
                               {"spaces", Value("x" + Repeat("word  ", 20))},
                               {"multiline", Value(words + "\n" + words)},
                               {"nested", Value::List({Value(words), Value::Map({{"deep", Value(words)}})})}}));
  corpus.push_back(Value::List({Value(words + "\t"), Value("\t" + Repeat("é ", 60))}));
  // Keys around the simple-key limits (122/123 characters for PyYAML, 128/129
  // bytes for libyaml).
  ValueMap long_keys;
  for (int n : {60, 122, 123, 127, 128, 129, 140}) long_keys.emplace_back(Repeat("k", n), Value(n));
  long_keys.emplace_back(Repeat("é", 64), Value("two-byte"));
  long_keys.emplace_back(Repeat("é", 65), Value("two-byte"));
  corpus.push_back(Value(long_keys));
  // Empty containers and nesting.
  corpus.push_back(J(R"({"a": {}, "b": [], "c": [[], {}], "d": [[1, [2, [3]]], {"x": [], "y": {}}]})"));
  corpus.push_back(J(R"([{"a": 1, "b": [1, 2]}, [{"c": {"d": [{"e": null}]}}], {}, []])"));
  corpus.push_back(J("{}"));
  corpus.push_back(J("[]"));
  // A jobs.list_jobs result.
  corpus.push_back(J(R"({"20240101120000123456": {"Function": "test.ping", "Arguments": [], "Target": "*",
      "Target-type": "glob", "User": "root", "StartTime": "2024, Jan 01 12:00:00.123456"},
      "20240101120500654321": {"Function": "cmd.run", "Arguments": ["uptime"], "Target": "web*",
      "Target-type": "glob", "User": "sudo_alice", "StartTime": "2024, Jan 01 12:05:00.654321"}})"));
  // Keys that sort differently by bytes and by case.
  corpus.push_back(J(R"({"b": 1, "B": 2, "a": 3, "_": 4, "é": 5, "z": 6, "Z": 7, "10": 8, "9": 9})"));
  return corpus;
}

// A deterministic stream of random values built from the corpus' building
// blocks: scalars with awkward characters, long strings, nesting.
class ValueGenerator {
 public:
  explicit ValueGenerator(std::uint32_t seed) : rng_(seed) {}

  Value Next(int depth = 0) {
    const int r = Pick(100);
    if (depth > 3 || r < 45) return Scalar();
    if (r < 70) {
      ValueList list;
      for (int i = Pick(5); i > 0; --i) list.push_back(Next(depth + 1));
      return Value(list);
    }
    ValueMap map;
    for (int i = Pick(5); i > 0; --i) {
      std::string key = Text(Pick(4) == 0 ? 40 : 6);
      if (Value(map).Find(key) == nullptr) map.emplace_back(std::move(key), Next(depth + 1));  // a dict
    }
    return Value(map);
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint32_t>(n)); }

  std::string Text(int max_atoms) {
    static const std::string_view kAtoms[] = {
        "a",  "b",    " ",    " ",    "  ",   "-",   ":",    "#",     "'",     "\"",      "\\",       "\n",
        "\t", "\r",   ",",    "?",    "[",    "]",   "{",    "}",     "&",     "*",       "!",        "|",
        ">",  "%",    "@",    "`",    ".",    "~",   "=",    "<",     "0",     "1",       "9",        "e",
        "E",  "+",    "_",    "é",    "日本", " ",  "\u0085", "\u2028", "\x1b", "\x7f", "\xef\xbb\xbf",
        "yes", "null", "true", "1.5", "0x1f", "word", "lorem ipsum ", "---", "...", "- ", ": ", " #",
        "2024-01-01", "1:30", "\xf0\x9f\x98\x80", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
    std::string out;
    for (int i = Pick(max_atoms + 1); i > 0; --i) out += kAtoms[Pick(static_cast<int>(std::size(kAtoms)))];
    return out;
  }

  Value Scalar() {
    const int r = Pick(20);
    static constexpr int kLengths[] = {3, 8, 20, 40};
    static constexpr long long kInts[] = {0, 1, -5, 9007199254740993LL, 9223372036854775807LL};
    static constexpr double kFloats[] = {4.0, 12.5, 1e16, 1e-05, 0.1, -0.0, 1.5e300};
    if (r < 12) return Value(Text(kLengths[Pick(4)]));
    if (r < 14) return r == 12 ? Value() : Value(Pick(2) == 0);
    if (r < 17) return Value(kInts[Pick(5)]);
    return Value(kFloats[Pick(7)]);
  }

  std::mt19937 rng_;
};

}  // namespace

// --- API ---------------------------------------------------------------------

TEST_CASE("output: the seven Salt outputter names are known and others are not", "[output]") {
  for (const char* name : {"nested", "json", "yaml", "txt", "text", "raw", "highstate"}) {
    CHECK(IsKnownOutputter(name));
  }
  for (const char* name : {"", "pprint", "Nested", "json ", "progress", "grains"}) CHECK_FALSE(IsKnownOutputter(name));
}

TEST_CASE("output: an unknown outputter throws UnknownOutputter", "[output]") {
  CHECK_THROWS_AS(Render("pprint", Value(1), {}), brine::output::UnknownOutputter);
  CHECK_THROWS_AS(Render("", Value(1), {}), brine::output::UnknownOutputter);
}

// --- nested ------------------------------------------------------------------

TEST_CASE("output: nested prints the spec's jobs.list_jobs example", "[output][golden]") {
  const Value jobs = J(R"({
    "20240101120500654321": {"jid": null, "Function": "cmd.run", "Arguments": ["uptime"], "Target": "web*",
        "Target-type": "glob", "User": "sudo_alice", "StartTime": "2024, Jan 01 12:05:00.654321"},
    "20240101120000123456": {"Function": "test.ping", "Arguments": [], "Target": "*", "Target-type": "glob",
        "User": "root", "StartTime": "2024, Jan 01 12:00:00.123456"}})");
  Value data = jobs;
  data.as_map()[0].second.Erase("jid");
  CHECK(CheckGolden("output/nested_list_jobs.txt", Render("nested", data, {})) == "");
}

TEST_CASE("output: nested prints the spec's jobs.list_job example", "[output][golden]") {
  const Value job = J(R"({"jid": "20240101120500654321", "Function": "cmd.run", "Arguments": ["uptime"],
    "Target": "web*", "Target-type": "glob", "User": "sudo_alice", "Minions": ["web1", "web2"],
    "StartTime": "2024, Jan 01 12:05:00.654321",
    "Result": {"web1": {"return": " 12:05:01 up 3 days", "retcode": 0, "success": true}}})");
  CHECK(CheckGolden("output/nested_list_job.txt", Render("nested", job, {})) == "");
}

TEST_CASE("output: nested prints the spec's jobs.lookup_jid missing=True example", "[output][golden]") {
  const Value ret = J(R"({"web2": "Minion did not return", "web1": " 12:05:01 up 3 days"})");
  CHECK(CheckGolden("output/nested_lookup_jid_missing.txt", Render("nested", ret, {})) == "");
}

TEST_CASE("output: nested prints the spec's other shapes", "[output]") {
  CHECK(Render("nested", J(R"({"m1": true})"), {}) == "m1:\n    True\n");
  CHECK(Render("nested", J(R"({"a": {}, "b": [], "c": [[1, 2], {"x": 1}], "d": "l1\nl2", "e": null, "f": 1.5})"),
               {}) ==
        "a:\n    ----------\nb:\nc:\n    |_\n      - 1\n      - 2\n    |_\n      ----------\n      x:\n"
        "          1\nd:\n    l1\n    l2\ne:\n    None\nf:\n    1.5\n");
  CHECK(Render("nested", J(R"(["x", {"k": "v"}])"), {}) == "- x\n|_\n  ----------\n  k:\n      v\n");
}

TEST_CASE("output: nested colours match Salt's own unit test", "[output][golden]") {
  // salt tests/pytests/unit/output/test_nested.py: test.arg's return, with
  // colour and with a non-zero _retcode.
  const Value data = J(R"({"local": {"args": [1, "two", 3.1], "kwargs": {"__pub_pid": 25938,
    "wow": {"a": 1, "b": "hello"}, "__pub_fun": "test.arg", "__pub_jid": "20171207105927331329",
    "__pub_tgt": "salt-call", "txt": "hello"}}})");
  CHECK(CheckGolden("output/nested_test_arg_color.txt", Render("nested", data, Colored())) == "");
  CHECK(CheckGolden("output/nested_test_arg_color_retcode.txt", Render("nested", data, Colored(1))) == "");
}

TEST_CASE("output: nested colours lists and nested lists as Salt does", "[output]") {
  CHECK(Render("nested", J(R"({"k": [[1], {"a": null}]})"), Colored()) ==
        "\x1b[0;36mk\x1b[0;0m:\n"
        "    \x1b[0;32m|_\x1b[0;0m\n"
        "      \x1b[0;1;33m- 1\x1b[0;0m\n"
        "    \x1b[0;32m|_\x1b[0;0m\n"
        "      \x1b[0;36m----------\x1b[0;0m\n"
        "      \x1b[0;36ma\x1b[0;0m:\n"
        "          \x1b[0;1;33mNone\x1b[0;0m\n");
  CHECK(Render("nested", J(R"([[1]])"), Colored(2)) == "\x1b[0;31m|_\x1b[0;0m\n  \x1b[0;1;33m- 1\x1b[0;0m\n");
}

TEST_CASE("output: nested sorts keys by code point and prints numbers as Python's repr", "[output]") {
  const Value data = Value::Map({{"é", Value(1)},
                                 {"b", Value(1e16)},
                                 {"B", Value(-0.0)},
                                 {"a", Value(4.0)},
                                 {"_", Value(std::numeric_limits<std::uint64_t>::max())},
                                 {"Z", Value(1e-05)},
                                 {"10", Value(0.1)},
                                 {"9", Value(9007199254740993LL)}});
  CHECK(Render("nested", data, {}) ==
        "10:\n    0.1\n9:\n    9007199254740993\nB:\n    -0.0\nZ:\n    1e-05\n_:\n    18446744073709551615\n"
        "a:\n    4.0\nb:\n    1e+16\né:\n    1\n");
}

TEST_CASE("output: nested splits strings on every Python line boundary", "[output]") {
  const Value data = Value::List({Value("a\rb\r\nc\vd\fe\x1c" "f\x1dg\x1eh\xc2\x85i\xe2\x80\xa8j\xe2\x80\xa9k\n")});
  CHECK(Render("nested", data, {}) == "- a\n  b\n  c\n  d\n  e\n  f\n  g\n  h\n  i\n  j\n  k\n");
  // A blank line inside keeps its prefix padding; an empty string prints nothing.
  CHECK(Render("nested", J(R"({"k": "x\n\ny", "e": "", "z": 1})"), {}) == "e:\nk:\n    x\n    \n    y\nz:\n    1\n");
}

TEST_CASE("output: nested prints ESC as ? unless strip_colors is off", "[output]") {
  const Value data = J(R"({"k\u001b": "red \u001b[31m text"})");
  CHECK(Render("nested", data, {}) == "k\x1b:\n    red ?[31m text\n");
  OutputOptions keep;
  keep.strip_colors = OutputOptions::StripColors::kOff;
  CHECK(Render("nested", data, keep) == "k\x1b:\n    red \x1b[31m text\n");
}

TEST_CASE("output: nothing is printed when the rendered text is empty or blank", "[output]") {
  CHECK(Render("nested", J("{}"), {}) == "");
  CHECK(Render("nested", J("[]"), {}) == "");
  CHECK(Render("nested", J(R"("")"), {}) == "");
  CHECK(Render("raw", J(R"(" \n\t")"), {}) == "");
  CHECK(Render("txt", J("{}"), {}) == "");
}

TEST_CASE("output: the text is right-stripped of Python's whitespace before the newline", "[output]") {
  // U+3000 and U+0085 are whitespace to str.rstrip(); U+200B is not.
  CHECK(Render("nested", Value("abc \xe3\x80\x80\xc2\x85"), {}) == "abc\n");
  CHECK(Render("raw", Value("abc\xe2\x80\x8b"), {}) == "abc\xe2\x80\x8b\n");
  CHECK(Render("raw", Value("x\x1c\x1f "), {}) == "x\n");
}

TEST_CASE("output: bytes that are not UTF-8 pass through nested and sort as surrogates", "[output]") {
  // Python sees \xff as U+DCFF, which sorts after U+00E9 but before U+E000.
  const Value data = Value::Map({{"\xee\x80\x80", Value(3)}, {"\xff", Value("v\xfe")}, {"\xc3\xa9", Value(1)}});
  CHECK(Render("nested", data, {}) == "\xc3\xa9:\n    1\n\xff:\n    v\xfe\n\xee\x80\x80:\n    3\n");
  CHECK(Render("raw", data, {}) == "{'\\ue000': 3, '\\udcff': 'v\\udcfe', '\xc3\xa9': 1}\n");  // U+E000 is not printable
}

TEST_CASE("output: keys that first differ in an ASCII byte sort by it, whatever bytes come before", "[output]") {
  // "\xe2\x82" is a cut sequence, U+DCE2 U+DC82 to Python, in each key; the
  // euro sign (U+20AC) sorts before it though its third byte is above 'a'.
  const Value data = Value::Map({{"\xe2\x82" "b", Value(2)}, {"\xe2\x82\xac", Value(3)}, {"\xe2\x82" "a", Value(1)}});
  CHECK(Render("nested", data, {}) == "\xe2\x82\xac:\n    3\n\xe2\x82" "a:\n    1\n\xe2\x82" "b:\n    2\n");
  std::ostringstream out;
  brine::output::MapStream stream("json", OutputOptions{}, out);
  stream.Add("\xe2\x82\xac", 3);
  stream.Add("\xe2\x82" "a", 1);
  stream.Add("\xe2\x82" "b", 2);
  REQUIRE_THROWS_AS(stream.Add("\xe2\x82" "a", 4), std::logic_error);
}

// --- json --------------------------------------------------------------------

TEST_CASE("output: json prints the spec's jobs.list_job example", "[output][golden]") {
  const Value job = J(R"({"jid": "20240101120500654321", "Function": "cmd.run", "Arguments": ["uptime"],
    "Target": "web*", "Target-type": "glob", "User": "sudo_alice", "Minions": ["web1", "web2"],
    "StartTime": "2024, Jan 01 12:05:00.654321",
    "Result": {"web1": {"return": " 12:05:01 up 3 days", "retcode": 0, "success": true}}})");
  CHECK(CheckGolden("output/json_list_job.txt", Render("json", job, {})) == "");
}

TEST_CASE("output: json follows --out-indent as the spec says", "[output]") {
  const Value data = J(R"({"m1": true, "m2": [1, 2]})");
  CHECK(Render("json", data, Indent(-1)) == "{\"m1\": true, \"m2\": [1, 2]}\n");
  CHECK(Render("json", data, Indent(0)) == "{\n\"m1\": true,\n\"m2\": [\n1,\n2\n]\n}\n");
  CHECK(Render("json", data, Indent(2)) == "{\n  \"m1\": true,\n  \"m2\": [\n    1,\n    2\n  ]\n}\n");
}

TEST_CASE("output: json matches Python's json.dumps for every --out-indent", "[output]") {
  std::vector<Case> cases;
  for (const Value& v : Corpus()) {
    for (std::optional<int> indent : {std::optional<int>(), std::optional<int>(0), std::optional<int>(2),
                                      std::optional<int>(-1)}) {
      cases.push_back({"json", indent, v});
    }
  }
  CheckAgainstOracle(cases);
}

// --- yaml --------------------------------------------------------------------

TEST_CASE("output: yaml prints the spec's print_job example", "[output][golden]") {
  const Value job = J(R"({"20240101120500654321": {"Function": "cmd.run", "Arguments": ["uptime"],
    "Target": "web*", "Target-type": "glob", "User": "sudo_alice", "StartTime": "2024, Jan 01 12:05:00.654321",
    "Result": {"web1": {"return": " 12:05:01 up 3 days", "retcode": 0, "success": true}}}})");
  CHECK(CheckGolden("output/yaml_print_job.txt", Render("yaml", job, {})) == "");
}

TEST_CASE("output: yaml with a negative --out-indent is flow style", "[output]") {
  CHECK(Render("yaml", J(R"({"m2": [1, 2], "m1": true})"), Indent(-1)) == "{m1: true, m2: [1, 2]}\n");
}

TEST_CASE("output: yaml indents mappings by --out-indent and never indents lists under a key", "[output]") {
  const Value data = J(R"({"a": {"b": [{"c": 1, "d": [2]}]}})");
  CHECK(Render("yaml", data, {}) == "a:\n  b:\n  - c: 1\n    d:\n    - 2\n");
  CHECK(Render("yaml", data, Indent(4)) == "a:\n    b:\n    -   c: 1\n        d:\n        - 2\n");
  // PyYAML ignores indents outside 2..9.
  CHECK(Render("yaml", data, Indent(1)) == Render("yaml", data, {}));
  CHECK(Render("yaml", data, Indent(10)) == Render("yaml", data, {}));
}

TEST_CASE("output: yaml quotes strings that would read back as other types", "[output]") {
  CHECK(Render("yaml", J(R"({"20240101120000123456": "yes", "k": ["null", "1.5", "", "~", "0x1F", "12:30",
                           "2024-01-01", "x"]})"),
               {}) ==
        "'20240101120000123456': 'yes'\nk:\n- 'null'\n- '1.5'\n- ''\n- '~'\n- '0x1F'\n- '12:30'\n- '2024-01-01'\n"
        "- x\n");
}

TEST_CASE("output: yaml prints floats as PyYAML represents them", "[output]") {
  const Value data = Value::List({Value(4.0), Value(1e16), Value(1e-05), Value(0.1),
                                  Value(std::numeric_limits<double>::infinity()),
                                  Value(-std::numeric_limits<double>::infinity()),
                                  Value(std::numeric_limits<double>::quiet_NaN())});
  CHECK(Render("yaml", data, {}) == "- 4.0\n- 1.0e+16\n- 1.0e-05\n- 0.1\n- .inf\n- -.inf\n- .nan\n");
}

TEST_CASE("output: yaml matches libyaml's emitter (PyYAML's CSafeDumper, Salt's dumper)", "[output]") {
  std::vector<Case> cases;
  for (const Value& v : Corpus()) {
    for (std::optional<int> indent : {std::optional<int>(), std::optional<int>(2), std::optional<int>(4),
                                      std::optional<int>(0), std::optional<int>(-1)}) {
      cases.push_back({"yaml", indent, v});
    }
  }
  CheckAgainstOracle(cases);
}

TEST_CASE("output: yaml matches PyYAML's pure-Python emitter (yaml.safe_dump) when asked", "[output]") {
  std::vector<Case> cases;
  for (const Value& v : Corpus()) {
    for (std::optional<int> indent : {std::optional<int>(), std::optional<int>(4), std::optional<int>(-1)}) {
      cases.push_back({"yaml-pure", indent, v});
    }
  }
  CheckAgainstOracle(cases);
}

TEST_CASE("output: yaml matches both PyYAML emitters on generated values", "[output]") {
  ValueGenerator gen(20240101);
  std::vector<Case> cases;
  for (int i = 0; i < 300; ++i) {
    const Value v = gen.Next();
    cases.push_back({"yaml", std::nullopt, v});
    cases.push_back({"yaml", -1, v});
    cases.push_back({"yaml-pure", std::nullopt, v});
    cases.push_back({"yaml-pure", 3, v});
  }
  CheckAgainstOracle(cases);
}

TEST_CASE("output: the two yaml emitters differ where libyaml and PyYAML do", "[output]") {
  OutputOptions pure;
  pure.yaml_emitter = OutputOptions::YamlEmitter::kPyYaml;
  // Characters above U+FFFF are printable only to PyYAML.
  const Value emoji = Value::List({Value("smile \xf0\x9f\x98\x80")});
  CHECK(Render("yaml", emoji, {}) == "- \"smile \\U0001F600\"\n");
  CHECK(Render("yaml", emoji, pure) == "- smile \xf0\x9f\x98\x80\n");
  // \r is a line break to libyaml, so the key cannot be simple.
  const Value cr = Value::Map({{"a\rb", Value(1)}});
  CHECK(Render("yaml", cr, {}) == "? \"a\\rb\"\n: 1\n");
  CHECK(Render("yaml", cr, pure) == "\"a\\rb\": 1\n");
  // PyYAML ends a plain top-level scalar with a document end marker.
  CHECK(Render("yaml", Value("foo"), {}) == "foo\n");
  CHECK(Render("yaml", Value("foo"), pure) == "foo\n...\n");
}

TEST_CASE("output: yaml of bytes that are not UTF-8 escapes them as Python's surrogates", "[output]") {
  OutputOptions pure;
  pure.yaml_emitter = OutputOptions::YamlEmitter::kPyYaml;
  CHECK(Render("yaml", Value::Map({{"k", Value("a\xff")}}), pure) == "k: \"a\\uDCFF\"\n");
  CHECK(Render("yaml", Value::Map({{"k", Value("a\xff")}}), {}) == "k: \"a\\uDCFF\"\n");
}

// --- raw and txt -------------------------------------------------------------

TEST_CASE("output: raw and txt match Python's str() and pprint.pformat()", "[output]") {
  std::vector<Case> cases;
  for (const Value& v : Corpus()) {
    cases.push_back({"raw", std::nullopt, v});
    cases.push_back({"txt", std::nullopt, v});
  }
  ValueGenerator gen(7);
  for (int i = 0; i < 150; ++i) {
    const Value v = gen.Next();
    cases.push_back({"raw", std::nullopt, v});
    cases.push_back({"txt", std::nullopt, v});
    cases.push_back({"txt", std::nullopt, Value::List({v, Value(Repeat("lorem ipsum ", 9))})});
  }
  CheckAgainstOracle(cases);
}

TEST_CASE("output: raw prints Python's repr of containers in insertion order", "[output]") {
  CHECK(Render("raw", J(R"({"b": [true, null, 1.5], "a": "it's", "c": {"d": "q\"'"}})"), {}) ==
        "{'b': [True, None, 1.5], 'a': \"it's\", 'c': {'d': 'q\"\\''}}\n");
  CHECK(Render("raw", Value("plain text"), {}) == "plain text\n");
}

TEST_CASE("output: txt prints one key: line per line of each value", "[output]") {
  CHECK(Render("txt", J(R"({"web1": "line1\nline2", "web2": true, "web3": {"a": [1]}, "web4": ""})"), {}) ==
        "web1: line1\nweb1: line2\nweb2: True\nweb3: {'a': [1]}\n");
  CHECK(Render("text", J(R"(["a", {"z": 1, "b": 2}])"), {}) == "['a', {'b': 2, 'z': 1}]\n");
}

// --- MapStream: a map printed entry by entry ------------------------------

namespace {

// What MapStream writes for the entries of `map` (already in key order).
std::string Streamed(std::string_view outputter, const Value& map, const OutputOptions& options) {
  std::ostringstream out;
  brine::output::MapStream stream(outputter, options, out);
  for (const auto& [k, v] : map.as_map()) stream.Add(k, v);
  stream.Finish();
  return out.str();
}

// The same, each value (an object) given as its members' JSON texts.
std::string StreamedObjects(std::string_view outputter, const Value& map, const OutputOptions& options) {
  std::ostringstream out;
  brine::output::MapStream stream(outputter, options, out);
  for (const auto& [k, v] : map.as_map()) {
    std::vector<std::string> texts;
    for (const auto& member : v.as_map()) texts.push_back(ToJson(member.second));
    std::vector<brine::output::MapStream::JsonMember> members;
    for (std::size_t i = 0; i < texts.size(); ++i) members.push_back({v.as_map()[i].first, texts[i]});
    stream.AddJsonObject(k, members);
  }
  stream.Finish();
  return out.str();
}

}  // namespace

TEST_CASE("output: MapStream writes exactly what Render prints for the whole map", "[output]") {
  // Values that end in whitespace (interior in the whole map, stripped only at
  // its very end), nested maps and lists, empty containers, non-ASCII text.
  const std::vector<Value> maps = {
      J(R"({"20240101120000000001": {"Function": "test.ping", "Arguments": [], "Target": "*"},
            "20240101120000000002": {"Function": "cmd.run", "Arguments": ["uptime  "], "Target": ["a", "b"]},
            "20240101120000000003": {"Function": "x", "Arguments": [{"k": "v\n"}], "Target": "café "}})"),
      J(R"({"a": "trailing spaces   ", "b": "line\n\n", "c": ""})"),
      J(R"({"only": {"Function": "test.ping", "Metadata": {}}})"),
      Value::EmptyMap(),
      // Entries bigger than the 64 KiB flush (written from the entry's own
      // text, not copied), between small ones, one ending in whitespace.
      [] {
        Value dict = Value::EmptyMap();
        for (int i = 0; i < 4000; ++i) dict.as_map().emplace_back("key" + std::to_string(100000 + i), Value::List({i, "v"}));
        return Value::Map({{"a", "small"},
                           {"b", std::move(dict)},
                           {"c", std::string(100000, 'x') + "  \n"},
                           {"d", Value::Map({{"big", std::string(70000, 'y')}, {"tail", "end  "}})},
                           {"e", std::string(90000, 'z') + " \n "}});
      }(),
  };
  for (const Value& map : maps) {
    for (const char* outputter : {"json", "nested", "yaml", "txt", "raw"}) {
      for (const std::optional<int> indent : {std::optional<int>(), std::optional<int>(2), std::optional<int>(-1)}) {
        INFO(outputter << " indent " << (indent ? std::to_string(*indent) : "none") << " " << ToJson(map));
        REQUIRE(Streamed(outputter, map, Indent(indent)) == Render(outputter, map, Indent(indent)));
      }
    }
    OutputOptions color;
    color.color = OutputOptions::Color::kOn;
    REQUIRE(Streamed("nested", map, color) == Render("nested", map, color));
    // Values given as JSON text print the same.
    for (const char* outputter : {"json", "nested", "yaml"}) {
      for (const std::optional<int> indent : {std::optional<int>(), std::optional<int>(-1)}) {
        std::ostringstream out;
        brine::output::MapStream stream(outputter, Indent(indent), out);
        for (const auto& [k, v] : map.as_map()) stream.AddJson(k, ToJson(v));
        stream.Finish();
        REQUIRE(out.str() == Render(outputter, map, Indent(indent)));
      }
    }
    // Values that are objects, given as their members' JSON texts, print the same.
    const bool objects = std::all_of(map.as_map().begin(), map.as_map().end(), [](const auto& e) { return e.second.is_map(); });
    if (!objects) continue;
    for (const char* outputter : {"json", "nested", "yaml"}) {
      for (const std::optional<int> indent : {std::optional<int>(), std::optional<int>(0), std::optional<int>(-1)}) {
        REQUIRE(StreamedObjects(outputter, map, Indent(indent)) == Render(outputter, map, Indent(indent)));
      }
    }
  }
}

TEST_CASE("output: MapStream's json objects name each member right, in any order and however many names", "[output]") {
  // AddJsonObject keeps the names it has written (a listing repeats a few):
  // the same names in another order, a name that needs escaping, and more
  // names than it keeps must each still come out as Render writes them.
  ValueMap entries;
  entries.emplace_back("e1", Value::Map({{"a", Value(1)}, {"b", Value(2)}}));
  entries.emplace_back("e2", Value::Map({{"b", Value(3)}, {"a", Value(4)}}));
  entries.emplace_back("e3", Value::Map({{"c\"q\xc3\xa9", Value(5)}, {"a", Value(6)}}));
  ValueMap many;
  for (int i = 0; i < 40; ++i) many.emplace_back("n" + std::to_string(i), Value(i));
  entries.emplace_back("e4", Value(many));
  entries.emplace_back("e5", Value::Map({{"n39", Value(7)}, {"b", Value(8)}, {"c\"q\xc3\xa9", Value(9)}}));
  const Value map(std::move(entries));
  for (const std::optional<int> indent : {std::optional<int>(), std::optional<int>(-1)}) {
    CHECK(StreamedObjects("json", map, Indent(indent)) == Render("json", map, Indent(indent)));
  }
}

TEST_CASE("output: MapStream refuses keys out of order, which nested and yaml would print sorted", "[output]") {
  std::ostringstream out;
  brine::output::MapStream stream("json", OutputOptions{}, out);
  stream.Add("b", 1);
  REQUIRE_THROWS_AS(stream.Add("a", 2), std::logic_error);
  REQUIRE_THROWS_AS(stream.Add("b", 3), std::logic_error);
  REQUIRE_THROWS_AS(brine::output::MapStream("table", OutputOptions{}, out), brine::output::UnknownOutputter);
}
