// A client of brine-master's acknowledged socket speaking its grammar
// (master/src/cache_socket.h) as the Salt plug-in does, for the tests that
// play the plug-in (master_ack_test.cpp, attach_test.cpp). Header-only: it
// REQUIREs as it goes.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "brine/core/time.h"

namespace brine::test {

struct AckReply {
  std::uint64_t id = 0;
  int status = -1;
  std::string reason;
};

inline std::string AckHeader(std::uint64_t id, std::int64_t sent_us) {
  std::string h = "BRQ1";
  for (int i = 7; i >= 0; --i) h.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  for (int i = 7; i >= 0; --i) h.push_back(static_cast<char>((static_cast<std::uint64_t>(sent_us) >> (8 * i)) & 0xff));
  return h;
}

inline std::int64_t NowUs() { return brine::ToUnixMicros(brine::SystemClock().Now()); }

// A connection to brine-master's acknowledged socket, speaking its grammar
// (cache_socket.h) as the Salt plug-in does.
class AckClient {
 public:
  explicit AckClient(const std::filesystem::path& socket_path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = socket_path.string();
    REQUIRE(p.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    SetTimeout();
  }
  // To 127.0.0.1:port (ipc_mode: tcp).
  explicit AckClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    SetTimeout();
  }
  ~AckClient() { ::close(fd_); }
  AckClient(const AckClient&) = delete;
  AckClient& operator=(const AckClient&) = delete;

  // Sends one request: `body` as is, after its length.
  void SendBody(const std::string& body) { SendRaw(U32(body.size()) + body); }
  void SendRaw(const std::string& bytes) { REQUIRE(TrySendRaw(bytes)); }
  bool TrySendRaw(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
  static std::string Message(const std::string& header, const std::vector<std::string>& frames) {
    std::string body = header;
    for (const std::string& f : frames) body += U32(f.size()) + f;
    return U32(body.size()) + body;
  }
  void Send(const std::string& header, const std::vector<std::string>& frames) { SendRaw(Message(header, frames)); }
  // The next reply, or status -1 when none came within 10 s or the connection closed.
  AckReply Receive() {
    AckReply r;
    std::string length;
    if (!ReadExact(4, length)) return r;
    std::size_t n = 0;
    for (const char c : length) n = (n << 8) | static_cast<unsigned char>(c);
    std::string head;
    if (!ReadExact(n, head)) return r;
    REQUIRE(head.size() >= 13);
    REQUIRE(head.substr(0, 4) == "BRA1");
    for (int i = 0; i < 8; ++i) r.id = (r.id << 8) | static_cast<unsigned char>(head[4 + i]);
    r.status = static_cast<unsigned char>(head[12]);
    r.reason = head.substr(13);
    return r;
  }
  AckReply RequestReply(const std::string& header, const std::vector<std::string>& frames) {
    Send(header, frames);
    return Receive();
  }

 private:
  void SetTimeout() {
    const timeval ten_seconds{.tv_sec = 10, .tv_usec = 0};
    (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof ten_seconds);
  }
  static std::string U32(std::size_t v) {
    std::string out;
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return out;
  }
  bool ReadExact(std::size_t n, std::string& out) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
      const ssize_t k = ::recv(fd_, out.data() + got, n - got, 0);
      if (k <= 0) return false;
      got += static_cast<std::size_t>(k);
    }
    return true;
  }
  int fd_;
};

}  // namespace brine::test
