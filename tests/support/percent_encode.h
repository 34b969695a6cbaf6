// Percent-encoding for the tests and benches: a query value, or a URI's host
// path. Header-only, so a bench that compiles one support file needs no other.
#pragma once

#include <cctype>
#include <string>

namespace brine::test {

// Every byte but A-Z a-z 0-9 - . _ ~ (RFC 3986's unreserved) as %XX. The
// tests' own, not web/'s UrlEncode: a test that checks the links a page
// writes must not build what it expects with the code under test.
[[nodiscard]] inline std::string PercentEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace brine::test
