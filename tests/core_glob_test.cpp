// Tests for brine_core's glob matcher (FnMatch), against Python's
// fnmatch.fnmatchcase.
// Python is the oracle wherever it defines the expected output: the cases go to
// one python3 process in a batch (support/python_oracle.h).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "brine/core/glob.h"
#include "support/python_oracle.h"

using brine::FnMatch;
using brine::test::PyEval;
using brine::test::PyStr;

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

TEST_CASE("glob: '/' is not special, matching is case-sensitive and an unclosed bracket is literal", "[core]") {
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

TEST_CASE("glob: IsLiteralGlob is true only without a star, a question mark or a bracket", "[core]") {
  CHECK(brine::IsLiteralGlob(""));
  CHECK(brine::IsLiteralGlob("minion1"));
  CHECK(brine::IsLiteralGlob("salt/job/1/ret/m1"));
  CHECK(brine::IsLiteralGlob("a]b!c-d\\"));
  CHECK_FALSE(brine::IsLiteralGlob("a*"));
  CHECK_FALSE(brine::IsLiteralGlob("a?"));
  CHECK_FALSE(brine::IsLiteralGlob("a["));
  CHECK_FALSE(brine::IsLiteralGlob("[abc]"));
}
