// An HTTP/1.1 client for the web tests: one request over a fresh TCP
// connection to 127.0.0.1, the whole answer read until the server closes.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace brine::test {

struct HttpReply {
  int status = 0;
  std::multimap<std::string, std::string> headers;  // names lowercased
  std::string body;
  [[nodiscard]] std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  [[nodiscard]] std::string Cookie(const std::string& name) const {
    for (auto [it, end] = headers.equal_range("set-cookie"); it != end; ++it) {
      if (it->second.starts_with(name + "=")) {
        return it->second.substr(name.size() + 1, it->second.find(';') - name.size() - 1);
      }
    }
    return "";
  }
};

// One HTTP/1.1 request over a fresh TCP connection to 127.0.0.1:port.
HttpReply Http(int port, const std::string& method, const std::string& target,
               std::vector<std::pair<std::string, std::string>> headers = {},
               const std::string& body = "");

}  // namespace brine::test
