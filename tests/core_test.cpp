// Tests for brine_core: Value, the JSON codec, UTF-8 helpers, time, jids and
// globs. Wherever Python defines the expected output (json.dumps, repr,
// datetime, int(), fnmatch, bytes.decode) Python itself is the oracle: each
// batch of cases is sent to one python3 process as one expression per line,
// and brine's bytes are compared with what Python printed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/core/time.h"
#include "brine/core/utf8.h"
#include "brine/core/value.h"
#include "support/temp_dir.h"

using namespace std::string_literals;

using brine::FnMatch;
using brine::JsonError;
using brine::JsonStyle;
using brine::Micros;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::ValueList;
using brine::ValueMap;

namespace {

// ---------------------------------------------------------------------------
// Processes: python3 and sqlite3 as oracles.

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `cmd` through the shell; returns its stdout and requires exit status 0.
std::string RunCommand(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  INFO("command: " << cmd);
  REQUIRE(status == 0);
  return out;
}

void WriteFile(const std::filesystem::path& path, std::string_view content) {
  std::ofstream f(path, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  REQUIRE(f.good());
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string HexDecode(std::string_view hex) {
  std::string out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(nib(hex[i]) * 16 + nib(hex[i + 1]));
  }
  return out;
}

std::string HexEncode(std::string_view bytes, bool upper = false) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xF];
  }
  return out;
}

// Evaluates each expression and prints `=<hex of str(result) as UTF-8 with
// surrogateescape>` (a str result as is, anything else as repr), or
// `!<exception class>`.
constexpr const char* kOracleScript = R"PY(
import sys, json, fnmatch, datetime
out = []
with open(sys.argv[1], encoding='ascii') as f:
    for line in f:
        try:
            r = eval(line)
            s = r if isinstance(r, str) else repr(r)
            out.append('=' + s.encode('utf-8', 'surrogateescape').hex())
        except Exception as e:
            out.append('!' + type(e).__name__)
sys.stdout.write('\n'.join(out) + '\n')
)PY";

struct PyOut {
  bool ok = false;
  std::string text;  // the result's bytes, or the exception's class name
};

// One python3 process for the whole batch.
std::vector<PyOut> PyEval(const std::vector<std::string>& exprs) {
  brine::test::TempDir dir;
  std::string input;
  for (const auto& e : exprs) {
    REQUIRE(e.find('\n') == std::string::npos);
    REQUIRE(std::all_of(e.begin(), e.end(), [](char c) { return c > 0 && c < 0x7f; }));
    input += e;
    input += '\n';
  }
  WriteFile(dir / "oracle.py", kOracleScript);
  WriteFile(dir / "in.txt", input);
  const auto lines = SplitLines(RunCommand("/usr/bin/python3 -I -W ignore " + ShellQuote((dir / "oracle.py").string()) +
                                           " " + ShellQuote((dir / "in.txt").string())));
  REQUIRE(lines.size() == exprs.size());
  std::vector<PyOut> out;
  out.reserve(lines.size());
  for (const auto& l : lines) {
    REQUIRE(!l.empty());
    if (l[0] == '=') {
      out.push_back({true, HexDecode(std::string_view(l).substr(1))});
    } else {
      out.push_back({false, l.substr(1)});
    }
  }
  return out;
}

// Python source text for a str holding exactly these bytes (surrogateescape for
// bytes that are not UTF-8, as Salt's Python would see them).
std::string PyBytes(std::string_view s) {
  std::string out = "b'";
  for (char c : s) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
    out += buf;
  }
  return out + "'";
}
std::string PyStr(std::string_view s) { return PyBytes(s) + ".decode('utf-8','surrogateescape')"; }

std::string PyFloat(double d) {
  if (std::isnan(d)) return "float('nan')";
  if (std::isinf(d)) return d > 0 ? "float('inf')" : "float('-inf')";
  char buf[64];
  std::snprintf(buf, sizeof buf, "float.fromhex('%a')", d);
  return buf;
}

std::string PyExpr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kUint: return std::to_string(v.as_uint());
    case Value::Kind::kFloat: return PyFloat(v.as_float());
    case Value::Kind::kString: return PyStr(v.as_string());
    case Value::Kind::kList: {
      std::string out = "[";
      for (const auto& item : v.as_list()) out += PyExpr(item) + ",";
      return out + "]";
    }
    case Value::Kind::kMap: {
      std::string out = "{";
      for (const auto& [k, item] : v.as_map()) out += PyStr(k) + ":" + PyExpr(item) + ",";
      return out + "}";
    }
  }
  return "?";
}

// Runs SQL in a fresh in-memory sqlite3 CLI; returns its output without the
// final newline.
std::string Sqlite(const std::string& sql) {
  std::string out = RunCommand("sqlite3 -batch :memory: " + ShellQuote(sql));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// ---------------------------------------------------------------------------
// Sample values.

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

std::vector<double> FiniteFloats() {
  return {4.0,    12.5,    1e16,   1e15,        1e-05,   0.0001,  0.1,     1.0 / 3.0,
          -0.0,   1e300,   5e-324, 123456789.123456789, 0.0, -1.5, 1e22, 1e21, 1e17,
          9999999999999998.0, 0.001, 123e-7, DBL_MAX, DBL_MIN, -2.5e-310, 9007199254740993.0,
          100.0,  -12345.678, 2.0e-4};
}

std::vector<Value> IntSamples() {
  return {Value(0),
          Value(1),
          Value(-1),
          Value(42),
          Value(9007199254740993LL),   // 2^53 + 1: not a double
          Value(-9007199254740993LL),
          Value(kI64Max),
          Value(kI64Min),
          Value(static_cast<std::uint64_t>(kI64Max) + 1),
          Value(kU64Max)};
}

std::vector<std::string> ValidStrings() {
  std::string controls;
  for (int c = 1; c < 0x20; ++c) controls += static_cast<char>(c);
  return {""s,
          "plain"s,
          "h\xc3\xa9llo w\xc3\xb6rld"s,                 // héllo wörld
          "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"s,      // 日本語
          "\xf0\x9f\x98\x80 emoji"s,                    // 😀
          "quote \" backslash \\ slash /"s,
          controls,
          "nul\0inside"s,
          "\0"s,
          "del \x7f end"s,
          "tab\tnl\nret\r"s,
          "\xe2\x80\xa8 \xe2\x80\xa9"s,  // U+2028, U+2029
          "\xef\xbb\xbf"s,               // BOM
          "\xef\xbf\xbf \xf4\x8f\xbf\xbf"s,  // U+FFFF, U+10FFFF
          "\xed\x9f\xbf \xee\x80\x80"s};     // U+D7FF, U+E000
}

std::vector<std::string> InvalidStrings() {
  return {"\x80"s,
          "\xff"s,
          "a\xc3"s,                       // truncated 2-byte sequence
          "\xc0\xaf"s,                    // overlong '/'
          "\xed\xa0\x80"s,                // encoded surrogate U+D800
          "\xf4\x90\x80\x80"s,            // above U+10FFFF
          "ok \xfe then \xc3\xa9"s,
          "\xe2\x82"
          "x"s,
          "\xf0\x9f\x98"s,                // truncated 4-byte sequence
          "\x80\x81\x82\xbf\xc1\xf5"s};
}

Value NestedSample() {
  return Value::Map({
      {"fun", "test.ping"},
      {"arg", Value::List({1, 2.5, "x", Value(), true, Value::EmptyMap(), Value::EmptyList()})},
      {"ret", Value::Map({{"minion1", true},
                          {"z", Value::Map({{"b", 1}, {"a", Value::List({Value::Map({{"k", 4.0}})})}})}})},
      {"B", false},
      {"\xc3\xa9t\xc3\xa9", "summer"},  // été
      {"", Value()},
      {"\xf0\x9f\x98\x80", Value::List({Value::List({Value::List({})})})},
  });
}

Value SortKeysSample() {
  ValueMap m;
  const std::vector<std::string> keys = {"b", "a", "B", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x7f", "",
                                         "A b", "\t", "aa", "\xef\xbf\xbf", "_stamp", "\xe2\x82\xac"};
  int i = 0;
  for (const auto& k : keys) m.emplace_back(k, Value(i++));
  return Value(std::move(m));
}

// Valid UTF-8 throughout: Python can print these with ensure_ascii=False.
std::vector<Value> ValidSamples() {
  std::vector<Value> v = {Value(), Value(true), Value(false)};
  for (const auto& i : IntSamples()) v.push_back(i);
  for (double d : FiniteFloats()) v.emplace_back(d);
  v.emplace_back(kInf);
  v.emplace_back(-kInf);
  v.emplace_back(kNaN);
  for (const auto& s : ValidStrings()) v.emplace_back(s);
  v.push_back(Value::EmptyList());
  v.push_back(Value::EmptyMap());
  v.push_back(Value::List({Value::EmptyList()}));
  v.push_back(Value::List({Value::EmptyMap()}));
  v.push_back(Value::Map({{"a", Value::EmptyMap()}, {"b", Value::EmptyList()}}));
  v.push_back(NestedSample());
  v.push_back(SortKeysSample());
  {
    ValueList floats;
    for (double d : FiniteFloats()) floats.emplace_back(d);
    floats.emplace_back(kInf);
    floats.emplace_back(-kInf);
    v.emplace_back(std::move(floats));
  }
  v.emplace_back(ValueList(IntSamples()));
  {
    ValueMap strings;
    int i = 0;
    for (const auto& s : ValidStrings()) strings.emplace_back("k" + std::to_string(i++) + s, Value(s));
    v.emplace_back(std::move(strings));
  }
  v.push_back(Value::Map({{"nested", Value::Map({{"z", Value::Map({{"y", Value::Map({{"x", 1}, {"w", 2}})}})},
                                                 {"a", Value::List({Value::Map({{"d", 1}, {"c", 2}})})}})}}));
  return v;
}

std::vector<Value> InvalidByteSamples() {
  std::vector<Value> v;
  for (const auto& s : InvalidStrings()) v.emplace_back(s);
  ValueMap m;
  int i = 0;
  for (const auto& s : InvalidStrings()) m.emplace_back("key" + std::to_string(i++) + s, Value(s));
  v.emplace_back(std::move(m));
  v.push_back(Value::List({"\x80"s, Value::Map({{"\xff", "\xfe"s}})}));
  return v;
}

bool HasNonFinite(const Value& v) {
  if (v.is_float()) return !std::isfinite(v.as_float());
  if (v.is_list()) {
    return std::any_of(v.as_list().begin(), v.as_list().end(), HasNonFinite);
  }
  if (v.is_map()) {
    return std::any_of(v.as_map().begin(), v.as_map().end(),
                       [](const auto& e) { return HasNonFinite(e.second); });
  }
  return false;
}

bool HasNaN(const Value& v) {
  if (v.is_float()) return std::isnan(v.as_float());
  if (v.is_list()) return std::any_of(v.as_list().begin(), v.as_list().end(), HasNaN);
  if (v.is_map()) {
    return std::any_of(v.as_map().begin(), v.as_map().end(), [](const auto& e) { return HasNaN(e.second); });
  }
  return false;
}

// Same value, and floats the same bit for bit (== treats -0.0 and 0.0 alike).
bool Identical(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kFloat: {
      const double x = a.as_float(), y = b.as_float();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case Value::Kind::kList: {
      const auto& la = a.as_list();
      const auto& lb = b.as_list();
      if (la.size() != lb.size()) return false;
      for (std::size_t i = 0; i < la.size(); ++i) {
        if (!Identical(la[i], lb[i])) return false;
      }
      return true;
    }
    case Value::Kind::kMap: {
      const auto& ma = a.as_map();
      const auto& mb = b.as_map();
      if (ma.size() != mb.size()) return false;
      for (std::size_t i = 0; i < ma.size(); ++i) {
        if (ma[i].first != mb[i].first || !Identical(ma[i].second, mb[i].second)) return false;
      }
      return true;
    }
    default: return a == b;
  }
}

std::string PyIndent(int indent) { return indent < 0 ? "None" : std::to_string(indent); }

// Instants.
Micros At(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0, int us = 0) {
  return Micros(date::sys_days(date::year(y) / date::month(mo) / date::day(d))) + std::chrono::hours(h) +
         std::chrono::minutes(mi) + std::chrono::seconds(s) + std::chrono::microseconds(us);
}

// floor division of microseconds into (seconds, microseconds in [0, 1e6)).
std::pair<std::int64_t, std::int64_t> SplitMicros(std::int64_t us) {
  std::int64_t s = us / 1000000;
  std::int64_t r = us % 1000000;
  if (r < 0) {
    r += 1000000;
    --s;
  }
  return {s, r};
}

std::string Nest(int levels, std::string_view inner = "") {
  return std::string(static_cast<std::size_t>(levels), '[') + std::string(inner) +
         std::string(static_cast<std::size_t>(levels), ']');
}

std::string NestObjects(int levels) {
  std::string out;
  for (int i = 1; i < levels; ++i) out += "{\"a\":";
  out += "{}";
  out.append(static_cast<std::size_t>(levels - 1), '}');
  return out;
}

}  // namespace

// ===========================================================================
// Value

TEST_CASE("value: each constructor gives the expected kind", "[core]") {
  CHECK(Value().kind() == Value::Kind::kNull);
  CHECK(Value(nullptr).is_null());
  CHECK(Value(true).kind() == Value::Kind::kBool);
  CHECK(Value(4).kind() == Value::Kind::kInt);
  CHECK(Value(4L).kind() == Value::Kind::kInt);
  CHECK(Value(4LL).kind() == Value::Kind::kInt);
  CHECK(Value(4U).kind() == Value::Kind::kInt);
  CHECK(Value(4UL).kind() == Value::Kind::kInt);
  CHECK(Value(4ULL).kind() == Value::Kind::kInt);
  CHECK(Value(4.0).kind() == Value::Kind::kFloat);
  CHECK(Value("s").kind() == Value::Kind::kString);
  CHECK(Value("s"s).kind() == Value::Kind::kString);
  CHECK(Value(std::string_view("s")).kind() == Value::Kind::kString);
  CHECK(Value::EmptyList().kind() == Value::Kind::kList);
  CHECK(Value::EmptyMap().kind() == Value::Kind::kMap);
  CHECK(Value::List({1, 2}).as_list().size() == 2);
  CHECK(Value::Map({{"a", 1}}).as_map().size() == 1);
  CHECK(Value(4).is_int());
  CHECK(Value(4).is_number());
  CHECK(Value(4.0).is_number());
  CHECK_FALSE(Value(4.0).is_int());
  CHECK_FALSE(Value("4").is_number());
  CHECK(Value("a\0b"s).as_string().size() == 3);
}

TEST_CASE("value: an int and a float with the same number are not equal", "[core]") {
  CHECK(Value(4) != Value(4.0));
  CHECK(Value(0) != Value(0.0));
  CHECK(Value(4) == Value(4));
  CHECK(Value(4.0) == Value(4.0));
  CHECK(Value(true) != Value(1));
  CHECK(Value(false) != Value(0));
  CHECK(Value() != Value(0));
  CHECK(Value("4") != Value(4));
  CHECK(Value::List({4}) != Value::List({4.0}));
  CHECK(Value::Map({{"a", 4}}) != Value::Map({{"a", 4.0}}));
  CHECK(Value(4ULL) == Value(4));  // unsigned that fits int64 is the same int
}

TEST_CASE("value: unsigned values above INT64_MAX are kept exactly as uint", "[core]") {
  const Value big(kU64Max);
  CHECK(big.kind() == Value::Kind::kUint);
  CHECK(big.is_int());
  CHECK(big.as_uint() == 18446744073709551615ULL);
  const Value just_above(static_cast<std::uint64_t>(kI64Max) + 1);
  CHECK(just_above.kind() == Value::Kind::kUint);
  CHECK(just_above.as_uint() == 9223372036854775808ULL);
  const Value at_max(static_cast<std::uint64_t>(kI64Max));
  CHECK(at_max.kind() == Value::Kind::kInt);
  CHECK(at_max.as_int() == kI64Max);
  CHECK(big != Value(-1));
  CHECK(big != Value(static_cast<double>(kU64Max)));
  CHECK(Value(kU64Max) == Value(18446744073709551615ULL));
}

TEST_CASE("value: map keys keep insertion order", "[core]") {
  Value m = Value::Map({{"zeta", 1}, {"alpha", 2}, {"mid", 3}});
  m.Set("beta", 4);
  m.Set("alpha", 20);  // replaced in place, not moved
  std::vector<std::string> keys;
  for (const auto& [k, v] : m.as_map()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"zeta", "alpha", "mid", "beta"});
  CHECK(m.Find("alpha")->as_int() == 20);
  // Order is part of equality.
  CHECK(Value::Map({{"a", 1}, {"b", 2}}) != Value::Map({{"b", 2}, {"a", 1}}));
  CHECK(ToJson(m) == R"({"zeta":1,"alpha":20,"mid":3,"beta":4})");
  CHECK(ParseJson(R"({"z":1,"a":2,"m":3})") == Value::Map({{"z", 1}, {"a", 2}, {"m", 3}}));
}

TEST_CASE("value: Find, FindString, Set and Erase work on maps and are safe on non-maps", "[core]") {
  Value m = Value::Map({{"a", 1}, {"s", "text"}, {"n", Value()}});
  REQUIRE(m.Find("a") != nullptr);
  CHECK(*m.Find("a") == Value(1));
  CHECK(m.Find("missing") == nullptr);
  CHECK(m.Find("") == nullptr);
  REQUIRE(m.FindString("s") != nullptr);
  CHECK(*m.FindString("s") == "text");
  CHECK(m.FindString("a") == nullptr);  // not a string
  CHECK(m.FindString("n") == nullptr);
  CHECK(m.FindString("missing") == nullptr);

  // Mutable Find writes through.
  *m.Find("a") = Value(5);
  CHECK(m.Find("a")->as_int() == 5);

  m.Set("new", Value::List({1}));
  CHECK(m.as_map().back().first == "new");
  CHECK(m.as_map().size() == 4);
  m.Set("new", 2);
  CHECK(m.as_map().size() == 4);
  CHECK(*m.Find("new") == Value(2));

  CHECK(m.Erase("s"));
  CHECK_FALSE(m.Erase("s"));
  CHECK(m.Find("s") == nullptr);
  CHECK(m.as_map().size() == 3);
  CHECK(m.as_map()[0].first == "a");
  CHECK(m.as_map()[1].first == "n");
  CHECK(m.as_map()[2].first == "new");

  // Keys are bytes: NUL and invalid UTF-8 are fine.
  m.Set("k\0x"s, 1);
  CHECK(m.Find("k\0x"s) != nullptr);
  CHECK(m.Find("k") == nullptr);

  const Value list = Value::List({1});
  const Value str("a");
  CHECK(list.Find("a") == nullptr);
  CHECK(str.FindString("a") == nullptr);
  Value mutable_list = Value::List({1});
  CHECK_FALSE(mutable_list.Erase("a"));
  CHECK(mutable_list == Value::List({1}));
  CHECK_THROWS_AS(mutable_list.Set("a", 1), std::bad_variant_access);
  Value null;
  CHECK_THROWS_AS(null.Set("a", 1), std::bad_variant_access);
}

TEST_CASE("value: accessors throw bad_variant_access on the wrong kind", "[core]") {
  CHECK_THROWS_AS(Value(1).as_float(), std::bad_variant_access);
  CHECK_THROWS_AS(Value(1.0).as_int(), std::bad_variant_access);
  CHECK_THROWS_AS(Value(1).as_uint(), std::bad_variant_access);
  CHECK_THROWS_AS(Value().as_bool(), std::bad_variant_access);
  CHECK_THROWS_AS(Value(1).as_string(), std::bad_variant_access);
  CHECK_THROWS_AS(Value::EmptyMap().as_list(), std::bad_variant_access);
  CHECK_THROWS_AS(Value::EmptyList().as_map(), std::bad_variant_access);
}

TEST_CASE("value: Truthy follows Python's bool() on the same values", "[core]") {
  // The rule, spelled out.
  CHECK_FALSE(Value().Truthy());
  CHECK_FALSE(Value(false).Truthy());
  CHECK(Value(true).Truthy());
  CHECK_FALSE(Value(0).Truthy());
  CHECK(Value(-1).Truthy());
  CHECK(Value(kU64Max).Truthy());
  CHECK_FALSE(Value(0.0).Truthy());
  CHECK_FALSE(Value(-0.0).Truthy());
  CHECK(Value(kNaN).Truthy());
  CHECK(Value(5e-324).Truthy());
  CHECK_FALSE(Value("").Truthy());
  CHECK(Value("0").Truthy());
  CHECK(Value("\0"s).Truthy());
  CHECK_FALSE(Value::EmptyList().Truthy());
  CHECK(Value::List({Value()}).Truthy());
  CHECK_FALSE(Value::EmptyMap().Truthy());
  CHECK(Value::Map({{"", Value()}}).Truthy());

  // And against Python over every sample.
  std::vector<Value> samples = ValidSamples();
  for (auto& v : InvalidByteSamples()) samples.push_back(v);
  std::vector<std::string> exprs;
  for (const auto& v : samples) exprs.push_back("bool(" + PyExpr(v) + ")");
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    INFO("value: " << ToJson(samples[i], JsonStyle::Python(-1)));
    REQUIRE(py[i].ok);
    CHECK(samples[i].Truthy() == (py[i].text == "True"));
  }
}

TEST_CASE("value: EqualExceptKey ignores only the named key", "[core]") {
  const Value a = Value::Map({{"id", "m1"}, {"ret", true}, {"_stamp", "2024-01-01T12:00:00.000001"}});
  const Value b = Value::Map({{"id", "m1"}, {"ret", true}, {"_stamp", "2024-01-01T12:00:05"}});
  CHECK(EqualExceptKey(a, b, "_stamp"));
  CHECK(EqualExceptKey(a, a, "_stamp"));
  CHECK_FALSE(a == b);
  // Only that key is ignored.
  CHECK_FALSE(EqualExceptKey(a, b, "id"));
  const Value c = Value::Map({{"id", "m1"}, {"ret", false}, {"_stamp", "2024-01-01T12:00:05"}});
  CHECK_FALSE(EqualExceptKey(a, c, "_stamp"));
  // Int vs float still differ.
  CHECK_FALSE(EqualExceptKey(Value::Map({{"x", 1}, {"_stamp", "a"}}), Value::Map({{"x", 1.0}, {"_stamp", "b"}}),
                             "_stamp"));
  // Different order: false.
  const Value reordered = Value::Map({{"ret", true}, {"id", "m1"}, {"_stamp", "x"}});
  CHECK_FALSE(EqualExceptKey(a, reordered, "_stamp"));
  const Value stamp_moved = Value::Map({{"_stamp", "x"}, {"id", "m1"}, {"ret", true}});
  CHECK_FALSE(EqualExceptKey(a, stamp_moved, "_stamp"));
  // Key missing on one side: false, either way round.
  const Value no_stamp = Value::Map({{"id", "m1"}, {"ret", true}});
  CHECK_FALSE(EqualExceptKey(a, no_stamp, "_stamp"));
  CHECK_FALSE(EqualExceptKey(no_stamp, a, "_stamp"));
  // Same size, but the ignored key is in place of another key.
  const Value swapped = Value::Map({{"id", "m1"}, {"other", true}, {"_stamp", "x"}});
  CHECK_FALSE(EqualExceptKey(a, swapped, "_stamp"));
  const Value a_ret_as_stamp = Value::Map({{"id", "m1"}, {"_stamp", true}, {"ret", "x"}});
  CHECK_FALSE(EqualExceptKey(a, a_ret_as_stamp, "_stamp"));
  // Neither side has it: plain equality.
  CHECK(EqualExceptKey(no_stamp, no_stamp, "_stamp"));
  CHECK_FALSE(EqualExceptKey(no_stamp, Value::Map({{"id", "m2"}, {"ret", true}}), "_stamp"));
  // Nested values under other keys are compared in full.
  CHECK_FALSE(EqualExceptKey(Value::Map({{"r", Value::Map({{"_stamp", 1}})}, {"_stamp", 1}}),
                             Value::Map({{"r", Value::Map({{"_stamp", 2}})}, {"_stamp", 1}}), "_stamp"));
  // Not maps: false.
  CHECK_FALSE(EqualExceptKey(Value::List({1}), Value::List({1}), "_stamp"));
  CHECK_FALSE(EqualExceptKey(Value(), Value(), "_stamp"));
  CHECK(EqualExceptKey(Value::EmptyMap(), Value::EmptyMap(), "_stamp"));
}

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

// ===========================================================================
// Parser

TEST_CASE("json: ParseJson accepts the same numbers as Python's json.loads", "[core]") {
  const std::vector<std::string> inputs = {
      "0", "-0", "1", "-1", "01", "-01", "00", "1.", "1.0", ".5", "-.5", "1e5", "1E5", "1e+5", "1e-5",
      "1.5e3", "1e", "1e+", "1.e5", "+1", "-", "--1", "0x10", "1_000", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
      "18446744073709551616", "123456789012345678901234567890", "1e400", "-1e400", "1e-400", "-1e-400",
      "0.1e1", "1 ", " 1", "\t1\n", "\f1", "Infinity", "-Infinity", "NaN", "-NaN", "infinity", "nan", "inf",
      "1.5.2", "1e5e5", "2-1", "0-1", "1e05", "-0.0", "0.0000000000000000000000000001", "4.0", "1E-05",
      "123456789.123456789", "2.5E+3", "1.7976931348623157e308", "1.8e308", "5e-324", "1 2", "[1]",
      "0e0", "-0e-0", "1.0e", "1.0e-", "00.5", "0.", "-.0"};
  std::vector<std::string> exprs;
  for (const auto& s : inputs) {
    exprs.push_back("(lambda v: ('int:' + repr(v)) if type(v) is int and -2**63 <= v < 2**64 else "
                    "('float:' + repr(float(v))))(json.loads(" + PyStr(s) + "))");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("input: '" << inputs[i] << "', python: " << (py[i].ok ? py[i].text : "error " + py[i].text));
    std::string mine;
    try {
      const Value v = ParseJson(inputs[i]);
      if (v.kind() == Value::Kind::kInt) {
        mine = "int:" + std::to_string(v.as_int());
      } else if (v.kind() == Value::Kind::kUint) {
        mine = "int:" + std::to_string(v.as_uint());
      } else if (v.is_float()) {
        mine = "float:" + brine::PythonFloatRepr(v.as_float());
      } else {
        mine = "other";
      }
    } catch (const JsonError&) {
      mine = "error";
    }
    if (py[i].ok) {
      CHECK(mine == py[i].text);
    } else if (inputs[i] != "[1]") {
      CHECK(mine == "error");
    }
  }
}

TEST_CASE("json: ParseJson rejects truncated input", "[core]") {
  for (const std::string& s :
       std::vector<std::string>{"", " ", "{", "[", "[1", "[1,", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,", "\"abc", "\"abc\\",
        "\"\\u12", "\"\\u", "tru", "fals", "nul", "Infinit", "-", "-Inf", "N", "[\"a\",{\"b\":[", "1e", "-"}) {
    INFO("input: '" << s << "'");
    CHECK_THROWS_AS(ParseJson(s), JsonError);
  }
}

TEST_CASE("json: ParseJson rejects trailing garbage", "[core]") {
  for (const std::string& s : std::vector<std::string>{"1 2", "{} x", "[]]", "{}}", "truex", "nullnull", "\"a\"\"b\"", "1,", "[1] [2]",
                              "NaN1", "0 0", "{\"a\":1}\n,", "\"x\"\x01", "1\0"s}) {
    INFO("input: '" << s << "'");
    CHECK_THROWS_AS(ParseJson(s), JsonError);
  }
  // Surrounding JSON whitespace alone is fine.
  CHECK(ParseJson(" \t\r\n[1]\n \t") == Value::List({1}));
}

TEST_CASE("json: ParseJson rejects bad escapes, raw control characters and bad structure", "[core]") {
  for (const std::string& s :
       std::vector<std::string>{"\"\\x41\"", "\"\\a\"", "\"\\U0041\"", "\"\\u12g4\"", "\"\\u-123\"", "\"\\'\"", "\"\\0\"", "\"\\ \"",
        "\"a\nb\"", "\"\t\"", "\"\x01\"", "\"\x1f\"", "\"\0\""s, "{a:1}", "{'a':1}", "{\"a\" 1}", "{\"a\":1,}",
        "[1,]", "[,1]", "{,}", "[1 2]", "{\"a\":1 \"b\":2}", "{1:2}", "True", "None", "undefined", "'a'",
        "{\"a\"::1}", "[:]", "\xef\xbb\xbf[]"}) {
    INFO("input: '" << s << "'");
    CHECK_THROWS_AS(ParseJson(s), JsonError);
  }
}

TEST_CASE("json: ParseJson rejects lone surrogates other than surrogateescape bytes", "[core]") {
  for (const std::string& s :
       std::vector<std::string>{"\"\\ud800\"", "\"\\udbff\"", "\"\\ud800x\"", "\"\\ud800\\u0041\"", "\"\\ud800\\ud800\"", "\"\\udc00\"",
        "\"\\udc7f\"", "\"\\udd00\"", "\"\\udfff\"", "\"\\ude00\\ud83d\"", "\"a\\ud83d\"", "\"\\ud83d\\n\"",
        "{\"\\ud800\":1}"}) {
    INFO("input: " << s);
    CHECK_THROWS_AS(ParseJson(s), JsonError);
  }
  // The surrogateescape range is the bytes 0x80..0xff, and pairs are characters.
  CHECK(ParseJson("\"\\udc80\"").as_string() == "\x80"s);
  CHECK(ParseJson("\"\\uDCFF\"").as_string() == "\xff"s);
  CHECK(ParseJson("\"\\ud83d\\ude00\"").as_string() == "\xf0\x9f\x98\x80");
  CHECK(ParseJson("\"\\ud83d\\udc80\"").as_string() == "\xf0\x9f\x92\x80");  // a pair, not a byte
  CHECK(ParseJson("\"\\ud800\\udc00\"").as_string() == "\xf0\x90\x80\x80");
  CHECK(ParseJson("\"\\udbff\\udfff\"").as_string() == "\xf4\x8f\xbf\xbf");
}

TEST_CASE("json: ParseJson decodes escapes and Python's non-finite words", "[core]") {
  CHECK(ParseJson(R"("\"\\\/\b\f\n\r\t")").as_string() == "\"\\/\b\f\n\r\t");
  CHECK(ParseJson(R"("\u00e9\u00E9")").as_string() == "\xc3\xa9\xc3\xa9");
  CHECK(ParseJson(R"("\u0000")").as_string() == "\0"s);
  CHECK(ParseJson(R"("\u20ac")").as_string() == "\xe2\x82\xac");
  CHECK(ParseJson("\"\xc3\xa9 raw\"").as_string() == "\xc3\xa9 raw");
  CHECK(ParseJson("\"\x7f\"").as_string() == "\x7f");
  CHECK(ParseJson("Infinity").as_float() == kInf);
  CHECK(ParseJson("-Infinity").as_float() == -kInf);
  CHECK(std::isnan(ParseJson("NaN").as_float()));
  CHECK(ParseJson("9e999").as_float() == kInf);
  CHECK(ParseJson("[true,false,null]") == Value::List({true, false, Value()}));
  CHECK(ParseJson(R"({"a" : [ 1 , { } , [ ] ] })") ==
        Value::Map({{"a", Value::List({1, Value::EmptyMap(), Value::EmptyList()})}}));
}

TEST_CASE("json: ParseJson accepts kMaxJsonDepth levels and refuses one more", "[core]") {
  constexpr int kMax = brine::kMaxJsonDepth;
  // Arrays.
  Value v = ParseJson(Nest(kMax));
  int depth = 0;
  for (const Value* p = &v; p->is_list(); p = p->as_list().empty() ? nullptr : &p->as_list()[0]) {
    ++depth;
    if (p->as_list().empty()) break;
  }
  CHECK(depth == kMax);
  CHECK_NOTHROW(ParseJson(Nest(kMax, "1")));
  CHECK_THROWS_AS(ParseJson(Nest(kMax + 1)), JsonError);
  CHECK_THROWS_AS(ParseJson(Nest(kMax, "[]")), JsonError);
  CHECK_THROWS_AS(ParseJson(Nest(kMax, "{}")), JsonError);
  // Objects.
  CHECK_NOTHROW(ParseJson(NestObjects(kMax)));
  CHECK_THROWS_AS(ParseJson(NestObjects(kMax + 1)), JsonError);
}

TEST_CASE("json: 10,000 nested levels throw JsonError instead of crashing", "[core]") {
  CHECK_THROWS_AS(ParseJson(Nest(10000)), JsonError);
  CHECK_THROWS_AS(ParseJson(NestObjects(10000)), JsonError);
  CHECK_THROWS_AS(ParseJson(std::string(10000, '[')), JsonError);
  CHECK_THROWS_AS(ParseJson(std::string(1000000, '[')), JsonError);
  std::string mixed;
  for (int i = 0; i < 5000; ++i) mixed += "[{\"k\":";
  CHECK_THROWS_AS(ParseJson(mixed), JsonError);
  try {
    (void)ParseJson(Nest(10000));
  } catch (const JsonError& e) {
    CHECK_THAT(e.what(), Catch::Contains("deep"));
  }
}

TEST_CASE("json: the JsonError message names the byte offset", "[core]") {
  try {
    (void)ParseJson("[1, 2, x]");
    FAIL("no JsonError");
  } catch (const JsonError& e) {
    CHECK_THAT(e.what(), Catch::Contains("byte 7"));
  }
  try {
    (void)ParseJson("{\"a\":1} trailing");
    FAIL("no JsonError");
  } catch (const JsonError& e) {
    CHECK_THAT(e.what(), Catch::Contains("byte 8"));
  }
}

TEST_CASE("json: ensure_ascii escapes everything outside printable ASCII like Python", "[core]") {
  JsonStyle ascii = JsonStyle::Python(-1);
  ascii.ensure_ascii = true;
  CHECK(ToJson(Value("\x7f"), ascii) == "\"\\u007f\"");
  CHECK(ToJson(Value("\xc3\xa9"), ascii) == "\"\\u00e9\"");
  CHECK(ToJson(Value("\xf0\x9f\x98\x80"), ascii) == "\"\\ud83d\\ude00\"");
  CHECK(ToJson(Value("\x7f"), JsonStyle::Python(-1)) == "\"\x7f\"");
}

// ===========================================================================
// UTF-8

TEST_CASE("utf8: valid 1 to 4 byte sequences are accepted at every boundary", "[core]") {
  struct Seq {
    std::string bytes;
    char32_t cp;
  };
  const std::vector<Seq> valid = {
      {"\x00"s, 0x0},          {"\x7f", 0x7F},          {"\xc2\x80", 0x80},         {"\xdf\xbf", 0x7FF},
      {"\xe0\xa0\x80", 0x800}, {"\xed\x9f\xbf", 0xD7FF}, {"\xee\x80\x80", 0xE000},  {"\xef\xbf\xbf", 0xFFFF},
      {"\xf0\x90\x80\x80", 0x10000}, {"\xf4\x8f\xbf\xbf", 0x10FFFF}, {"\xc3\xa9", 0xE9},
      {"\xe2\x82\xac", 0x20AC}, {"\xf0\x9f\x98\x80", 0x1F600}};
  for (const auto& s : valid) {
    INFO("bytes: " << HexEncode(s.bytes));
    CHECK(brine::Utf8SequenceLength(s.bytes) == s.bytes.size());
    CHECK(brine::Utf8SequenceLength(s.bytes + "tail") == s.bytes.size());
    CHECK(brine::IsValidUtf8(s.bytes));
    CHECK(brine::DecodeUtf8(s.bytes) == s.cp);
    std::string enc;
    brine::AppendUtf8(s.cp, enc);
    CHECK(enc == s.bytes);
  }
  CHECK(brine::IsValidUtf8(""));
  CHECK(brine::Utf8SequenceLength("") == 0);
  CHECK(brine::IsValidUtf8("plain ascii \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
}

TEST_CASE("utf8: overlong forms, surrogates and code points above U+10FFFF are rejected", "[core]") {
  for (const std::string& s : std::vector<std::string>{
           "\xc0\x80"s, "\xc0\xaf"s, "\xc1\xbf"s,                // overlong 2-byte
           "\xe0\x80\x80"s, "\xe0\x9f\xbf"s,                     // overlong 3-byte
           "\xf0\x80\x80\x80"s, "\xf0\x8f\xbf\xbf"s,             // overlong 4-byte
           "\xed\xa0\x80"s, "\xed\xbf\xbf"s, "\xed\xb2\x80"s,    // surrogates
           "\xf4\x90\x80\x80"s, "\xf5\x80\x80\x80"s, "\xf7\xbf\xbf\xbf"s, "\xf8\x88\x80\x80\x80"s,
           "\xff"s, "\xfe"s, "\x80"s, "\xbf"s,                   // never valid / lone continuation
           "\xc3"s, "\xe2\x82"s, "\xf0\x9f\x98"s,                // truncated
           "\xc3\x28"s, "\xe2\x28\xa1"s, "\xf0\x28\x8c\xbc"s,    // bad continuation
       }) {
    INFO("bytes: " << HexEncode(s));
    CHECK(brine::Utf8SequenceLength(s) == 0);
    CHECK_FALSE(brine::IsValidUtf8(s));
    CHECK_FALSE(brine::IsValidUtf8("ok" + s + "ok"));
  }
  // AppendUtf8 keeps a lone surrogate as WTF-8, which is then not valid UTF-8.
  std::string wtf8;
  brine::AppendUtf8(0xD800, wtf8);
  CHECK(wtf8 == "\xed\xa0\x80");
  CHECK_FALSE(brine::IsValidUtf8(wtf8));
}

TEST_CASE("utf8: IsValidUtf8 and DecodeUtf8 agree with Python's decoder on random bytes", "[core]") {
  std::mt19937 rng(99);
  // Leading bytes from every class, followed mostly by continuation bytes near
  // the boundaries that decide overlong / surrogate / range errors.
  const std::vector<unsigned char> leads = {0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
                                            0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf8, 0xff};
  const std::vector<unsigned char> conts = {0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0x41, 0xc0};
  std::vector<std::string> samples;
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) {
      const bool cont = k > 0 && rng() % 3 != 0;
      s += static_cast<char>(cont ? conts[rng() % conts.size()] : leads[rng() % leads.size()]);
    }
    samples.push_back(s);
  }
  std::vector<std::string> exprs;
  for (const auto& s : samples) {
    exprs.push_back("' '.join('%x' % ord(c) for c in " + PyBytes(s) + ".decode('utf-8'))");
  }
  const auto py = PyEval(exprs);
  std::size_t valid = 0;
  std::vector<std::string> mismatches;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const bool mine_valid = brine::IsValidUtf8(samples[i]);
    std::string mine;
    if (mine_valid) {
      ++valid;
      std::string_view rest = samples[i];
      while (!rest.empty()) {
        const std::size_t n = brine::Utf8SequenceLength(rest);
        if (n == 0) break;
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x", static_cast<unsigned>(brine::DecodeUtf8(rest.substr(0, n))));
        mine += (mine.empty() ? "" : " ") + std::string(buf);
        rest.remove_prefix(n);
      }
    }
    if (mine_valid != py[i].ok || (mine_valid && mine != py[i].text)) {
      if (mismatches.size() < 20) mismatches.push_back(HexEncode(samples[i]) + " python " + py[i].text + " brine " + mine);
    }
  }
  for (const auto& m : mismatches) UNSCOPED_INFO(m);
  CHECK(mismatches.empty());
  CHECK(valid > 100);  // the sample hits both outcomes
  CHECK(valid < samples.size() - 100);
}

TEST_CASE("utf8: AppendUtf8 and DecodeUtf8 round-trip every code point", "[core]") {
  std::size_t failures = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    brine::AppendUtf8(cp, s);
    const std::size_t expected = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (s.size() != expected || brine::Utf8SequenceLength(s) != expected || brine::DecodeUtf8(s) != cp) ++failures;
  }
  CHECK(failures == 0);
}

// ===========================================================================
// Time

TEST_CASE("time: FormatStamp drops a zero fraction and keeps six digits otherwise", "[core]") {
  CHECK(brine::FormatStamp(At(2024, 1, 1, 12, 0, 0, 0)) == "2024-01-01T12:00:00");
  CHECK(brine::FormatStamp(At(2024, 1, 1, 12, 0, 0, 123456)) == "2024-01-01T12:00:00.123456");
  CHECK(brine::FormatStamp(At(2024, 1, 1, 12, 0, 0, 1)) == "2024-01-01T12:00:00.000001");
  CHECK(brine::FormatStamp(At(2024, 1, 1, 12, 0, 0, 100000)) == "2024-01-01T12:00:00.100000");
  CHECK(brine::FormatStamp(At(1970, 1, 1)) == "1970-01-01T00:00:00");
  CHECK(brine::FormatStamp(At(2024, 2, 29, 23, 59, 59, 999999)) == "2024-02-29T23:59:59.999999");
  CHECK(brine::FormatStamp(brine::FromUnixMicros(-1)) == "1969-12-31T23:59:59.999999");
}

TEST_CASE("time: FormatStamp, FormatSqliteTime and FormatJid match Python's datetime on random instants", "[core]") {
  std::mt19937_64 rng(1234);
  const std::int64_t y1970_to_2100 = 4102444800LL * 1000000;
  const std::int64_t year1 = -62135596800LL * 1000000;
  const std::int64_t year9999_end = 253402300799LL * 1000000 + 999999;
  std::vector<std::int64_t> instants = {0, -1, 1, 999999, 1000000, 1704110400LL * 1000000,
                                        1704110400LL * 1000000 + 123456, year1, year9999_end};
  for (int i = 0; i < 400; ++i) {
    std::int64_t us = 0;
    switch (i % 4) {
      case 0: us = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(y1970_to_2100)); break;
      case 1: us = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(y1970_to_2100)) / 1000000 * 1000000; break;
      case 2: us = -static_cast<std::int64_t>(rng() % 2208988800000000ULL); break;  // 1900..1970
      default: us = year1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(year9999_end - year1)); break;
    }
    instants.push_back(us);
  }
  std::vector<std::string> exprs;
  for (std::int64_t us : instants) {
    const auto [s, frac] = SplitMicros(us);
    const std::string dt = "datetime.datetime.utcfromtimestamp(" + std::to_string(s) +
                           ").replace(microsecond=" + std::to_string(frac) + ")";
    exprs.push_back(dt + ".isoformat()");
    exprs.push_back(dt + ".isoformat(' ', 'milliseconds')");
    exprs.push_back(dt + ".strftime('%Y%m%d%H%M%S%f')");
  }
  const auto py = PyEval(exprs);
  std::vector<std::string> mismatches;
  for (std::size_t i = 0; i < instants.size(); ++i) {
    const Micros t = brine::FromUnixMicros(instants[i]);
    const std::string stamp = brine::FormatStamp(t);
    const std::string sqlite = brine::FormatSqliteTime(t);
    const std::string jid = brine::FormatJid(t);
    const bool four_digit_year = jid.size() == 20 && jid[0] != '0';  // strftime %Y does not pad
    if (!py[3 * i].ok || stamp != py[3 * i].text) mismatches.push_back("stamp " + stamp + " vs " + py[3 * i].text);
    if (!py[3 * i + 1].ok || sqlite != py[3 * i + 1].text) mismatches.push_back("sqlite " + sqlite + " vs " + py[3 * i + 1].text);
    if (four_digit_year && (!py[3 * i + 2].ok || jid != py[3 * i + 2].text)) mismatches.push_back("jid " + jid + " vs " + py[3 * i + 2].text);
    // And the text reads back to the same instant.
    if (brine::ParseStamp(stamp) != t) mismatches.push_back("ParseStamp(" + stamp + ") does not give it back");
    if (four_digit_year && brine::JidToMicros(jid) != t) mismatches.push_back("JidToMicros(" + jid + ") does not give it back");
  }
  for (std::size_t i = 0; i < mismatches.size() && i < 20; ++i) UNSCOPED_INFO(mismatches[i]);
  CHECK(mismatches.empty());
}

TEST_CASE("time: ParseStamp reads stamps with and without a fraction", "[core]") {
  CHECK(brine::ParseStamp("2024-01-01T12:00:00") == At(2024, 1, 1, 12));
  CHECK(brine::ParseStamp("2024-01-01 12:00:00") == At(2024, 1, 1, 12));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.123456") == At(2024, 1, 1, 12, 0, 0, 123456));
  CHECK(brine::ParseStamp("2024-01-01 12:00:00.123456") == At(2024, 1, 1, 12, 0, 0, 123456));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.1") == At(2024, 1, 1, 12, 0, 0, 100000));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.12") == At(2024, 1, 1, 12, 0, 0, 120000));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.123") == At(2024, 1, 1, 12, 0, 0, 123000));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.1234") == At(2024, 1, 1, 12, 0, 0, 123400));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.12345") == At(2024, 1, 1, 12, 0, 0, 123450));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.000001") == At(2024, 1, 1, 12, 0, 0, 1));
  CHECK(brine::ParseStamp("2024-01-01T12:00:00.000000") == At(2024, 1, 1, 12));
  CHECK(brine::ParseStamp("2024-02-29T23:59:59.999999") == At(2024, 2, 29, 23, 59, 59, 999999));
  CHECK(brine::ParseStamp("1969-12-31T23:59:59.999999") == brine::FromUnixMicros(-1));
  CHECK(brine::ParseStamp("0001-01-01T00:00:00") == At(1, 1, 1));
  CHECK(brine::ParseStamp("9999-12-31T23:59:59.999999") == At(9999, 12, 31, 23, 59, 59, 999999));
}

TEST_CASE("time: ParseStamp rejects anything that is not a stamp", "[core]") {
  for (const std::string& s :
       std::vector<std::string>{"", "garbage", "2024-01-01", "2024-01-01T12:00", "2024-01-01T12:00:0", "2024-01-01T12:00:00.",
        "2024-01-01T12:00:00.1234567", "2024-01-01X12:00:00", "2024-01-01t12:00:00", "2024-13-01T12:00:00",
        "2024-00-10T12:00:00", "2023-02-29T12:00:00", "2024-01-32T12:00:00", "2024-01-00T12:00:00",
        "2024-04-31T12:00:00", "2024-01-01T24:00:00", "2024-01-01T12:60:00", "2024-01-01T12:00:00Z",
        "2024-01-01T12:00:00+00:00", "2024-01-01T12:00:00.123Z", "2024-0a-01T12:00:00", "2024-1-01T12:00:00",
        " 2024-01-01T12:00:00", "2024-01-01T12:00:00 ", "2024/01/01T12:00:00", "2024-01-01T12:00:00,5",
        "2024-01-01T12:00:00.-1", "2024-01-01T12:00:00.1 ", "2024-01-01T12:00:00.12a", "20240101T12:00:00.123456",
        "2024-01-01T12:00:00\0"s, "-024-01-01T12:00:00", "+2024-01-01T12:00:00", "2024-01-01T1:00:00",
        "2024-01-01T12-00-00", "2024-01-01T12:00:00.+12345"}) {
    INFO("input: '" << s << "'");
    CHECK_FALSE(brine::ParseStamp(s).has_value());
  }
}

TEST_CASE("time: FormatSqliteTime writes milliseconds, truncated", "[core]") {
  CHECK(brine::FormatSqliteTime(At(2024, 1, 1, 12)) == "2024-01-01 12:00:00.000");
  CHECK(brine::FormatSqliteTime(At(2024, 1, 1, 12, 0, 0, 123456)) == "2024-01-01 12:00:00.123");
  CHECK(brine::FormatSqliteTime(At(2024, 1, 1, 12, 0, 0, 999999)) == "2024-01-01 12:00:00.999");
  CHECK(brine::FormatSqliteTime(At(2024, 1, 1, 12, 0, 0, 999)) == "2024-01-01 12:00:00.000");
  CHECK(brine::FormatSqliteTime(At(2024, 1, 1, 12, 0, 0, 1000)) == "2024-01-01 12:00:00.001");
  CHECK(brine::FormatSqliteTime(brine::FromUnixMicros(-1)) == "1969-12-31 23:59:59.999");
  // SQLite itself writes the same text for the same millisecond.
  CHECK(Sqlite("select strftime('%Y-%m-%d %H:%M:%f', 1704110400, 'unixepoch')") ==
        brine::FormatSqliteTime(At(2024, 1, 1, 12)));
}

// ===========================================================================
// Jids

TEST_CASE("jid: FormatJid writes 20 digits of UTC time", "[core]") {
  CHECK(brine::FormatJid(At(2024, 1, 1, 12, 0, 0, 123456)) == "20240101120000123456");
  CHECK(brine::FormatJid(At(2013, 9, 16, 12, 55, 24, 463507)) == "20130916125524463507");
  CHECK(brine::FormatJid(At(2024, 1, 1)) == "20240101000000000000");
  CHECK(brine::FormatJid(At(1999, 12, 31, 23, 59, 59, 999999)) == "19991231235959999999");
  CHECK(brine::FormatJid(brine::FromUnixMicros(-1)) == "19691231235959999999");
}

TEST_CASE("jid: a plain generator gives the clock's 20 digits and may repeat", "[core]") {
  brine::FakeClock clock(At(2024, 1, 1, 12, 0, 0, 123456));
  brine::JidGenerator gen(clock, brine::JidUniqueness::kPlain, 4242);
  const std::string a = gen.Next();
  CHECK(a == "20240101120000123456");
  CHECK(a.size() == 20);
  CHECK(std::all_of(a.begin(), a.end(), [](char c) { return c >= '0' && c <= '9'; }));
  CHECK(brine::IsJid(a));
  CHECK(gen.Next() == a);  // same microsecond, same jid (Salt's default)
  clock.Advance(std::chrono::microseconds(1));
  CHECK(gen.Next() == "20240101120000123457");
  clock.Set(At(2020, 6, 1));
  CHECK(gen.Next() == "20200601000000000000");  // no monotonic adjustment
}

TEST_CASE("jid: a unique generator appends the pid and strictly increases when the clock stands still or goes back",
          "[core]") {
  brine::FakeClock clock(At(2024, 1, 1, 12, 0, 0, 123456));
  brine::JidGenerator gen(clock, brine::JidUniqueness::kWithPid, 4242);
  std::vector<std::string> jids;
  jids.push_back(gen.Next());
  CHECK(jids[0] == "20240101120000123456_4242");
  // Clock stands still.
  jids.push_back(gen.Next());
  CHECK(jids[1] == "20240101120000123457_4242");
  jids.push_back(gen.Next());
  CHECK(jids[2] == "20240101120000123458_4242");
  // Clock goes back an hour.
  clock.Set(At(2024, 1, 1, 11));
  jids.push_back(gen.Next());
  CHECK(jids[3] == "20240101120000123459_4242");
  // Clock goes forward past the last one: its own time again.
  clock.Set(At(2024, 1, 1, 13));
  jids.push_back(gen.Next());
  CHECK(jids[4] == "20240101130000000000_4242");
  // Carry across a second boundary.
  clock.Set(At(2024, 1, 1, 13, 0, 0, 999999));
  jids.push_back(gen.Next());
  jids.push_back(gen.Next());
  CHECK(jids[6] == "20240101130001000000_4242");
  for (std::size_t i = 0; i < jids.size(); ++i) {
    INFO(jids[i]);
    CHECK(brine::IsJid(jids[i]));
    CHECK(jids[i].size() == 25);
    CHECK(jids[i].substr(20) == "_4242");
    if (i > 0) {
      CHECK(jids[i] > jids[i - 1]);
      CHECK(*brine::JidToMicros(jids[i]) > *brine::JidToMicros(jids[i - 1]));
    }
  }
  brine::JidGenerator other_pid(clock, brine::JidUniqueness::kWithPid, 7);
  CHECK(other_pid.Next() == "20240101130000999999_7");
}

TEST_CASE("jid: a unique generator is safe across threads", "[core]") {
  brine::FakeClock clock(At(2024, 1, 1));
  brine::JidGenerator gen(clock, brine::JidUniqueness::kWithPid, 1);
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) got[static_cast<std::size_t>(t)].push_back(gen.Next());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& g : got) {
    CHECK(std::is_sorted(g.begin(), g.end()));
    all.insert(g.begin(), g.end());
  }
  CHECK(all.size() == static_cast<std::size_t>(kThreads * kEach));
  CHECK(*all.rbegin() == brine::FormatJid(At(2024, 1, 1) + std::chrono::microseconds(kThreads * kEach - 1)) + "_1");
}

TEST_CASE("jid: IsJid follows the spec's length and underscore rule", "[core]") {
  CHECK(brine::IsJid("20130916125524463507"));
  CHECK(brine::IsJid("20240101120000123456_4242"));
  CHECK(brine::IsJid("20240101120000123456_x"));  // 22 chars, '_' at 20: the suffix is not checked
  CHECK(brine::IsJid("20240101120000123456__"));
  CHECK_FALSE(brine::IsJid("20240101120000123456_"));   // 21 chars
  CHECK_FALSE(brine::IsJid("202401011200001234567"));   // 21 digits
  CHECK_FALSE(brine::IsJid("2024010112000012345678"));  // 22, no '_' at 20
  CHECK_FALSE(brine::IsJid("20240101120000123456x1"));
  CHECK_FALSE(brine::IsJid("2024010112000012345"));     // 19
  CHECK_FALSE(brine::IsJid("12345"));
  CHECK_FALSE(brine::IsJid(""));
  CHECK_FALSE(brine::IsJid("req"));
  CHECK_FALSE(brine::IsJid("nocache"));
  CHECK_FALSE(brine::IsJid("2024010112000012345a"));
  CHECK_FALSE(brine::IsJid("2024010112000012345a_1"));
  // 20 bytes but 10 Python characters (Arabic-Indic digits): not a jid.
  std::string arabic;
  for (int i = 0; i < 10; ++i) arabic += "\xd9\xa2";
  CHECK_FALSE(brine::IsJid(arabic));
}

TEST_CASE("jid: IsJid accepts odd 20-char strings exactly when Python's int() does", "[core]") {
  const std::vector<std::string> odd = {
      "20240101120000123456", " 0240101120000123456", "0240101120000123456 ", "  240101120000123456",
      "2024_101120000123456", "2024__01120000123456", "_0240101120000123456", "2024010112000012345_",
      "+0240101120000123456", "-0240101120000123456", "+-240101120000123456", "++240101120000123456",
      "2024 101120000123456", "\t0240101120000123456", "\n024010112000012345\r", "\v0240101120000123456",
      "\f0240101120000123456", "\x1c" "0240101120000123456"s, "0x40101120000123456a", "2024010112000012345a",
      "                    ", "0000000000000000000-", "2024-01-01T12:00:00Z", "1_2_3_4_5_6_7_8_9_01",
      "+_240101120000123456", "- 240101120000123456", " +240101120000123456", "99999999999999999999",
      "00000000000000000000", "2024010112000012345.", "20240101120000.23456", "2e240101120000123456",
      "\x00" "0240101120000123456"s, "0b01010101010101010 "};
  std::vector<std::string> exprs;
  for (const auto& s : odd) {
    REQUIRE(s.size() == 20);
    exprs.push_back("int(" + PyStr(s) + ")");
  }
  const auto py = PyEval(exprs);
  for (std::size_t i = 0; i < odd.size(); ++i) {
    INFO("jid: '" << odd[i] << "' python: " << py[i].text);
    CHECK(brine::IsJid(odd[i]) == py[i].ok);
    CHECK(brine::IsJid(odd[i] + "_42") == py[i].ok);
    CHECK_FALSE(brine::IsJid(odd[i] + "_"));
    CHECK_FALSE(brine::IsJid(odd[i] + "0"));
  }
}

TEST_CASE("jid: JidToTime formats the spec's examples", "[core]") {
  CHECK(brine::JidToTime("20130916125524463507") == "2013, Sep 16 12:55:24.463507");
  CHECK(brine::JidToTime("20240101120000123456_4242") == "2024, Jan 01 12:00:00.123456");
  CHECK(brine::JidToTime("12345") == "");
  const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int m = 1; m <= 12; ++m) {
    char jid[32];
    std::snprintf(jid, sizeof jid, "2024%02d15080910111213", m);
    CHECK(brine::JidToTime(jid) == "2024, "s + months[m - 1] + " 15 08:09:10.111213");
  }
}

TEST_CASE("jid: AppendJidTime appends JidToTime's text and leaves the text alone on an error", "[core]") {
  std::string out = "at ";
  brine::AppendJidTime("20130916125524463507", out);
  CHECK(out == "at 2013, Sep 16 12:55:24.463507");
  brine::AppendJidTime("12345", out);  // the length rule's ""
  CHECK(out == "at 2013, Sep 16 12:55:24.463507");
  CHECK_THROWS_AS(brine::AppendJidTime("20241301120000123456", out), brine::JidError);
  CHECK(out == "at 2013, Sep 16 12:55:24.463507");
}

TEST_CASE("jid: JidToTime keeps Salt's month quirks and errors", "[core]") {
  // Month 00: empty name, two spaces.
  CHECK(brine::JidToTime("20240001120000123456") == "2024,  01 12:00:00.123456");
  // Non-numeric month: Python's ValueError.
  CHECK_THROWS_AS(brine::JidToTime("2024ab01120000123456"), brine::JidError);
  CHECK_THROWS_AS(brine::JidToTime("2024  01120000123456"), brine::JidError);
  CHECK_THROWS_AS(brine::JidToTime("2024_101120000123456"), brine::JidError);
  CHECK_THROWS_AS(brine::JidToTime("2024ab01120000123456_1"), brine::JidError);
  // Month above 12: Python's IndexError.
  CHECK_THROWS_AS(brine::JidToTime("20241301120000123456"), brine::JidError);
  CHECK_THROWS_AS(brine::JidToTime("20249901120000123456"), brine::JidError);
  // What int() accepts is a month: " 1", "+1"; "-1" indexes from the end.
  CHECK(brine::JidToTime("2024 101120000123456") == "2024, Jan 01 12:00:00.123456");
  CHECK(brine::JidToTime("2024+101120000123456") == "2024, Jan 01 12:00:00.123456");
  CHECK(brine::JidToTime("2024-101120000123456") == "2024, Dec 01 12:00:00.123456");
  // Length rule: 21 -> "", 22 with '_' at 20 -> fine, 22 without -> "".
  CHECK(brine::JidToTime("202401011200001234567") == "");
  CHECK(brine::JidToTime("20240101120000123456_") == "");
  CHECK(brine::JidToTime("20240101120000123456_1") == "2024, Jan 01 12:00:00.123456");
  CHECK(brine::JidToTime("2024010112000012345612") == "");
  CHECK(brine::JidToTime("") == "");
  CHECK(brine::JidToTime("req") == "");
  // Other fields are copied, not checked.
  CHECK(brine::JidToTime("abcd01efghijklmnopqr") == "abcd, Jan ef gh:ij:kl.mnopqr");
  CHECK(brine::JidToTime("20240199996161999999") == "2024, Jan 99 99:61:61.999999");
}

TEST_CASE("jid: JidToMicros reads well-formed jids and refuses the rest", "[core]") {
  CHECK(brine::JidToMicros("20240101120000123456") == At(2024, 1, 1, 12, 0, 0, 123456));
  CHECK(brine::JidToMicros("20240101120000123456_4242") == At(2024, 1, 1, 12, 0, 0, 123456));
  CHECK(brine::JidToMicros("20130916125524463507") == At(2013, 9, 16, 12, 55, 24, 463507));
  CHECK(brine::JidToMicros("20240229235959999999") == At(2024, 2, 29, 23, 59, 59, 999999));
  for (const std::string& s :
       std::vector<std::string>{"req", "nocache", "", "12345", "20241301120000123456", "20240001120000123456", "20240230120000123456",
        "20230229120000123456", "20240100120000123456", "20240101240000123456", "20240101126000123456",
        "20240101120060123456", "2024010112000012345a", " 0240101120000123456", "+0240101120000123456",
        "2024_101120000123456", "202401011200001234567", "20240101120000123456_", "2024010112000012345612"}) {
    INFO("jid: '" << s << "'");
    CHECK_FALSE(brine::JidToMicros(s).has_value());
  }
}

// ===========================================================================
// Globs

TEST_CASE("glob: FnMatch agrees with Python's fnmatch.fnmatchcase", "[core]") {
  const std::vector<std::string> patterns = {
      "", "*", "**", "?", "??", "a", "abc", "a*", "*c", "a*c", "a?c", "*b*", "a*b*c", "[abc]", "[!abc]",
      "[a-z]", "[!a-z]", "[z-a]", "[z-ab]", "[a-]", "[-a]", "[]]", "[]a]", "[!]]", "[!]a]", "[", "[a", "a[",
      "[!", "[]", "[!]", "a[bc", "[[]", "[a-c-e]", "[]-a]", "[!-]", "*[0-9]", "salt/job/*/ret/*", "salt/*",
      "web?", "web[0-9]*", "*.example.com", "A*", "[A-Z]*", "\\*", "*\\", "\\[a]", "?*?", "*a*a*a*b",
      "\xc3\xa9", "?x", "[\xc3\xa9]", "*\xc3\xb6*", "[!\xc3\xa9]x", "[a-\xc3\xbf]", "\n*", "*\n", "[\n]",
      "a/*", "*/b/*", "[^a]", "[a^]", "[\\]]", "[&&]", "[|~]", "[.]", "(a)", "a+", "a{1}", "$", "^a"};
  const std::vector<std::string> texts = {
      "", "a", "b", "c", "abc", "ABC", "Abc", "ac", "abbc", "a/b/c", "aXc", "]", "[", "!", "-", "a-", "z", "0",
      "9", "web1", "web12", "webA", "salt/job/20240101120000123456/ret/minion1", "salt/auth", "host.example.com",
      "\\", "*", "\\x", "aaaaaaaaaaab", "aaaaaaaaaa", "\xc3\xa9", "\xc3\xb6", "\xc3\xa9x", "x\xc3\xb6y", "\xc3\xbfx",
      "\n", "a\nb", "[abc]", "d", "^", "&", "|", ".", "(a)", "aa", "a{1}", "$", "^a", "\xc3", "\x80", "[a]", "\\a"};
  std::vector<std::string> exprs;
  for (const auto& p : patterns) {
    for (const auto& t : texts) exprs.push_back("fnmatch.fnmatchcase(" + PyStr(t) + ", " + PyStr(p) + ")");
  }
  const auto py = PyEval(exprs);
  std::vector<std::string> mismatches;
  std::size_t k = 0, matches = 0;
  for (const auto& p : patterns) {
    for (const auto& t : texts) {
      REQUIRE(py[k].ok);
      const bool expected = py[k].text == "True";
      matches += expected ? 1 : 0;
      if (FnMatch(p, t) != expected) {
        mismatches.push_back("pattern '" + p + "' text '" + t + "': python " + py[k].text);
      }
      ++k;
    }
  }
  INFO("compared " << k << " pairs, " << matches << " matching");
  for (std::size_t i = 0; i < mismatches.size() && i < 30; ++i) UNSCOPED_INFO(mismatches[i]);
  CHECK(mismatches.empty());
  CHECK(matches > 100);
}

TEST_CASE("glob: '/' is not special, matching is case-sensitive and an unclosed [ is literal", "[core]") {
  CHECK(FnMatch("salt/job/*/ret/*", "salt/job/20240101120000123456/ret/minion1"));
  CHECK(FnMatch("*", "a/b/c"));
  CHECK(FnMatch("a?c", "a/c"));
  CHECK_FALSE(FnMatch("A*", "abc"));
  CHECK_FALSE(FnMatch("abc", "ABC"));
  CHECK(FnMatch("[", "["));
  CHECK(FnMatch("a[b", "a[b"));
  CHECK_FALSE(FnMatch("a[b", "ab"));
  CHECK(FnMatch("[]]", "]"));
  CHECK(FnMatch("[!abc]", "d"));
  CHECK_FALSE(FnMatch("[!abc]", "a"));
  CHECK(FnMatch("[a-z]", "m"));
  CHECK_FALSE(FnMatch("[a-z]", "M"));
  CHECK(FnMatch("", ""));
  CHECK_FALSE(FnMatch("", "a"));
  CHECK(FnMatch("*", ""));
  CHECK_FALSE(FnMatch("?", ""));
  CHECK(FnMatch("?", "\xc3\xa9"));  // one character, two bytes
  CHECK(FnMatch("web*", "web1.example.com"));
}

TEST_CASE("glob: IsLiteralGlob is true only without *, ? or [", "[core]") {
  CHECK(brine::IsLiteralGlob(""));
  CHECK(brine::IsLiteralGlob("minion1"));
  CHECK(brine::IsLiteralGlob("salt/job/1/ret/m1"));
  CHECK(brine::IsLiteralGlob("a]b!c-d\\"));
  CHECK_FALSE(brine::IsLiteralGlob("a*"));
  CHECK_FALSE(brine::IsLiteralGlob("a?"));
  CHECK_FALSE(brine::IsLiteralGlob("a["));
  CHECK_FALSE(brine::IsLiteralGlob("[abc]"));
}

TEST_CASE("json: ParseJsonMembers builds only the asked keys, in document order", "[core]") {
  using brine::ParseJsonMembers;
  static constexpr std::string_view kKeys[] = {"tgt", "fun", "absent"};
  const std::string load =
      R"({"jid":"1","fun":"cmd.run","skipped":{"deep":[1,2.5,"\"x\\",{"a":null}],"e":"\u00e9\udc80"},)"
      R"("tgt":["a","b"],"n":-1e5,"t":true})";
  const Value picked = ParseJsonMembers(load, kKeys);
  REQUIRE(ToJson(picked) == R"({"fun":"cmd.run","tgt":["a","b"]})");
  // Each picked value is what the full parse gives.
  const Value full = ParseJson(load);
  REQUIRE(*picked.Find("tgt") == *full.Find("tgt"));
  REQUIRE(ToJson(ParseJsonMembers("{}", kKeys)) == "{}");
  // Skipped members are still checked: malformed text is an error, not a guess.
  for (const char* bad : {R"({"x":[1,2)", R"({"x":"\q","fun":1})", R"({"x":tru,"fun":1})", R"({"x":{"a" 1}})",
                          R"({"fun":1} x)", R"(["fun"])", R"("fun")"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(ParseJsonMembers(bad, kKeys), brine::JsonError);
  }
  // Depth is bounded in skipped members too.
  std::string deep = R"({"x":)" + std::string(2000, '[') + std::string(2000, ']') + "}";
  REQUIRE_THROWS_AS(ParseJsonMembers(deep, kKeys), brine::JsonError);
}

TEST_CASE("json: a long string with escapes (multi-line command output) reads back exactly", "[core]") {
  // Past the length where the parser reserves the string's room up front.
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\t\"quoted\" \\ caf\xc3\xa9\n";
  text += "\xff end";  // a byte that is not UTF-8, written as \udcff
  const Value v(text);
  const std::string json = ToJson(Value::Map({{"return", v}}));
  REQUIRE(json.size() > (1 << 16));
  REQUIRE(*ParseJson(json).Find("return") == v);
  static constexpr std::string_view kReturn[] = {"return"};
  REQUIRE(*brine::ParseJsonMembers(json, kReturn).Find("return") == v);
  REQUIRE_THROWS_AS(ParseJson(json.substr(0, json.size() - 3)), brine::JsonError);  // unterminated
}

TEST_CASE("json: WriteJsonText writes what WriteJson writes for the parsed text, at any level", "[core]") {
  using brine::JsonStyle;
  using brine::WriteJsonText;
  std::vector<Value> values = {
      ParseJson(R"({"fun":"cmd.run","arg":["uptime",{"k":[1,-2,3.5,1e+16,4.0]}],"tgt":["a","b"],"e":{},"l":[]})"),
      ParseJson(R"(["caf\u00e9","tab\there","quote\"q","back\\slash","\u001f","\u007f","\ud83d\ude00"])"),
      ParseJson(R"({"inf":9e999,"ninf":-9e999,"big":18446744073709551615,"neg":-9223372036854775808,"t":true,"n":null})"),
      Value(std::string("not utf-8: \xff\xfe, then \xc3\xa9")),
      Value::EmptyMap(),
      Value::EmptyList(),
      Value(0.1),
  };
  // Strings with escapes longer than the 64 KiB pieces a transcoded string is
  // decoded in, with multi-byte UTF-8, raw bytes, a 4-byte character and runs
  // of escapes lying across the piece boundaries at every offset around it.
  for (std::size_t shift = 65530; shift < 65542; ++shift) {
    std::string text = "\n" + std::string(shift, 'a');
    text += "\xc3\xa9\xf0\x9f\x98\x80\xff\xfe\"q\"\\";
    for (int i = 0; i < 3000; ++i) text += "line \xc3\xa9 \xe2\x82\xac\t\x01\xff\n";
    text += std::string(70000, '\x02');
    text += std::string(140000, 'b') + "\xc3\xa9";
    values.emplace_back(text);
  }
  // Texts that are not in brine's storage form: normalised as the parser and writer would.
  const std::vector<std::string> foreign = {R"( [ 1.50 , 1E2, -0.0, "\u00e9\/" ] )", R"({"b":1,"a":{"z":[],"y":"\ud800x"}})"};
  std::vector<std::string> texts;
  for (const Value& v : values) texts.push_back(ToJson(v));
  for (const std::string& f : foreign) texts.push_back(f);
  JsonStyle ascii = JsonStyle::Python(2);
  ascii.ensure_ascii = true;
  JsonStyle sorted = JsonStyle::Python(4);
  sorted.sort_keys = true;
  for (const JsonStyle& style : {JsonStyle::Python(4), JsonStyle::Python(-1), JsonStyle::Python(0), JsonStyle::Storage(), ascii, sorted}) {
    for (const std::string& text : texts) {
      if (text.find("\\ud800x") != std::string::npos) {
        REQUIRE_THROWS_AS(ParseJson(text), brine::JsonError);  // a lone surrogate is refused both ways
        std::string out;
        REQUIRE_THROWS_AS(WriteJsonText(text, style, 0, out), brine::JsonError);
        continue;
      }
      INFO(text << " indent " << style.indent);
      const Value parsed = ParseJson(text);
      std::string out;
      WriteJsonText(text, style, 0, out);
      REQUIRE(out == ToJson(parsed, style));
      if (style.indent > 0) {
        // At level 1 its inner lines are indented one step deeper, as inside a list.
        std::string nested;
        WriteJsonText(text, style, 1, nested);
        const std::string pad(static_cast<std::size_t>(style.indent), ' ');
        REQUIRE("[\n" + pad + nested + "\n]" == ToJson(Value::List({parsed}), style));
      }
    }
  }
  for (const char* bad : {"[1,", R"({"a" 1})", "tru", R"(["\q"])", "[1] x"}) {
    std::string out;
    REQUIRE_THROWS_AS(WriteJsonText(bad, JsonStyle::Python(4), 0, out), brine::JsonError);
  }
}

TEST_CASE("json: JsonMemberValues gives the first text of each asked member as it stands", "[core]") {
  static constexpr std::string_view kKeys[] = {"tgt", "fun", "user", "k\u00e9y"};
  const std::string load = R"({"fun":"a","jid":"1","tgt":[ "x", {"y":1} ],"fun":"again","k\u00e9y":null})";
  std::string_view values[4];
  brine::JsonMemberValues(load, kKeys, values);
  REQUIRE(values[0] == R"([ "x", {"y":1} ])");
  REQUIRE(values[1] == R"("a")");
  REQUIRE(values[2].empty());
  REQUIRE(values[3] == "null");  // an escaped key is decoded before it is compared
  REQUIRE_THROWS_AS(brine::JsonMemberValues("[1]", kKeys, values), brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberValues(R"({"x":[})", kKeys, values), brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberValues(R"({"fun":"a\x"})", kKeys, values), brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberValues(load, kKeys, std::span(values, 3)), std::invalid_argument);
}

TEST_CASE("json: JsonMemberLayout lays out what JsonMemberValues finds, as WriteJsonText would", "[core]") {
  using brine::JsonStyle;
  static constexpr std::string_view kKeys[] = {"tgt", "fun", "user", "k\u00e9y", "arg"};
  const std::string loads[] = {
      R"({"fun":"a","jid":"1","tgt":[ "x", {"y":1, "z":[]} ],"fun":"again","k\u00e9y":null,"arg":[1.5,NaN,"t\n\u00e9"]})",
      R"({"arg":{"b":{"c":[true,false,-0,12345678901234567890]}},"user":"caf\u00e9 \ud83d\ude00"})",
      R"({})",
      R"( { "tgt" : "w*" , "other" : [[[]]], "user":"\udcff" } )"};
  for (const std::string& load : loads) {
    std::string_view values[std::size(kKeys)];
    brine::JsonMemberValues(load, kKeys, values);
    for (const JsonStyle& style : {JsonStyle::Python(4), JsonStyle::Python(-1), JsonStyle::Python(0), JsonStyle::Storage(),
                                   JsonStyle{.ensure_ascii = true}}) {
      for (const int level : {0, 2}) {
        INFO(load << " indent " << style.indent << " level " << level);
        std::string out = "kept";
        brine::JsonSpan spans[std::size(kKeys)];
        brine::JsonMemberLayout(load, kKeys, style, level, out, spans);
        REQUIRE(out.rfind("kept", 0) == 0);
        for (std::size_t i = 0; i < std::size(kKeys); ++i) {
          if (values[i].empty()) {
            REQUIRE(spans[i].begin == std::string::npos);
            REQUIRE(spans[i].end == std::string::npos);
            continue;
          }
          std::string expected;
          brine::WriteJsonText(values[i], style, level, expected);
          REQUIRE(out.substr(spans[i].begin, spans[i].end - spans[i].begin) == expected);
        }
      }
    }
  }
  brine::JsonSpan spans[std::size(kKeys)];
  std::string out;
  REQUIRE_THROWS_AS(brine::JsonMemberLayout("[1]", kKeys, JsonStyle::Python(4), 2, out, spans), brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberLayout(R"({"fun":[1,]})", kKeys, JsonStyle::Python(4), 2, out, spans),
                    brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberLayout(R"({"x":[})", kKeys, JsonStyle::Python(4), 2, out, spans), brine::JsonError);
  REQUIRE_THROWS_AS(brine::JsonMemberLayout("{}", kKeys, JsonStyle::Python(4), 2, out, std::span(spans, 3)),
                    std::invalid_argument);
}

TEST_CASE("json: strings scan alike whichever 16- or 8-byte block or tail a special byte falls in", "[core]") {
  // The string scans test 16 bytes (SSE2), then 8 (SWAR), then single bytes:
  // a byte that ends a run must be found at every offset of each.
  using brine::JsonStyle;
  const std::string specials[] = {"\"", "\\", "\n", "\x01", "\x7f", "caf\xc3\xa9", "\xff", "\xf0\x9f\x98\x80"};
  for (std::size_t length = 0; length <= 40; ++length) {
    for (std::size_t at = 0; at <= length; ++at) {
      for (const std::string& special : specials) {
        std::string s(length, 'a');
        s.insert(at, special);
        const brine::Value v(s);
        INFO("length " << length << " at " << at << " special " << brine::ToJson(brine::Value(special)));
        for (const JsonStyle& style : {JsonStyle::Storage(), JsonStyle::Python(2), JsonStyle{.ensure_ascii = true}}) {
          const std::string text = brine::ToJson(v, JsonStyle::Storage());
          REQUIRE(brine::ParseJson(text) == v);
          std::string transcoded;
          brine::WriteJsonText(text, style, 0, transcoded);
          REQUIRE(transcoded == brine::ToJson(v, style));
          std::string_view found[1];
          static constexpr std::string_view kKey[] = {"k"};
          const std::string object = "{" + text + ":1,\"k\":" + text + "}";
          brine::JsonMemberValues(object, kKey, found);
          REQUIRE(found[0] == text);
        }
      }
    }
  }
}

TEST_CASE("json: WriteJsonString writes what WriteJson writes for the string", "[core]") {
  using brine::JsonStyle;
  for (const std::string& s : {std::string(""), std::string("plain text longer than one word"), std::string("tab\there \"q\" \\"),
                              std::string("caf\xc3\xa9 and \x7f and \xff"), std::string(40, 'x') + "\n" + std::string(9, 'y')}) {
    for (const JsonStyle& style : {JsonStyle::Storage(), JsonStyle::Python(4), JsonStyle{.ensure_ascii = true}}) {
      std::string a;
      std::string b;
      brine::WriteJsonString(s, style, a);
      brine::WriteJson(brine::Value(s), style, b);
      REQUIRE(a == b);
    }
  }
}
