// Tests for brine_core's time formats and jids, against Python's datetime and
// int() and SQLite's strftime.
// Python is the oracle wherever it defines the expected output: the cases go to
// one python3 process in a batch (support/python_oracle.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"

using namespace std::string_literals;

using brine::Micros;
using brine::test::PyEval;
using brine::test::PyStr;
using brine::test::Sqlite;

namespace {

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

}  // namespace

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
