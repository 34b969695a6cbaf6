// Tests for brine_core's JSON writer and its storage form, against Python's
// json.dumps and repr and SQLite's json functions.
// Python is the oracle wherever it defines the expected output: the cases go to
// one python3 process in a batch (support/python_oracle.h).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"
#include "support/temp_dir.h"
#include "support/value_samples.h"

using namespace std::string_literals;

using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::test::TempDir;
using brine::test::WriteFile;
using brine::test::HexEncode;
using brine::test::PyEval;
using brine::test::PyFloat;
using brine::test::PyExpr;
using brine::test::PyIndent;
using brine::test::Sqlite;
using brine::test::kInf;
using brine::test::kNaN;
using brine::test::kI64Min;
using brine::test::kU64Max;
using brine::test::FiniteFloats;
using brine::test::IntSamples;
using brine::test::ValidSamples;
using brine::test::InvalidByteSamples;
using brine::test::HasNonFinite;
using brine::test::HasNaN;
using brine::test::Identical;

// ===========================================================================
// JSON writer vs Python's json.dumps

TEST_CASE("json: Python styles match json.dumps byte for byte", "[core]") {
  struct Case {
    Value v;
    int indent;
    bool sort_keys;
    bool ensure_ascii;
  };
  std::vector<Case> cases;
  for (const auto& v : ValidSamples()) {
    for (int indent : {-1, 0, 2, 4}) {
      for (bool sort_keys : {false, true}) {
        for (bool ascii : {false, true}) cases.push_back({v, indent, sort_keys, ascii});
      }
    }
  }
  std::vector<std::string> exprs;
  for (const auto& c : cases) {
    exprs.push_back("json.dumps(" + PyExpr(c.v) + ", indent=" + PyIndent(c.indent) +
                    ", sort_keys=" + (c.sort_keys ? "True" : "False") +
                    ", ensure_ascii=" + (c.ensure_ascii ? "True" : "False") + ")");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    JsonStyle style = JsonStyle::Python(cases[i].indent);
    style.sort_keys = cases[i].sort_keys;
    style.ensure_ascii = cases[i].ensure_ascii;
    INFO("python: " << exprs[i]);
    REQUIRE(py[i].ok);
    CHECK(ToJson(cases[i].v, style) == py[i].text);
  }
}

TEST_CASE("json: invalid UTF-8 bytes are written as \\udcXX like surrogateescape", "[core]") {
  // ensure_ascii=False cannot encode the surrogates, so Python's side of this
  // comparison uses ensure_ascii=True; brine writes the same escapes either way.
  std::vector<std::pair<Value, JsonStyle>> cases;
  std::vector<std::string> exprs;
  for (const auto& v : InvalidByteSamples()) {
    for (int indent : {-1, 0, 4}) {
      for (bool sort_keys : {false, true}) {
        JsonStyle style = JsonStyle::Python(indent);
        style.sort_keys = sort_keys;
        style.ensure_ascii = true;
        cases.emplace_back(v, style);
        exprs.push_back("json.dumps(" + PyExpr(v) + ", indent=" + PyIndent(indent) +
                        ", sort_keys=" + (sort_keys ? "True" : "False") + ", ensure_ascii=True)");
      }
    }
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("python: " << exprs[i]);
    REQUIRE(py[i].ok);
    CHECK(ToJson(cases[i].first, cases[i].second) == py[i].text);
  }
  // Without ensure_ascii valid text stays raw and only the bad bytes are escaped.
  CHECK(ToJson(Value("\xc3\xa9\x80\xc3\xa9"s)) == "\"\xc3\xa9\\udc80\xc3\xa9\"");
  CHECK(ToJson(Value("\xff"s), JsonStyle::Python(-1)) == "\"\\udcff\"");
  CHECK(ToJson(Value("\xed\xa0\x80"s)) == "\"\\udced\\udca0\\udc80\"");
}

TEST_CASE("json: a float 4.0 stays a float", "[core]") {
  CHECK(ToJson(Value(4.0)) == "4.0");
  CHECK(ToJson(Value(4)) == "4");
  CHECK(ToJson(Value(4.0), JsonStyle::Python(4)) == "4.0");
  const Value parsed = ParseJson("4.0");
  CHECK(parsed.is_float());
  CHECK(parsed == Value(4.0));
  CHECK(ParseJson("4").kind() == Value::Kind::kInt);
  CHECK(ParseJson("4e0").is_float());
  CHECK(ParseJson(ToJson(Value::List({4.0, 4}))) == Value::List({4.0, 4}));
  CHECK(ParseJson(ToJson(Value::List({4.0, 4}))) != Value::List({4, 4}));
}

TEST_CASE("json: the listed floats print as Python's repr and json.dumps", "[core]") {
  std::vector<double> floats = FiniteFloats();
  floats.push_back(kInf);
  floats.push_back(-kInf);
  floats.push_back(kNaN);
  std::vector<std::string> exprs;
  for (double d : floats) {
    exprs.push_back("repr(" + PyFloat(d) + ")");
    exprs.push_back("json.dumps(" + PyFloat(d) + ")");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < floats.size(); ++i) {
    INFO("float: " << PyFloat(floats[i]));
    REQUIRE(py[2 * i].ok);
    REQUIRE(py[2 * i + 1].ok);
    CHECK(brine::PythonFloatRepr(floats[i]) == py[2 * i].text);
    CHECK(ToJson(Value(floats[i]), JsonStyle::Python(-1)) == py[2 * i + 1].text);
  }
  // The spellings the brief pins, as a readable record.
  CHECK(brine::PythonFloatRepr(1e16) == "1e+16");
  CHECK(brine::PythonFloatRepr(1e15) == "1000000000000000.0");
  CHECK(brine::PythonFloatRepr(1e-05) == "1e-05");
  CHECK(brine::PythonFloatRepr(0.0001) == "0.0001");
  CHECK(brine::PythonFloatRepr(-0.0) == "-0.0");
  CHECK(ToJson(Value(kInf), JsonStyle::Python(-1)) == "Infinity");
  CHECK(ToJson(Value(-kInf), JsonStyle::Python(-1)) == "-Infinity");
  CHECK(ToJson(Value(kNaN), JsonStyle::Python(-1)) == "NaN");
}

TEST_CASE("json: PythonFloatRepr matches repr() on thousands of random doubles", "[core]") {
  std::mt19937_64 rng(20240101);
  std::vector<double> values;
  // Random bit patterns: every exponent, subnormals, infinities and NaNs.
  for (int i = 0; i < 2500; ++i) {
    const std::uint64_t bits = rng();
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    values.push_back(d);
  }
  // Decimal-ish values, the kind people type: up to 17 significant digits.
  std::uniform_int_distribution<int> ndigits(1, 17), exp10(-30, 30), digit(0, 9), sign(0, 1);
  for (int i = 0; i < 2500; ++i) {
    std::string text = sign(rng) ? "-" : "";
    const int n = ndigits(rng);
    for (int k = 0; k < n; ++k) text += static_cast<char>('0' + digit(rng));
    text += "e" + std::to_string(exp10(rng));
    values.push_back(std::strtod(text.c_str(), nullptr));
  }
  // Around the switch between fixed and exponent notation, and the extremes.
  for (int e = -8; e <= 20; ++e) {
    const double p = std::pow(10.0, e);
    values.push_back(p);
    values.push_back(std::nextafter(p, 0.0));
    values.push_back(std::nextafter(p, kInf));
    values.push_back(p * 1.5);
  }
  for (double d : {DBL_MAX, DBL_MIN, DBL_TRUE_MIN, -DBL_TRUE_MIN, DBL_EPSILON, 0.0, -0.0}) values.push_back(d);

  std::vector<std::string> exprs;
  for (double d : values) exprs.push_back("repr(" + PyFloat(d) + ")");
  const auto py = PyEval(exprs);
  std::vector<std::string> mismatches;
  std::size_t roundtrip_failures = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string mine = brine::PythonFloatRepr(values[i]);
    if (!py[i].ok || mine != py[i].text) {
      if (mismatches.size() < 20) mismatches.push_back(PyFloat(values[i]) + ": brine " + mine + ", python " + py[i].text);
    }
    // The repr reads back to the same double through ParseJson.
    if (std::isfinite(values[i])) {
      const Value back = ParseJson(mine);
      const double got = back.is_float() ? back.as_float() : 0.0;
      if (!back.is_float() || std::memcmp(&got, &values[i], sizeof(double)) != 0) ++roundtrip_failures;
    }
  }
  INFO("checked " << values.size() << " doubles");
  for (const auto& m : mismatches) UNSCOPED_INFO(m);
  CHECK(mismatches.empty());
  CHECK(roundtrip_failures == 0);
}

TEST_CASE("json: integers beyond 2^53 are written and read exactly", "[core]") {
  for (const auto& v : IntSamples()) {
    const std::string text = v.kind() == Value::Kind::kUint ? std::to_string(v.as_uint()) : std::to_string(v.as_int());
    CHECK(ToJson(v) == text);
    CHECK(ToJson(v, JsonStyle::Python(4)) == text);
    const Value back = ParseJson(text);
    CHECK(back.kind() == v.kind());
    CHECK(back == v);
  }
  CHECK(ToJson(Value(9007199254740993LL)) == "9007199254740993");
  CHECK(ParseJson("9007199254740993").as_int() == 9007199254740993LL);
  CHECK(ParseJson("18446744073709551615").as_uint() == kU64Max);
  CHECK(ParseJson("-9223372036854775808").as_int() == kI64Min);
  // Past 64 bits: a float (header contract).
  CHECK(ParseJson("18446744073709551616").is_float());
  CHECK(ParseJson("-9223372036854775809").is_float());
}

// ===========================================================================
// Storage form

TEST_CASE("json: the storage form is compact and equals Python's compact dumps for finite values", "[core]") {
  CHECK(JsonStyle::Storage().indent < 0);
  CHECK(ToJson(Value::Map({{"a", Value::List({1, 2.5, "x"})}, {"b", Value::EmptyMap()}})) ==
        R"({"a":[1,2.5,"x"],"b":{}})");
  CHECK(ToJson(Value(kInf)) == "9e999");
  CHECK(ToJson(Value(-kInf)) == "-9e999");
  // JSON has no NaN: a spelling no finite float gets (issue 14: NaN was null).
  CHECK(ToJson(Value(kNaN)) == "9e-999");
  CHECK(ToJson(Value(-kNaN)) == "-9e-999");

  std::vector<Value> values;
  for (const auto& v : ValidSamples()) {
    if (!HasNonFinite(v)) values.push_back(v);
  }
  std::vector<std::string> exprs;
  for (const auto& v : values) {
    exprs.push_back("json.dumps(" + PyExpr(v) + ", separators=(',', ':'), ensure_ascii=False)");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("python: " << exprs[i]);
    REQUIRE(py[i].ok);
    const std::string mine = ToJson(values[i]);
    CHECK(mine == py[i].text);
    std::string appended = "prefix";
    brine::WriteJson(values[i], JsonStyle::Storage(), appended);
    CHECK(appended == "prefix" + mine);
  }
}

TEST_CASE("json: SQLite's json functions accept the storage form", "[core]") {
  brine::test::TempDir dir;
  const std::string s = "h\xc3\xa9llo\n\t\"\\/ \x01\x7f \xf0\x9f\x98\x80"s;
  const Value sample = Value::Map({
      {"i", 1},
      {"neg", Value(kI64Min)},
      {"big", Value(kU64Max)},
      {"f", 4.0},
      {"inf", kInf},
      {"ninf", -kInf},
      {"nan", kNaN},
      {"s", s},
      {"nul", "a\0b"s},
      {"bad", "\x80\xff"s},
      {"nested", Value::Map({{"l", Value::List({1, Value::List({2, Value::List({3})}), Value::EmptyMap()})},
                             {"e", Value::EmptyList()}})},
  });
  WriteFile(dir / "one.json", ToJson(sample));
  const std::string one = "cast(readfile('" + (dir / "one.json").string() + "') as text)";
  CHECK(Sqlite("select json_valid(j), json_type(j,'$.inf'), json_extract(j,'$.inf') > 1e308,"
               " json_type(j,'$.ninf'), json_extract(j,'$.ninf') < -1e308, json_type(j,'$.nan'),"
               " json_type(j,'$.f'), json_extract(j,'$.neg'), json_extract(j,'$.i'),"
               " hex(json_extract(j,'$.s')), json_extract(j,'$.nested.l[1][1][0]'),"
               " json_type(j,'$.nested.e'), json_type(j,'$.nul'), json_type(j,'$.bad')"
               " from (select " + one + " as j)") ==
        "1|real|1|real|1|real|real|-9223372036854775808|1|" + HexEncode(s, true) + "|3|array|text|text");

  // Every sample, as one list, and each kind of top-level scalar on its own.
  ValueList all;
  for (const auto& v : ValidSamples()) all.push_back(v);
  for (const auto& v : InvalidByteSamples()) all.push_back(v);
  WriteFile(dir / "all.json", ToJson(Value(all)));
  CHECK(Sqlite("select json_valid(cast(readfile('" + (dir / "all.json").string() + "') as text))") == "1");
  std::string sql = "select ";
  std::size_t n = 0;
  for (const auto& v : all) {
    if (v.is_list() || v.is_map()) continue;
    const std::string file = (dir / ("s" + std::to_string(n) + ".json")).string();
    WriteFile(file, ToJson(v));
    sql += (n++ ? " || " : "") + "json_valid(cast(readfile('"s + file + "') as text))";
  }
  CHECK(Sqlite(sql) == std::string(n, '1'));
}

TEST_CASE("json: the storage form round-trips every kind of value", "[core]") {
  std::vector<Value> values = ValidSamples();
  for (auto& v : InvalidByteSamples()) values.push_back(v);
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  values.emplace_back(all_bytes);
  values.push_back(Value::Map({{all_bytes, all_bytes}}));
  values.emplace_back("\xf0\x9f\x98\x80\x80"s);  // valid pair then a stray byte
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::string s(rng() % 24, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 256);
    values.emplace_back(s);
  }
  for (const auto& v : values) {
    INFO("value: " << ToJson(v, JsonStyle{.ensure_ascii = true}));
    const std::string text = ToJson(v);
    CHECK(Identical(ParseJson(text), v));
    // The Python forms read back too (Infinity, indents, \u escapes).
    for (int indent : {-1, 4}) {
      JsonStyle style = JsonStyle::Python(indent);
      CHECK(Identical(ParseJson(ToJson(v, style)), v));
      style.ensure_ascii = true;
      CHECK(Identical(ParseJson(ToJson(v, style)), v));
    }
  }
  // The points most likely to slip, spelled out.
  CHECK(ParseJson(ToJson(Value(4.0))).is_float());
  CHECK(std::signbit(ParseJson(ToJson(Value(-0.0))).as_float()));
  CHECK(ParseJson(ToJson(Value(kInf))).as_float() == kInf);
  CHECK(ParseJson(ToJson(Value(-kInf))).as_float() == -kInf);
  CHECK(std::isnan(ParseJson(ToJson(Value(kNaN))).as_float()));
  CHECK(ParseJson("9e-998").as_float() == 0.0);  // only the exact spelling is NaN
  CHECK(ParseJson(ToJson(Value(kU64Max))).as_uint() == kU64Max);
  CHECK(ParseJson(ToJson(Value("a\0b"s))).as_string() == "a\0b"s);
  CHECK(ParseJson(ToJson(Value("\x80"s))).as_string() == "\x80"s);
}

TEST_CASE("json: 5 MB strings round-trip through the storage form", "[core]") {
  constexpr std::size_t kSize = 5u << 20;
  std::mt19937 rng(42);
  std::string random_bytes(kSize, '\0');
  for (auto& c : random_bytes) c = static_cast<char>(rng() % 256);
  std::string ascii(kSize, 'x');
  for (std::size_t i = 0; i < kSize; i += 97) ascii[i] = (i % 2) ? '"' : '\n';
  std::string utf8;
  while (utf8.size() < kSize) utf8 += "\xc3\xa9\xf0\x9f\x98\x80\xe2\x82\xac";
  for (const std::string* s : {&random_bytes, &ascii, &utf8}) {
    const Value v = Value::Map({{"return", *s}});
    const std::string text = ToJson(v);
    CHECK(text.size() >= s->size());
    const Value back = ParseJson(text);
    REQUIRE(back.is_map());
    CHECK(back.Find("return")->as_string().size() == s->size());
    CHECK(back == v);
  }
}

TEST_CASE("json: ParseJson reads what Python's json.dumps writes", "[core]") {
  std::vector<Value> values;
  std::vector<std::string> exprs;
  for (const auto& v : ValidSamples()) {
    if (HasNaN(v)) continue;
    for (const char* kw : {"indent=None", "indent=4", "indent=0, ensure_ascii=False", "separators=(',', ':')"}) {
      values.push_back(v);
      exprs.push_back("json.dumps(" + PyExpr(v) + ", " + kw + ")");
    }
  }
  for (const auto& v : InvalidByteSamples()) {
    values.push_back(v);
    exprs.push_back("json.dumps(" + PyExpr(v) + ")");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("python: " << exprs[i] << "\ntext: " << py[i].text);
    REQUIRE(py[i].ok);
    CHECK(Identical(ParseJson(py[i].text), values[i]));
  }
}
