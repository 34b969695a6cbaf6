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
#include <cstdint>
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
  // True once the client has closed its end (for a long answer to stop
  // early); empty when the caller cannot tell (tests that call App directly).
  std::function<bool()> client_gone;
  [[nodiscard]] std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
  [[nodiscard]] std::string Header(const std::string& lowercase_name) const {
    auto it = headers.find(lowercase_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// An answer written over time (Server-Sent Events). The server asks Read
// for bytes whenever the socket can take more; when Read has none, the
// connection is parked (suspended: no thread, no polling) until Wake. So an
// open stream costs a socket and this object, never a thread.
class StreamBody {
 public:
  virtual ~StreamBody() = default;
  // Copies up to `max` ready bytes into `out` and returns how many; 0 when
  // none are ready (the connection parks until Wake); -1 ends the answer.
  // Called on a pool thread, never twice at once for one body.
  virtual std::ptrdiff_t Read(char* out, std::size_t max) = 0;
  // Called once when the connection is gone (the client left, the server
  // stops, or the connection timed out writing): the body is never Read again.
  virtual void Closed() {}
  // Makes the server call Read again soon; safe from any thread, any time,
  // also before the body is served and after it was closed.
  void Wake();
  // Ends the answer now, even while the client reads nothing (its socket is
  // shut down, so the server's pending write fails and the connection
  // closes); Closed follows. Safe from any thread, any time.
  void Drop();

  // For src/http_server.cpp: connects the body to its parked connection.
  struct Parking;
  [[nodiscard]] Parking& parking() { return *parking_; }

 protected:
  StreamBody();

 private:
  std::shared_ptr<Parking> parking_;
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // When set, the answer is this stream instead of `body`.
  std::shared_ptr<StreamBody> stream;
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
