// Tests for brine_core's Value and its UTF-8 helpers.
// Python is the oracle wherever it defines the expected output: the cases go to
// one python3 process in a batch (support/python_oracle.h).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/utf8.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"
#include "support/value_samples.h"

using namespace std::string_literals;

using brine::JsonStyle;
using brine::ParseJson;
using brine::ToJson;
using brine::Value;
using brine::test::HexEncode;
using brine::test::PyEval;
using brine::test::PyBytes;
using brine::test::PyExpr;
using brine::test::kNaN;
using brine::test::kI64Max;
using brine::test::kU64Max;
using brine::test::ValidSamples;
using brine::test::InvalidByteSamples;

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
