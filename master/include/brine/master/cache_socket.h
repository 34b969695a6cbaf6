// The Salt plug-in's acknowledged write path: a stream socket beside the bus
// (the Unix socket <brine.sock_dir>/brine_cache.ipc, or 127.0.0.1:<brine.
// tcp_cache_port> with ipc_mode: tcp), answered after the commit that holds
// each request.
//
// Not a ZeroMQ socket: a request and its answer are one short exchange on one
// connection, which ZeroMQ routes through an I/O thread on each side (four
// thread wake-ups per round trip, ~140 us of a Python caller's CPU against
// ~40 us for a plain socket; docs/performance.md). The bus stays ZeroMQ.
//
// Grammar (integers big-endian; one connection carries requests one after
// another, and the answers come back in the order commits finish):
//   request  = length body             length = uint32, the bytes of body
//   body     = header *(flen frame)
//   header   = "BRQ1" id sent_us       20 bytes
//   id       = uint64                  chosen by the caller, echoed in the reply
//   sent_us  = int64                   the caller's wall clock when it sent, in
//                                      UTC microseconds since the epoch
//   flen     = uint32                  the bytes of frame
//   frame    = tag "\n\n" msgpack      one event or job-cache write, exactly as
//                                      on the bus (wire/codec.h)
//   reply    = length "BRA1" id status reason
//   status   = %x00                    stored: committed to the store
//            / %x01                    not taken; the caller spools the frames
//   reason   = *OCTET                  UTF-8 text for status 1, empty for 0
//
// A request's frames are filed and committed together. Its event frames (all
// but brine/cache/*) are republished on brine's bus when the request is
// taken, as the pull socket's are, so brine-run state.event sees what a Salt
// master's event_return forwards. A request is not taken (status 1, at once)
// while the store refuses writes, when the acknowledged lane is full, or when
// it is older than half the caller's send timeout (brine.send_timeout_ms),
// since the caller spools what is not answered in time and a late copy would
// be filed twice. A body that does not parse (short or unknown header, a
// frame length past the end) is answered with status 1 when the id can be
// read. A length over max_request_bytes, more connections than
// max_connections, or unfinished requests past max_partial_bytes close a
// connection: the caller spools, and brine-master replays the spool later,
// where an oversize frame is quarantined.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "brine/core/time.h"
#include "brine/master/ack.h"
#include "brine/master/frame_queue.h"

namespace brine::master {

struct CacheSocketOptions {
  std::string endpoint;  // ipc://<path> or tcp://<host>:<port>
  std::chrono::milliseconds send_timeout{2000};  // the plug-in's brine.send_timeout_ms
  std::size_t max_request_bytes = (64u << 20) + (1u << 20);
  std::size_t max_connections = 1024;
  // Bytes of requests read but not yet whole, over all connections: past it
  // the connection holding the most is closed (its caller spools). With the
  // queue's own budget this bounds what callers can make brine-master hold.
  std::size_t max_partial_bytes = 32u << 20;
};

class CacheSocket {
 public:
  // Binds and listens at options.endpoint; throws std::system_error. All
  // references must outlive the CacheSocket, which belongs to the reader
  // thread. `store_failing` says whether the writer is retrying a failed
  // commit. `pub` is brine's bus, owned by the same thread.
  CacheSocket(CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox, zmq::socket_t& pub,
              const Clock& clock, std::function<bool()> store_failing);
  ~CacheSocket();
  CacheSocket(const CacheSocket&) = delete;
  CacheSocket& operator=(const CacheSocket&) = delete;

  // Appends what the reader polls for (zmq::poll takes plain descriptors): the
  // listening socket while bound, and each connection, for output too while
  // a reply waits to go out. Serve() takes them back in the same order.
  void AppendPollItems(std::vector<zmq::pollitem_t>& items) const;
  // Accepts, reads and queues or refuses every complete request, and writes
  // waiting replies, for what `items` (from AppendPollItems) found ready.
  void Serve(const zmq::pollitem_t* items, std::size_t count);
  // Queues the replies the writer has posted to the mailbox and writes them.
  void SendReplies();
  // Stops accepting connections (at shutdown); replies still go out.
  void Unbind();
  // Requests queued and not yet answered.
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  struct Connection {
    int fd = -1;
    std::string in;   // bytes read and not yet parsed into requests
    std::string out;  // replies not yet written
  };
  struct Pending {
    std::uint64_t connection = 0;
    std::uint64_t id = 0;
  };

  void Accept();
  // False when the connection is to be closed (end of file, error, oversize).
  bool ReadFrom(Connection& c);
  bool Parse(std::uint64_t serial, Connection& c);
  void Handle(std::uint64_t serial, Connection& c, std::string_view body);
  void Reply(Connection& c, std::uint64_t id, AckStatus status, const std::string& reason);
  bool Flush(Connection& c);
  void Close(std::uint64_t serial);
  void ShedPartials();

  CacheSocketOptions options_;
  FrameQueue& queue_;
  AckMailbox& mailbox_;
  zmq::socket_t& pub_;
  const Clock& clock_;
  std::function<bool()> store_failing_;
  int listener_ = -1;
  std::uint64_t next_serial_ = 1;
  std::map<std::uint64_t, Connection> connections_;  // by serial: poll order is stable
  std::uint64_t next_token_ = 1;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::vector<char> read_buffer_;
};

}  // namespace brine::master
