#include "brine/master/cache_socket.h"

#include <cstring>

#include "brine/master/archiver.h"

namespace brine::master {
namespace {

constexpr std::string_view kRequestMagic = "BRQ1";
constexpr std::string_view kReplyMagic = "BRA1";
constexpr std::size_t kHeaderBytes = 20;

std::uint64_t ReadU64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void WriteU64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

CacheSocket::CacheSocket(zmq::context_t& ctx, CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox,
                         zmq::socket_t& pub, const Clock& clock, std::function<bool()> store_failing)
    : options_(std::move(options)),
      queue_(queue),
      mailbox_(mailbox),
      pub_(pub),
      clock_(clock),
      store_failing_(std::move(store_failing)),
      socket_(ctx, zmq::socket_type::router) {
  // Replies still in flight at shutdown get a moment to leave; a caller that
  // misses one spools, and job-cache writes are idempotent.
  socket_.set(zmq::sockopt::linger, 500);
  socket_.bind(options_.endpoint);
}

void CacheSocket::Unbind() { socket_.unbind(options_.endpoint); }

void CacheSocket::Reply(const std::string& peer, std::uint64_t id, AckStatus status, const std::string& reason) {
  std::string head(kReplyMagic);
  WriteU64(head, id);
  head.push_back(static_cast<char>(status));
  head += reason;
  try {
    // A peer that is gone (or whose pipe is full) loses its reply; it spools.
    (void)socket_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)socket_.send(zmq::buffer(head), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
  }
}

std::size_t CacheSocket::ReadRequests() {
  std::size_t n = 0;
  while (true) {
    zmq::message_t peer_msg;
    if (!socket_.recv(peer_msg, zmq::recv_flags::dontwait)) return n;
    ++n;
    const std::string peer = peer_msg.to_string();
    std::vector<zmq::message_t> parts;
    bool more = peer_msg.more();
    while (more) {
      zmq::message_t part;
      (void)socket_.recv(part, zmq::recv_flags::none);
      more = part.more();
      parts.push_back(std::move(part));
    }
    if (parts.empty() || parts[0].size() < 12 || parts[0].to_string_view().substr(0, 4) != kRequestMagic) {
      continue;  // not our protocol: nothing to correlate a reply with
    }
    const char* head = static_cast<const char*>(parts[0].data());
    const std::uint64_t id = ReadU64(head + 4);
    if (parts[0].size() != kHeaderBytes) {
      Reply(peer, id, AckStatus::kNotTaken, "malformed request header");
      continue;
    }
    const Micros sent{std::chrono::microseconds(static_cast<std::int64_t>(ReadU64(head + 12)))};
    const Micros now = clock_.Now();
    AckRequest request;
    request.expires = sent + options_.send_timeout / 2;
    if (now > request.expires) {
      Reply(peer, id, AckStatus::kNotTaken, "the request waited longer than half of brine.send_timeout_ms");
      continue;
    }
    if (store_failing_()) {
      Reply(peer, id, AckStatus::kNotTaken, "the store is refusing writes (see brine-master's log)");
      continue;
    }
    const std::uint64_t token = next_token_++;
    request.token = token;
    request.frames.reserve(parts.size() - 1);
    for (std::size_t i = 1; i < parts.size(); ++i) {
      Frame f;
      f.bytes.assign(static_cast<const char*>(parts[i].data()), parts[i].size());
      f.received = now;
      f.source = Frame::Source::kAcked;
      f.ack_token = token;
      request.frames.push_back(std::move(f));
    }
    if (request.frames.empty()) {
      Reply(peer, id, AckStatus::kStored, "");  // nothing to store: a ping
      continue;
    }
    std::vector<zmq::message_t> events;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      if (!IsCacheFrame(parts[i].to_string_view())) events.push_back(std::move(parts[i]));
    }
    if (!queue_.PushAcked(std::move(request))) {
      Reply(peer, id, AckStatus::kNotTaken, "brine-master's acknowledged queue is full or stopping");
      continue;
    }
    pending_.emplace(token, Pending{peer, id});
    for (zmq::message_t& event : events) (void)pub_.send(event, zmq::send_flags::dontwait);
  }
}

void CacheSocket::SendReplies() {
  for (const AckDone& done : mailbox_.Take()) {
    auto it = pending_.find(done.token);
    if (it == pending_.end()) continue;
    Reply(it->second.peer, it->second.id, done.status, done.reason);
    pending_.erase(it);
  }
}

}  // namespace brine::master
