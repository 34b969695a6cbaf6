// The HTTP server: libmicrohttpd in one RAII class, and nothing of
// libmicrohttpd outside src/http_server.cpp.
//
// Threads: a small fixed pool (Options::threads) polls every connection with
// epoll; there is no thread per connection, and the daemon allows
// suspend/resume, so a later event stream can park its connection at the
// cost of a socket. The handler runs on a pool thread, so whatever it shares
// must say how it is locked.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace brine::web {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // percent-decoded, without the query string
  std::map<std::string, std::string> query;    // decoded; the first of repeated names
  std::map<std::string, std::string> headers;  // names lowercased
  std::map<std::string, std::string> cookies;
  std::map<std::string, std::string> form;  // an application/x-www-form-urlencoded POST body
  bool peer_is_loopback = false;            // the TCP peer is 127.0.0.0/8 or ::1
  [[nodiscard]] std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
  [[nodiscard]] std::string Header(const std::string& lowercase_name) const {
    auto it = headers.find(lowercase_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

using Handler = std::function<Response(const Request&)>;

class HttpServer {
 public:
  struct Options {
    std::string bind = "127.0.0.1";  // an IPv4 or IPv6 address literal
    int port = 0;                    // 0: a free port the kernel picks
    unsigned threads = 2;
    unsigned max_connections = 256;
    unsigned timeout_s = 60;             // an idle connection is closed after this
    std::size_t max_body_bytes = 16384;  // a larger POST body is answered 413
  };
  // Binds and starts serving. `handler` is called on the pool's threads for
  // each complete request; an exception from it is answered 500 (its text is
  // not sent). Throws std::runtime_error when the address does not parse or
  // the port cannot be bound.
  HttpServer(const Options& options, Handler handler);
  ~HttpServer();  // stops the threads and closes every connection
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port bound (the kernel's pick when Options::port was 0).
  [[nodiscard]] int port() const { return port_; }

  struct Impl;  // defined and used only in src/http_server.cpp

 private:
  std::unique_ptr<Impl> impl_;  // keeps microhttpd.h out of this header
  int port_ = 0;
};

// Decodes %XX and '+' (as a space) of an application/x-www-form-urlencoded body.
[[nodiscard]] std::map<std::string, std::string> ParseForm(const std::string& body);

}  // namespace brine::web
