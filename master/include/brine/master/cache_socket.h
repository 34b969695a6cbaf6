// The Salt plug-in's acknowledged write path: a ZeroMQ ROUTER beside the bus
// (ipc://<brine.sock_dir>/brine_cache.ipc, or tcp://127.0.0.1:<brine.
// tcp_cache_port>), answered after the commit that holds each request.
//
// Grammar (ZeroMQ message parts; integers big-endian):
//   request  = header *frame           sent by a DEALER; the ROUTER prefixes
//                                      the peer's routing id
//   header   = "BRQ1" id sent_us       20 bytes
//   id       = uint64                  chosen by the caller, echoed in the reply
//   sent_us  = int64                   the caller's wall clock when it sent, in
//                                      UTC microseconds since the epoch
//   frame    = tag "\n\n" msgpack      one event or job-cache write, exactly as
//                                      on the bus (wire/codec.h)
//   reply    = "BRA1" id status reason
//   status   = %x00                    stored: committed to the store
//            / %x01                    not taken; the caller spools the frames
//   reason   = *OCTET                  UTF-8 text for status 1, empty for 0
//
// A request's frames are filed and committed together. Its event frames (all
// but brine/cache/*) are republished on brine's bus when the request is
// taken, as the pull socket's are, so brine-run state.event sees what a Salt
// master's event_return forwards. A request is not taken
// (status 1, at once) while the store refuses writes, when the acknowledged
// lane is full, or when it is older than half the caller's send timeout
// (brine.send_timeout_ms), since the caller spools what is not answered in
// time and a late copy would be filed twice. A header that is not 20 bytes
// with the magic is answered with status 1 when the id can be read, else
// dropped. The reply to a request is sent once, in the order commits finish.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <zmq.hpp>

#include "brine/core/time.h"
#include "brine/master/ack.h"
#include "brine/master/frame_queue.h"

namespace brine::master {

struct CacheSocketOptions {
  std::string endpoint;
  std::chrono::milliseconds send_timeout{2000};  // the plug-in's brine.send_timeout_ms
};

class CacheSocket {
 public:
  // Binds a ROUTER at options.endpoint. Throws zmq::error_t. All references
  // must outlive the CacheSocket, which belongs to the reader thread.
  // `store_failing` says whether the writer is retrying a failed commit.
  // `pub` is brine's bus, owned by the same thread.
  CacheSocket(zmq::context_t& ctx, CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox,
              zmq::socket_t& pub, const Clock& clock, std::function<bool()> store_failing);

  [[nodiscard]] zmq::socket_t& socket() { return socket_; }

  // Reads every request waiting on the socket without blocking and queues or
  // refuses each. Returns the number read.
  std::size_t ReadRequests();
  // Sends the replies the writer has posted to the mailbox.
  void SendReplies();
  // Stops binding new connections (at shutdown); replies still go out.
  void Unbind();
  // Requests queued and not yet answered.
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    std::string peer;
    std::uint64_t id = 0;
  };
  void Reply(const std::string& peer, std::uint64_t id, AckStatus status, const std::string& reason);

  CacheSocketOptions options_;
  FrameQueue& queue_;
  AckMailbox& mailbox_;
  zmq::socket_t& pub_;
  const Clock& clock_;
  std::function<bool()> store_failing_;
  zmq::socket_t socket_;
  std::uint64_t next_token_ = 1;
  std::unordered_map<std::uint64_t, Pending> pending_;
};

}  // namespace brine::master
