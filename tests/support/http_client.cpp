#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>

namespace brine::test {

// One HTTP/1.1 request over a fresh TCP connection to 127.0.0.1:port.
HttpReply Http(int port, const std::string& method, const std::string& target,
               std::vector<std::pair<std::string, std::string>> headers, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  bool has_host = false;
  for (const auto& h : headers) has_host |= h.first == "Host";
  std::string request = method + " " + target + " HTTP/1.1\r\n";
  if (!has_host) request += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") {
    request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n";
  }
  request += "Connection: close\r\n\r\n" + body;
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::string raw;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    raw.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  HttpReply reply;
  const std::size_t head_end = raw.find("\r\n\r\n");
  INFO("raw reply: " << raw);
  REQUIRE(head_end != std::string::npos);
  std::string head = raw.substr(0, head_end);
  reply.body = raw.substr(head_end + 4);
  std::size_t line_end = head.find("\r\n");
  reply.status = std::stoi(head.substr(9, 3));
  while (line_end != std::string::npos) {
    const std::size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(
        line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
    const std::size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers.emplace(name, line.substr(colon + 2));
    line_end = next;
  }
  // Chunked bodies (libmicrohttpd uses them for no response here; all have a length).
  return reply;
}

}  // namespace brine::test
