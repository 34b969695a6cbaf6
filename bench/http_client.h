// A minimal HTTP/1.1 client on loopback for the benches that load brine-web's
// pages (web_bench, ingest_bench --latency-web): plain GETs with a session
// cookie, the whole answer read until the server closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace brine::bench {

// A connected socket to 127.0.0.1:port; exits the bench when refused.
inline int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  return fd;
}

// Sends GET target with the brine_session cookie (none when empty).
inline void SendGet(int fd, const std::string& target, const std::string& session, bool close) {
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                          (session.empty() ? "" : "Cookie: brine_session=" + session + "\r\n") +
                          (close ? "Connection: close\r\n" : "") + "\r\n";
  (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
}

// One GET on a fresh connection: the whole answer (head and body).
inline std::string HttpGet(int port, const std::string& target, const std::string& session) {
  const int fd = ConnectLoopback(port);
  SendGet(fd, target, session, true);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// One page over HTTP (a fresh connection), in ms of wall time.
inline double HttpPageMs(int port, const std::string& target, const std::string& session) {
  const auto t0 = std::chrono::steady_clock::now();
  (void)HttpGet(port, target, session);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Logs in with the token: the session cookie's value, empty when refused.
inline std::string HttpLogin(int port, const std::string& token) {
  const std::string reply = HttpGet(port, "/login?token=" + token, "");
  const std::string key = "brine_session=";
  const std::size_t at = reply.find(key);
  if (at == std::string::npos) return "";
  const std::size_t end = reply.find_first_of(";\r", at);
  return reply.substr(at + key.size(), end - at - key.size());
}

}  // namespace brine::bench
