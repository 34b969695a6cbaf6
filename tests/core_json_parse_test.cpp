// Tests for brine_core's JSON reader (ParseJson against Python's json.loads)
// and its text-level tools: ParseJsonMembers, WriteJsonText, JsonMemberValues,
// JsonMemberLayout, WriteJsonString.
// Python is the oracle wherever it defines the expected output: the cases go to
// one python3 process in a batch (support/python_oracle.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"
#include "support/value_samples.h"

using namespace std::string_literals;

using brine::JsonError;
using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::test::PyEval;
using brine::test::PyStr;
using brine::test::kInf;

namespace {

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
