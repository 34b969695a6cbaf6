// The Salt event wire codec (wire/) and tag parsing.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/value.h"
#include "brine/wire/codec.h"
#include "brine/wire/tags.h"

// Counts heap bytes requested while g_count_allocations is set, so the hostile
// length tests can prove the decoder does not trust declared sizes. Kept out
// of line so g++ does not pair an inlined malloc/free with new/delete calls.
namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<std::size_t> g_allocated_bytes{0};
std::atomic<std::size_t> g_largest_allocation{0};
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
  if (g_count_allocations.load(std::memory_order_relaxed)) {
    g_allocated_bytes += size;
    std::size_t largest = g_largest_allocation.load();
    while (size > largest && !g_largest_allocation.compare_exchange_weak(largest, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Catch2 allocates with the nothrow form; it must come from the same malloc.
[[gnu::noinline]] void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using brine::Value;
using brine::ValueList;
using brine::ValueMap;
using brine::wire::DecodedEvent;
using brine::wire::DecodeFrame;
using brine::wire::DecodeOptions;
using brine::wire::EncodeFrame;
using brine::wire::Framing;
using brine::wire::ParseTag;
using brine::wire::TagInfo;
using brine::wire::Undecodable;

// Bytes from a hex dump such as "73 61 6c 74".
std::string Hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i < hex.size(); ++i) {
    if (hex[i] == ' ' || hex[i] == '\n') continue;
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
    ++i;
  }
  return out;
}

DecodedEvent Decoded(std::string_view frame, const DecodeOptions& options = {}) {
  auto result = DecodeFrame(frame, options);
  if (const auto* bad = std::get_if<Undecodable>(&result)) FAIL("undecodable: " << bad->reason);
  return std::get<DecodedEvent>(std::move(result));
}

std::string Reason(std::string_view frame, const DecodeOptions& options = {}) {
  auto result = DecodeFrame(frame, options);
  if (std::holds_alternative<DecodedEvent>(result)) FAIL("decoded, but should not have");
  return std::get<Undecodable>(result).reason;
}

// A new-style frame around a hand-built msgpack body.
std::string NewFrame(std::string_view tag, std::string_view body) {
  return std::string(tag) + "\n\n" + std::string(body);
}

// The spec 9.2 example: tag salt/auth, new-style body.
const std::string kAuthNewStyle =
    Hex("73 61 6c 74 2f 61 75 74 68 0a 0a 85 a6 72 65 73"
        "75 6c 74 c3 a3 61 63 74 a6 61 63 63 65 70 74 a2"
        "69 64 a2 6d 31 a3 70 75 62 a2 50 4b a6 5f 73 74"
        "61 6d 70 ba 32 30 32 34 2d 30 31 2d 30 31 54 31"
        "32 3a 30 30 3a 30 30 2e 31 32 33 34 35 36");

Value AuthData() {
  return Value::Map({{"result", true},
                     {"act", "accept"},
                     {"id", "m1"},
                     {"pub", "PK"},
                     {"_stamp", "2024-01-01T12:00:00.123456"}});
}

Value EveryKind() {
  return Value::Map({
      {"null", nullptr},
      {"true", true},
      {"false", false},
      {"ints", Value::List({0, 127, 128, 255, 256, 65535, 65536, -1, -32, -33, -128, -129, -32768,
                            -32769, std::numeric_limits<std::int64_t>::min(),
                            std::numeric_limits<std::int64_t>::max()})},
      {"uint_max", std::numeric_limits<std::uint64_t>::max()},
      {"uint_above_int64", std::uint64_t{1} << 63},
      {"floats", Value::List({4.0, -0.5, 1e300, 0.1, -0.0})},
      {"strings",
       Value::List({"", std::string(31, 'a'), std::string(32, 'b'), std::string(255, 'c'),
                    std::string(256, 'd'), std::string(70000, 'e'), "caf\xc3\xa9"})},
      {"empty_list", Value::EmptyList()},
      {"empty_map", Value::EmptyMap()},
      {"nested", Value::Map({{"z", Value::List({Value::Map({{"y", 1}}), Value::EmptyList()})},
                             {"a", "order kept, not sorted"}})},
      {"big_list", Value(ValueList(70000, Value(7)))},
  });
}

TEST_CASE("wire: every Value kind survives an encode/decode round trip", "[wire]") {
  const Value data = EveryKind();
  for (Framing framing : {Framing::kNew, Framing::kOld}) {
    const DecodedEvent event = Decoded(EncodeFrame("salt/test/kinds", data, framing));
    CHECK(event.tag == "salt/test/kinds");
    CHECK(event.data == data);
    CHECK_FALSE(event.trimmed);
    CHECK(event.data.Find("uint_max")->kind() == Value::Kind::kUint);
    CHECK(event.data.Find("uint_above_int64")->as_uint() == std::uint64_t{1} << 63);
    CHECK(event.data.Find("floats")->as_list()[0].kind() == Value::Kind::kFloat);
    CHECK(event.data.Find("ints")->as_list()[0].kind() == Value::Kind::kInt);
    CHECK(event.data.as_map()[0].first == "null");
    CHECK(event.data.Find("nested")->as_map()[0].first == "z");
  }
}

TEST_CASE("wire: EncodeFrame packs each kind byte for byte as msgpack-python does", "[wire]") {
  // msgpack.packb(d, use_bin_type=True / False) of the same dict, from msgpack-python 1.0.3.
  const std::string common =
      Hex("86 a1 69 dc 00 14 00 7f cc 80 cc ff cd 01 00 cd ff ff ce 00 01 00 00 ce ff ff ff ff"
          "cf 00 00 00 01 00 00 00 00 ff e0 d0 df d0 80 d1 ff 7f d1 80 00 d2 ff ff 7f ff"
          "d2 80 00 00 00 d3 ff ff ff ff 7f ff ff ff d3 80 00 00 00 00 00 00 00"
          "cf ff ff ff ff ff ff ff ff a1 66 92 cb 40 10 00 00 00 00 00 00"
          "cb 3f e0 00 00 00 00 00 00 a1 6e c0 a1 62 92 c3 c2"
          "a1 6c dc 00 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f a1 73");
  const std::string x32(32, 'x');
  ValueList ints;
  for (long long i : {0LL, 127LL, 128LL, 255LL, 256LL, 65535LL, 65536LL, 4294967295LL, 4294967296LL,
                      -1LL, -32LL, -33LL, -128LL, -129LL, -32768LL, -32769LL, -2147483648LL,
                      -2147483649LL, std::numeric_limits<long long>::min()}) {
    ints.emplace_back(i);
  }
  ints.emplace_back(std::numeric_limits<std::uint64_t>::max());
  ValueList sixteen;
  for (int i = 0; i < 16; ++i) sixteen.emplace_back(i);
  const Value data = Value::Map({{"i", Value(ints)},
                                 {"f", Value::List({4.0, 0.5})},
                                 {"n", nullptr},
                                 {"b", Value::List({true, false})},
                                 {"l", Value(sixteen)},
                                 {"s", x32}});
  const std::string new_style = NewFrame("t", common + Hex("d9 20") + x32);
  const std::string old_style =
      std::string(1, 't').append(19, '|') + common + Hex("da 00 20") + x32;
  CHECK(EncodeFrame("t", data, Framing::kNew) == new_style);
  CHECK(EncodeFrame("t", data, Framing::kOld) == old_style);
  CHECK(Decoded(new_style).data == data);
  CHECK(Decoded(old_style).data == data);
}

TEST_CASE("wire: non-minimal int forms and float32 decode to their values", "[wire]") {
  const std::string frame =
      NewFrame("t", Hex("87 a1 61 cd 00 01   a1 62 d3 00 00 00 00 00 00 00 05   a1 63 d0 7f"
                        "   a1 64 cf 00 00 00 00 00 00 00 09   a1 65 ca 3f c0 00 00"
                        "   a1 66 ca 3d cc cc cd   a1 67 dc 00 01 d1 ff fe"));
  const DecodedEvent event = Decoded(frame);
  CHECK(event.data == Value::Map({{"a", 1},
                                  {"b", 5},
                                  {"c", 127},
                                  {"d", 9},
                                  {"e", 1.5},
                                  {"f", static_cast<double>(0.1f)},
                                  {"g", Value::List({-2})}}));
  CHECK(event.data.Find("d")->kind() == Value::Kind::kInt);
  CHECK(event.data.Find("e")->kind() == Value::Kind::kFloat);
}

TEST_CASE("wire: the spec 9.2 salt/auth example decodes as a new-style frame", "[wire]") {
  const DecodedEvent event = Decoded(kAuthNewStyle);
  CHECK(event.tag == "salt/auth");
  CHECK(event.framing == Framing::kNew);
  CHECK(event.data == AuthData());
  CHECK(EncodeFrame("salt/auth", AuthData(), Framing::kNew) == kAuthNewStyle);
}

TEST_CASE("wire: the spec 9.2 salt/auth example decodes as an old-style frame", "[wire]") {
  // The spec's old-style dump: the tag padded with '|' to 20 bytes, then the same body.
  const std::string old_style = Hex("73 61 6c 74 2f 61 75 74 68 7c 7c 7c 7c 7c 7c 7c"
                                    "7c 7c 7c 7c") +
                                kAuthNewStyle.substr(11);
  REQUIRE(old_style.substr(16, 8) == Hex("7c 7c 7c 7c 85 a6 72 65"));
  const DecodedEvent event = Decoded(old_style);
  CHECK(event.tag == "salt/auth");
  CHECK(event.framing == Framing::kOld);
  CHECK(event.data == AuthData());
  CHECK(EncodeFrame("salt/auth", AuthData(), Framing::kOld) == old_style);
}

TEST_CASE("wire: new-style frames with short tags are not misread by byte 20", "[wire]") {
  SECTION("the spec's salt/auth frame has byte 20 >= 0x80") {
    REQUIRE(static_cast<unsigned char>(kAuthNewStyle[20]) >= 0x80);
    CHECK(Decoded(kAuthNewStyle).tag == "salt/auth");
  }
  SECTION("byte 20 is a map header and bytes 20.. are exactly one map") {
    // Body {"k": "abc", "x": {"y": 1}}: its byte 9 (frame byte 20) starts {"y": 1}.
    const std::string frame = NewFrame("salt/auth", Hex("82 a1 6b a3 61 62 63 a1 78 81 a1 79 01"));
    REQUIRE(static_cast<unsigned char>(frame[20]) == 0x81);
    const DecodedEvent event = Decoded(frame);
    CHECK(event.tag == "salt/auth");
    CHECK(event.framing == Framing::kNew);
    CHECK(event.data == Value::Map({{"k", "abc"}, {"x", Value::Map({{"y", 1}})}}));
  }
  SECTION("an 18-byte tag puts the whole body at byte 20") {
    const std::string tag = "salt/minion/m1/abc";
    REQUIRE(tag.size() == 18);
    const std::string frame = EncodeFrame(tag, AuthData(), Framing::kNew);
    REQUIRE(static_cast<unsigned char>(frame[20]) == 0x85);
    const DecodedEvent event = Decoded(frame);
    CHECK(event.tag == tag);
    CHECK(event.framing == Framing::kNew);
    CHECK(event.data == AuthData());
  }
}

TEST_CASE("wire: tags of 19, 20 and 21 bytes round-trip in both framings", "[wire]") {
  const Value data = Value::Map({{"n", 1}});
  for (std::size_t size : {19u, 20u, 21u}) {
    const std::string tag = "salt/" + std::string(size - 5, 'x');
    REQUIRE(tag.size() == size);
    const std::string new_style = EncodeFrame(tag, data, Framing::kNew);
    CHECK(new_style.substr(0, size + 2) == tag + "\n\n");
    const DecodedEvent from_new = Decoded(new_style);
    CHECK(from_new.tag == tag);
    CHECK(from_new.framing == Framing::kNew);
    CHECK(from_new.data == data);

    const std::string old_style = EncodeFrame(tag, data, Framing::kOld);
    const DecodedEvent from_old = Decoded(old_style);
    CHECK(from_old.tag == tag);
    CHECK(from_old.data == data);
    if (size <= 20) {
      CHECK(old_style.substr(0, 20) == tag + std::string(20 - size, '|'));
      CHECK(old_style[20] == '\x81');
      CHECK(from_old.framing == Framing::kOld);
    } else {
      CHECK(old_style == new_style);
      CHECK(from_old.framing == Framing::kNew);
    }
  }
}

TEST_CASE("wire: every fixture event re-encoded as Salt 2014 did decodes back", "[wire]") {
  std::ifstream in(BRINE_FIXTURES_DIR "/salt-2014-master-events.jsonl");
  REQUIRE(in);
  int lines = 0;
  int old_style = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++lines;
    const Value event = brine::ParseJson(line);
    const std::string& tag = *event.FindString("tag");
    const Value& data = *event.Find("data");
    const std::string frame = EncodeFrame(tag, data, Framing::kOld);
    const DecodedEvent decoded = Decoded(frame);
    CHECK(decoded.tag == tag);
    CHECK(decoded.data == data);
    CHECK_FALSE(decoded.trimmed);
    if (tag.size() <= 20) {
      ++old_style;
      CHECK(decoded.framing == Framing::kOld);
      CHECK(frame.find("\n\n") == std::string::npos);
    } else {
      CHECK(decoded.framing == Framing::kNew);
    }
  }
  CHECK(lines == 15);
  CHECK(old_style == 9);  // 6 bare-jid tags and 3 new_job
}

TEST_CASE("wire: old-style encoding packs strings without str8, as Salt 2014 did", "[wire]") {
  const Value data = Value::Map({{"s", std::string(40, 's')}});
  const std::string old_style = EncodeFrame("new_job", data, Framing::kOld);
  const std::string new_style = EncodeFrame("new_job", data, Framing::kNew);
  CHECK(old_style.find(Hex("da 00 28")) != std::string::npos);
  CHECK(new_style.find(Hex("d9 28")) != std::string::npos);
  CHECK(Decoded(old_style).data == data);
  CHECK(Decoded(new_style).data == data);
}

TEST_CASE("wire: bin data decodes to a string of its raw bytes", "[wire]") {
  const std::string frame = NewFrame("t", Hex("83 a2 62 38 c4 03 00 ff 41"
                                              "   a3 62 31 36 c5 00 01 42"
                                              "   a3 62 33 32 c6 00 00 00 00"));
  const DecodedEvent event = Decoded(frame);
  CHECK(event.data ==
        Value::Map({{"b8", std::string("\0\xff\x41", 3)}, {"b16", "B"}, {"b32", ""}}));
}

TEST_CASE("wire: invalid UTF-8 in data is kept and JSON-encoded as udcXX escapes", "[wire]") {
  const std::string frame = NewFrame("t", Hex("81 a1 73 a3 ff 41 c3"));
  const DecodedEvent event = Decoded(frame);
  CHECK(*event.data.FindString("s") == "\xff\x41\xc3");
  CHECK(brine::ToJson(event.data) == R"({"s":"\udcffA\udcc3"})");
}

TEST_CASE("wire: ext 78 decodes as a Salt datetime string and other ext types as base64",
          "[wire]") {
  const std::string stamp = "20240101T12:00:00.123456";
  const std::string frame =
      NewFrame("t", Hex("84 a1 64 c7 18 4e") + stamp +
                        Hex("   a1 65 d6 05 01 02 03 04"        // fixext 4, type 5
                            "   a1 66 c7 05 ff 68 65 6c 6c 6f"  // ext 8, type -1, "hello"
                            "   a1 67 d4 80 00"));              // fixext 1, type -128
  const DecodedEvent event = Decoded(frame);
  CHECK(event.data == Value::Map({{"d", stamp},
                                  {"e", Value::Map({{"__ext__", 5}, {"data", "AQIDBA=="}})},
                                  {"f", Value::Map({{"__ext__", -1}, {"data", "aGVsbG8="}})},
                                  {"g", Value::Map({{"__ext__", -128}, {"data", "AA=="}})}}));
}

TEST_CASE("wire: non-string map keys become Python's str() of the key", "[wire]") {
  const std::string frame =
      NewFrame("t", Hex("8a 01 a1 61"                             // 1
                        "   fb a1 62"                             // -5
                        "   cf ff ff ff ff ff ff ff ff a1 63"     // 2^64 - 1
                        "   cb 3f f8 00 00 00 00 00 00 a1 64"     // 1.5
                        "   c3 a1 65 c2 a1 66 c0 a1 67"           // True, False, None
                        "   c4 02 ff 00 a1 68"                    // bin key
                        "   d7 4e 32 30 32 34 30 31 30 31 a1 69"  // ext 78 key
                        "   92 01 a1 78 a1 6a"));                 // [1, "x"]
  const DecodedEvent event = Decoded(frame);
  std::vector<std::string> keys;
  for (const auto& entry : event.data.as_map()) keys.push_back(entry.first);
  CHECK(keys == std::vector<std::string>{"1", "-5", "18446744073709551615", "1.5", "True", "False",
                                         "None", std::string("\xff\0", 2), "20240101",
                                         R"([1,"x"])"});
  CHECK(*event.data.FindString("None") == "g");
}

TEST_CASE("wire: a truncated body is undecodable", "[wire]") {
  CHECK(Reason(NewFrame("t", Hex("82 a1 61 01"))) == "truncated msgpack");
  CHECK(Reason(NewFrame("t", Hex("81 a1 61 a5 61 62"))) == "truncated msgpack");
  CHECK(Reason(NewFrame("t", Hex("81 a1 61 cb 00 00"))) == "truncated msgpack");
  CHECK(Reason(kAuthNewStyle.substr(0, kAuthNewStyle.size() - 1)) == "truncated msgpack");
  CHECK(Reason(NewFrame("t", "")) == "no data after the tag");
}

TEST_CASE("wire: a truncated old-style frame says why it is not old style", "[wire]") {
  const std::string old_style = EncodeFrame("salt/auth", AuthData(), Framing::kOld);
  CHECK(Reason(old_style.substr(0, old_style.size() - 3)) ==
        "no tag terminator; as an old-style frame: truncated msgpack");
}

TEST_CASE("wire: a frame without a tag terminator is undecodable", "[wire]") {
  CHECK(Reason("salt/auth") == "no tag terminator");
  CHECK(Reason("salt/auth\n\x80") == "no tag terminator");
}

TEST_CASE("wire: an empty tag is undecodable", "[wire]") {
  CHECK(Reason(NewFrame("", Hex("80"))) == "empty tag");
  CHECK(Reason(std::string(20, '|') + Hex("80")) == "empty tag");  // old style, all padding
}

TEST_CASE("wire: data that is not a map is undecodable", "[wire]") {
  CHECK(Reason(NewFrame("t", Hex("92 01 02"))) == "data is not a map (got array)");
  CHECK(Reason(NewFrame("t", Hex("a1 61"))) == "data is not a map (got str)");
  CHECK(Reason(NewFrame("t", Hex("c0"))) == "data is not a map (got nil)");
  CHECK(Reason(NewFrame("t", Hex("2a"))) == "data is not a map (got int)");
}

TEST_CASE("wire: a tag that is not valid UTF-8 is undecodable", "[wire]") {
  CHECK(Reason(NewFrame("salt/\xff\xfe", Hex("80"))) == "tag is not valid UTF-8");
  CHECK(Reason(NewFrame("salt/\xed\xa0\x80", Hex("80"))) == "tag is not valid UTF-8");
  CHECK(Reason("salt/\xc3" + std::string(14, '|') + Hex("80")) == "tag is not valid UTF-8");
}

TEST_CASE("wire: a tag containing NUL is undecodable", "[wire]") {
  CHECK(Reason(NewFrame(std::string("salt\0auth", 9), Hex("80"))) == "tag contains NUL");
  CHECK(Reason(std::string("salt\0auth", 9) + std::string(11, '|') + Hex("80")) ==
        "tag contains NUL");
}

TEST_CASE("wire: nesting is limited to 1000 levels, even 10,000 deep", "[wire]") {
  // The body map is level 1, so it can hold 999 nested arrays but not 1000.
  const auto nested = [](int arrays) {
    return NewFrame(
        "t", Hex("81 a1 61") + std::string(static_cast<std::size_t>(arrays), '\x91') + Hex("c0"));
  };
  CHECK(Decoded(nested(999)).data.Find("a")->is_list());
  CHECK(Reason(nested(1000)) == "msgpack nesting deeper than 1000 levels");
  CHECK(Reason(nested(10000)) == "msgpack nesting deeper than 1000 levels");
  const std::string deep_maps = NewFrame("t", [] {
    std::string body;
    for (int i = 0; i < 10000; ++i) body += Hex("81 a1 6b");
    return body + Hex("c0");
  }());
  CHECK(Reason(deep_maps) == "msgpack nesting deeper than 1000 levels");
}

TEST_CASE("wire: huge declared lengths in a tiny frame fail without allocating", "[wire]") {
  const std::vector<std::string> frames = {
      NewFrame("t", Hex("df ff ff ff ff")) + "xx",          // map32 of 2^32 - 1 entries
      NewFrame("t", Hex("81 a1 61 dd ff ff ff ff 01")),     // array32
      NewFrame("t", Hex("81 a1 61 db ff ff ff ff 61")),     // str32
      NewFrame("t", Hex("81 a1 61 c6 ff ff ff ff 61")),     // bin32
      NewFrame("t", Hex("81 a1 61 c9 ff ff ff ff 05 61")),  // ext32
      NewFrame("t", Hex("81 db ff ff ff ff 61 01")),        // str32 key
  };
  REQUIRE(frames[0].size() == 10);
  for (const std::string& frame : frames) {
    g_largest_allocation = 0;
    g_count_allocations = true;
    auto result = DecodeFrame(frame);
    g_count_allocations = false;
    REQUIRE(std::holds_alternative<Undecodable>(result));
    CHECK(std::get<Undecodable>(result).reason == "truncated msgpack");
    CHECK(g_largest_allocation.load() < 256);
  }
}

TEST_CASE("wire: nested containers that all declare large counts stay within the frame's budget",
          "[wire]") {
  // 1000 levels of array32 each claiming 4096 elements, then the frame ends:
  // every level could reserve 4096 Values if declared counts were trusted.
  std::string body = Hex("81 a1 61");
  for (int i = 0; i < 999; ++i) body += Hex("dd 00 00 10 00");
  body += std::string(4096, '\xc0');
  const std::string frame = NewFrame("t", body);
  g_allocated_bytes = 0;
  g_count_allocations = true;
  const std::string reason = Reason(frame);
  g_count_allocations = false;
  CHECK(reason == "truncated msgpack");
  CHECK(g_allocated_bytes.load() < 128 * frame.size());
}

TEST_CASE("wire: maps keyed by maps 40 levels deep fail fast instead of doubling their key text each level",
          "[wire]") {
  // Found by fuzz/fuzz_frame: JSON escapes the quotes of a key inside a key, so
  // the text of each level's key was twice the one below it; a 300-byte frame
  // took 49 s and 400 MB. Innermost map {"k": nil}, each level keyed by the
  // one inside it.
  std::string body(40, '\x81');
  body += Hex("a1 6b c0") + std::string(39, '\xc0');
  const std::string frame = NewFrame("t", body);
  g_allocated_bytes = 0;
  g_count_allocations = true;
  const std::string reason = Reason(frame);
  g_count_allocations = false;
  CHECK(reason == "map keys that are lists or maps are too long as text");
  CHECK(g_allocated_bytes.load() < 1024 * frame.size());
  // A few levels are still read, as JSON text of the inner key.
  std::string shallow(2, '\x81');
  shallow += Hex("a1 6b c0 c0");
  const auto decoded = std::get<DecodedEvent>(DecodeFrame(NewFrame("t", shallow)));
  CHECK(brine::ToJson(decoded.data) == R"({"{\"k\":null}":null})");
}

TEST_CASE("wire: bytes after the msgpack map are undecodable", "[wire]") {
  CHECK(Reason(NewFrame("t", Hex("80 01"))) == "trailing bytes after msgpack data");
  CHECK(Reason(kAuthNewStyle + "x") == "trailing bytes after msgpack data");
}

TEST_CASE("wire: the never-used byte 0xc1 is undecodable", "[wire]") {
  CHECK(Reason(NewFrame("t", Hex("81 a1 61 c1"))) == "invalid msgpack byte 0xc1");
}

TEST_CASE("wire: a frame over max_frame_bytes is refused before parsing", "[wire]") {
  const DecodeOptions options{.max_frame_bytes = kAuthNewStyle.size() - 1};
  CHECK(Reason(kAuthNewStyle, options) == "frame of 78 bytes exceeds max_frame_bytes 77");
  CHECK(Decoded(kAuthNewStyle, DecodeOptions{.max_frame_bytes = kAuthNewStyle.size()}).tag ==
        "salt/auth");
  CHECK(DecodeOptions{}.max_frame_bytes == std::size_t{64} << 20);
}

TEST_CASE("wire: a VALUE_TRIMMED string anywhere in the data marks the event trimmed", "[wire]") {
  const Value trimmed = Value::Map(
      {{"return", Value::Map({{"big", Value::List({1, "VALUE_TRIMMED"})}})}, {"id", "m1"}});
  for (Framing framing : {Framing::kNew, Framing::kOld}) {
    const DecodedEvent event = Decoded(EncodeFrame("salt/job/1/ret/m1", trimmed, framing));
    CHECK(event.trimmed);
    CHECK(event.data == trimmed);
  }
  CHECK_FALSE(
      Decoded(EncodeFrame("t", Value::Map({{"VALUE_TRIMMED", "VALUE_TRIMMED!"}}), Framing::kNew))
          .trimmed);
}

TEST_CASE("wire: EncodeFrame refuses what DecodeFrame could not give back", "[wire]") {
  const Value data = Value::Map({{"a", 1}});
  CHECK_THROWS_AS(EncodeFrame("", data, Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("t", Value::List({1}), Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame(std::string("a\0b", 3), data, Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("bad\xff", data, Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("a\n\nb", data, Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("a\n", data, Framing::kNew), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("pipe|", data, Framing::kOld), std::invalid_argument);
  CHECK_THROWS_AS(EncodeFrame("a\nb", data, Framing::kOld), std::invalid_argument);
  CHECK(Decoded(EncodeFrame("pipe|", data, Framing::kNew)).tag == "pipe|");

  Value deep = Value::Map({{"a", nullptr}});
  Value* leaf = &deep;
  for (int i = 0; i < 1000; ++i) {
    Value& inner = *leaf->Find("a");
    inner = Value::Map({{"a", nullptr}});
    leaf = &inner;
  }
  CHECK_THROWS_AS(EncodeFrame("t", deep, Framing::kNew), std::invalid_argument);
}

TEST_CASE("wire: a non-ASCII tag whose byte 20 looks like a map header is read as new style", "[wire]") {
  // Issue 14: 'a'*19 + "\u00c2x": byte 20 is the 0x82 of U+00C2 (a fixmap of 2).
  const std::string short_tag = std::string(19, 'a') + "\xc3\x82x";
  const std::string plain = NewFrame(short_tag, Hex("81 a1 6b 01"));
  CHECK(Decoded(plain).tag == short_tag);
  CHECK(Decoded(plain).data == Value::Map({{"k", 1}}));
  // Byte 20 is the 0x81 of U+0101 (a fixmap of 1), byte 21 '0' its key, byte 22
  // the 0xc4 of U+0100 (bin8) whose 0x80 length swallows the rest of the frame:
  // bytes 20.. read as one map, but the first 20 bytes end inside a character.
  const std::string tag = std::string(19, 'a') + "\xc4\x81\x30\xc4\x80" + std::string(125, 'x');
  const std::string frame = NewFrame(tag, Hex("80"));
  REQUIRE(frame.size() == 24 + 128);  // 24 bytes up to the bin8 payload
  CHECK(Decoded(frame).tag == tag);
  CHECK(Decoded(EncodeFrame(tag, Value::EmptyMap(), Framing::kNew)).tag == tag);
  const std::string longer = tag + "x";
  CHECK(Decoded(EncodeFrame(longer, Value::EmptyMap(), Framing::kNew)).tag == longer);
}

TEST_CASE("wire: job tags parse into kind, jid and minion", "[wire]") {
  using Kind = TagInfo::Kind;
  const std::string jid = "20140417135823133764";
  const auto check = [](std::string_view tag, Kind kind, std::string_view want_jid,
                        std::string_view minion) {
    INFO(tag);
    const TagInfo info = ParseTag(tag);
    CHECK(info.kind == kind);
    CHECK(info.jid == want_jid);
    CHECK(info.minion == minion);
  };
  check("salt/job/" + jid + "/new", Kind::kNew, jid, "");
  check("salt/job/" + jid + "/ret/web1", Kind::kReturn, jid, "web1");
  check("salt/job/" + jid + "/ret/a/b/c", Kind::kReturn, jid, "a/b/c");
  check("salt/job/" + jid + "/ret/", Kind::kJobOther, jid, "");
  check("salt/job/" + jid + "/prog/web1/0", Kind::kJobOther, jid, "");
  check("salt/job/" + jid + "/new/x", Kind::kJobOther, jid, "");
  check("salt/job/" + jid + "/", Kind::kJobOther, jid, "");
  check("salt/job/" + jid, Kind::kOther, "", "");
  check("salt/job//new", Kind::kOther, "", "");
  check(jid, Kind::kBareJid, jid, "");
  check(jid + "_4242", Kind::kBareJid, jid + "_4242", "");
  check("new_job", Kind::kLegacyNewJob, "", "");
  check("salt/run/" + jid + "/new", Kind::kRunNew, jid, "");
  check("salt/run/" + jid + "/ret", Kind::kRunReturn, jid, "");
  check("salt/run/" + jid + "/progress", Kind::kOther, "", "");
  check("salt/auth", Kind::kOther, "", "");
  check("2014041713582313376", Kind::kOther, "", "");
  check("", Kind::kOther, "", "");
}

}  // namespace

TEST_CASE("wire: a map key given twice keeps its first place and its last value, as msgpack-python does", "[wire]") {
  // {"a": 1, "b": 2, "a": 3} -> {"a": 3, "b": 2}
  const DecodedEvent small = Decoded(NewFrame("t/dup", Hex("83 a1 61 01 a1 62 02 a1 61 03")));
  CHECK(small.data == Value::Map({{"a", 3}, {"b", 2}}));
  // A big map (hashed, not scanned) and a key given three times.
  std::string body = Hex("de 00 14");
  ValueMap want;
  for (int i = 0; i < 18; ++i) {
    body += Hex("a2") + "k" + static_cast<char>('a' + i) + Hex("01");
    want.emplace_back(std::string("k") + static_cast<char>('a' + i), 1);
  }
  body += Hex("a2") + "kb" + Hex("02") + Hex("a2") + "kb" + Hex("03");
  want[1].second = 3;
  CHECK(Decoded(NewFrame("t/dup", body)).data == Value(std::move(want)));
  // Non-string keys that print alike are the same key to Python too: 1 and "1".
  CHECK(Decoded(NewFrame("t/dup", Hex("82 01 a1 78 a1 31 a1 79"))).data == Value::Map({{"1", "y"}}));
}

TEST_CASE("wire: a frame whose decoded tree would pass its budget is refused, not decoded", "[wire]") {
  // 1M nils: a 1 MB frame that decodes to ~sizeof(Value) per byte.
  std::string body = Hex("81 a1 6e dd 00 0f 42 40") + std::string(1000000, '\xc0');
  const std::string frame = NewFrame("t/nils", body);
  const auto tight = DecodeFrame(frame, {.decoded_bytes_floor = 0, .decoded_bytes_per_byte = 16});
  REQUIRE(std::holds_alternative<Undecodable>(tight));
  CHECK(std::get<Undecodable>(tight).reason == "decoded data over its budget (DecodeOptions)");
  // The default budget (64 MiB + 16 x the frame) lets it through.
  CHECK(std::get<DecodedEvent>(DecodeFrame(frame)).data.Find("n")->as_list().size() == 1000000);
  CHECK(brine::wire::DecodedBudget(1000, {}) == (std::size_t{64} << 20) + 16000);
}
