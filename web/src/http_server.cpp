#include "brine/web/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

namespace brine::web {

struct StreamBody::Parking {
  std::mutex mutex;                      // guards the rest
  MHD_Connection* connection = nullptr;  // set when served
  int fd = -1;                           // its socket, while not closed
  bool parked = false;                   // suspended, waiting for Wake
  bool woken = false;                    // Wake came since the last Read
  bool closed = false;                   // the connection is gone
};

StreamBody::StreamBody() : parking_(std::make_shared<Parking>()) {}

void StreamBody::Wake() {
  Parking& p = *parking_;
  std::lock_guard lock(p.mutex);
  p.woken = true;
  if (p.parked && !p.closed) {
    p.parked = false;
    MHD_resume_connection(p.connection);
  }
}

void StreamBody::Drop() {
  Parking& p = *parking_;
  std::lock_guard lock(p.mutex);
  if (p.closed || p.fd < 0) return;
  // The fd is still libmicrohttpd's (closed marks when it lets go of it,
  // under this lock), so this cannot reach another connection's socket.
  ::shutdown(p.fd, SHUT_RDWR);
  if (p.parked) {
    p.parked = false;
    MHD_resume_connection(p.connection);
  }
}

namespace {
struct StreamContext;
}  // namespace

struct HttpServer::Impl {
  Handler handler;
  std::size_t max_body_bytes = 0;
  MHD_Daemon* daemon = nullptr;
  std::atomic<bool> stopping{false};
  std::mutex streams_mutex;  // guards streams
  std::set<StreamContext*> streams;
};

namespace {

// One served stream, owned by its libmicrohttpd response (freed in FreeStream).
struct StreamContext {
  std::shared_ptr<StreamBody> body;
  HttpServer::Impl* impl;  // outlives every connection
};

ssize_t ReadStream(void* cls, uint64_t /*pos*/, char* buf, size_t max) {
  auto* ctx = static_cast<StreamContext*>(cls);
  StreamBody::Parking& p = ctx->body->parking();
  {
    std::lock_guard lock(p.mutex);
    if (ctx->impl->stopping.load()) return MHD_CONTENT_READER_END_OF_STREAM;
    p.woken = false;
  }
  const std::ptrdiff_t n = ctx->body->Read(buf, max);
  if (n < 0) return MHD_CONTENT_READER_END_OF_STREAM;
  if (n > 0) return n;
  std::lock_guard lock(p.mutex);
  if (ctx->impl->stopping.load()) return MHD_CONTENT_READER_END_OF_STREAM;
  if (p.woken) return 0;  // data came while Read ran: ask again
  // Parked until Wake (or the server stops): the thread serves others.
  p.parked = true;
  MHD_suspend_connection(p.connection);
  return 0;
}

void FreeStream(void* cls) {
  auto* ctx = static_cast<StreamContext*>(cls);
  {
    std::lock_guard lock(ctx->body->parking().mutex);
    ctx->body->parking().closed = true;
  }
  {
    std::lock_guard lock(ctx->impl->streams_mutex);
    ctx->impl->streams.erase(ctx);
  }
  ctx->body->Closed();
  delete ctx;
}

// One request's state between libmicrohttpd's calls (the body arrives in pieces).
struct Pending {
  std::string body;
  bool too_large = false;
  std::shared_ptr<StreamBody> stream;  // the answer, when it is a stream
};

int FromHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

MHD_Result CollectValue(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* map = static_cast<std::map<std::string, std::string>*>(cls);
  if (key != nullptr) map->emplace(key, value == nullptr ? "" : value);
  return MHD_YES;
}

MHD_Result CollectHeader(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* map = static_cast<std::map<std::string, std::string>*>(cls);
  if (key != nullptr) map->emplace(Lower(key), value == nullptr ? "" : value);
  return MHD_YES;
}

bool PeerIsLoopback(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return false;
  const sockaddr* addr = info->client_addr;
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

MHD_Result Send(MHD_Connection* connection, const Response& r, HttpServer::Impl* impl) {
  MHD_Response* response = nullptr;
  if (r.stream) {
    if (impl->stopping.load()) return MHD_NO;
    auto* ctx = new StreamContext{.body = r.stream, .impl = impl};  // freed in FreeStream
    {
      std::lock_guard lock(r.stream->parking().mutex);
      r.stream->parking().connection = connection;
      const MHD_ConnectionInfo* fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      r.stream->parking().fd = fd != nullptr ? fd->connect_fd : -1;
    }
    response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, &ReadStream, ctx, &FreeStream);
    if (response == nullptr) {
      delete ctx;
      return MHD_NO;
    }
    std::lock_guard lock(impl->streams_mutex);
    impl->streams.insert(ctx);
  } else {
    response =
        MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  }
  if (response == nullptr) return MHD_NO;
  for (const auto& [name, value] : r.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  const MHD_Result result = MHD_queue_response(connection, static_cast<unsigned>(r.status), response);
  MHD_destroy_response(response);
  return result;
}

MHD_Result Answer(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* upload_data, size_t* upload_data_size, void** state) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (*state == nullptr) {
    *state = new Pending();  // freed in Completed (libmicrohttpd owns the slot)
    return MHD_YES;
  }
  auto* pending = static_cast<Pending*>(*state);
  if (*upload_data_size != 0) {
    if (pending->body.size() + *upload_data_size > impl->max_body_bytes) {
      pending->too_large = true;
    } else {
      pending->body.append(upload_data, *upload_data_size);
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (pending->too_large) {
    return Send(connection,
                {.status = 413, .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
                 .body = "request body too large\n"},
                impl);
  }
  Request request;
  request.method = method;
  request.path = url;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, CollectValue, &request.query);
  MHD_get_connection_values(connection, MHD_HEADER_KIND, CollectHeader, &request.headers);
  MHD_get_connection_values(connection, MHD_COOKIE_KIND, CollectValue, &request.cookies);
  request.peer_is_loopback = PeerIsLoopback(connection);
  if (const MHD_ConnectionInfo* fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD)) {
    const int socket = fd->connect_fd;
    request.client_gone = [socket] {
      // An orderly close reads as 0 bytes; a pipelined request is data.
      char byte = 0;
      const ssize_t n = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    };
  }
  if (request.method == "POST" &&
      request.Header("content-type").rfind("application/x-www-form-urlencoded", 0) == 0) {
    request.form = ParseForm(pending->body);
  }
  Response response;
  try {
    response = impl->handler(request);
  } catch (const std::exception&) {
    response = {.status = 500, .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
                .body = "internal error\n"};
  }
  pending->stream = response.stream;
  return Send(connection, response, impl);
}

void Completed(void* /*cls*/, MHD_Connection* /*connection*/, void** state, MHD_RequestTerminationCode /*code*/) {
  auto* pending = static_cast<Pending*>(*state);
  if (pending != nullptr && pending->stream) {
    // Before libmicrohttpd closes the socket: Drop must not touch the fd after.
    StreamBody::Parking& p = pending->stream->parking();
    std::lock_guard lock(p.mutex);
    p.closed = true;
    p.fd = -1;
  }
  delete pending;
  *state = nullptr;
}

}  // namespace

std::map<std::string, std::string> ParseForm(const std::string& body) {
  std::map<std::string, std::string> out;
  auto decode = [](std::string_view s) {
    std::string d;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        d += ' ';
      } else if (s[i] == '%' && i + 2 < s.size() && FromHex(s[i + 1]) >= 0 && FromHex(s[i + 2]) >= 0) {
        d += static_cast<char>(FromHex(s[i + 1]) * 16 + FromHex(s[i + 2]));
        i += 2;
      } else {
        d += s[i];
      }
    }
    return d;
  };
  std::string_view rest = body;
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    out.emplace(decode(pair.substr(0, eq)), eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1)));
  }
  return out;
}

HttpServer::HttpServer(const Options& options, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->max_body_bytes = options.max_body_bytes;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, options.bind.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(options.port));
    addr_len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, options.bind.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(options.port));
    addr_len = sizeof(sockaddr_in6);
    flags |= MHD_USE_IPv6;
  } else {
    throw std::runtime_error("brine.web_bind: '" + options.bind + "' is not an IPv4 or IPv6 address");
  }
  (void)addr_len;
  impl_->daemon = MHD_start_daemon(
      flags, static_cast<uint16_t>(options.port), nullptr, nullptr, &Answer, impl_.get(),
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),
      MHD_OPTION_THREAD_POOL_SIZE, options.threads,
      MHD_OPTION_CONNECTION_LIMIT, options.max_connections,
      MHD_OPTION_CONNECTION_TIMEOUT, options.timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(64 * 1024),
      MHD_OPTION_NOTIFY_COMPLETED, &Completed, nullptr,
      MHD_OPTION_END);
  if (impl_->daemon == nullptr) {
    throw std::runtime_error("cannot listen on " + options.bind + " port " + std::to_string(options.port) +
                             " (in use, or not an address of this host)");
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(impl_->daemon, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info != nullptr ? info->port : options.port;
}

HttpServer::~HttpServer() {
  if (!impl_ || impl_->daemon == nullptr) return;
  // libmicrohttpd must not be stopped with a suspended connection: every
  // parked stream is resumed, and its next Read ends it.
  impl_->stopping.store(true);
  {
    std::lock_guard lock(impl_->streams_mutex);
    for (StreamContext* ctx : impl_->streams) {
      StreamBody::Parking& p = ctx->body->parking();
      std::lock_guard parked(p.mutex);
      if (p.parked && !p.closed) {
        p.parked = false;
        MHD_resume_connection(p.connection);
      }
    }
  }
  MHD_stop_daemon(impl_->daemon);
}

}  // namespace brine::web
