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
// In ipc_mode tcp (a tcp:// endpoint) every connection opens with a handshake
// that proves both ends hold brine's key: 32 random octets in
// <brine.sock_dir>/brine_cache.key (brine.cache_key_file), mode 0600, made by
// brine-master at its first start (LoadOrCreateCacheKey). The caller speaks
// first, then requests and replies follow as above:
//   hello    = length "BRH1" cnonce     caller -> brine-master
//   welcome  = length "BRW1" snonce smac brine-master -> caller
//   proof    = length "BRP1" cmac       caller -> brine-master
//   cnonce   = 32 OCTET                 random, fresh for each connection
//   snonce   = 32 OCTET                 random, fresh for each connection
//   smac     = HMAC-SHA256(key, "brine cache server v1" cnonce snonce)
//   cmac     = HMAC-SHA256(key, "brine cache client v1" cnonce snonce)
// The caller checks smac before it sends proof or any frame, so a process
// without the key (one that took the port while brine-master was down) gets
// no frames and the caller spools. brine-master checks cmac before it reads a
// request, so a process without the key gets nothing filed. The two labels
// keep one side's answer from serving as the other's. A caller may send its
// first request right after proof. Anything but hello or proof in their
// place closes the connection; a request there (a plug-in older than the
// handshake) is first answered status 1 with a reason that says so, and
// logged. The handshake must be done within the send timeout.
// The Unix socket has no handshake: its file is 0600 in brine.sock_dir,
// which brine's user owns, so the kernel already lets only that user and root
// connect, and only that user can have made the socket.
//
// A request's frames are filed and committed together. Its event frames (all
// but brine/cache/*) are republished on brine's bus when the request is
// taken, as the pull socket's are, so brine-run state.event sees what a Salt
// master's event_return forwards. A request is not taken (status 1, at once)
// while the store refuses writes, when the acknowledged lane is full, when it
// holds more than max_frames_per_request frames, or when it is older than
// half the caller's send timeout (brine.send_timeout_ms), since the caller
// spools what is not answered in time and a late copy would be filed twice.
// A sent_us ahead of brine-master's clock counts as its now (the caller runs
// on the same host). A body that does not parse (short or unknown header, a
// frame length past the end) is answered with status 1 when the id can be
// read. The caller spools, and brine-master replays the spool later (where an
// oversize frame is quarantined), when its connection is closed, which
// happens for:
//   - a length over max_request_bytes;
//   - more connections than max_connections (the rest are accepted and
//     closed at once; on EMFILE or ENFILE the listener rests for a while
//     instead);
//   - unfinished requests and unread replies past max_partial_bytes over all
//     connections (the connection holding the most is closed);
//   - a request, or the handshake, not whole within the send timeout of its
//     first octet, or replies that find no room to go out for that long;
//   - nothing asked and nothing owed for idle_timeout.
// A connection with max_unread_reply_bytes of replies waiting is not read
// until they drain: one that never reads holds that much and what its
// kernel buffers hold, then is closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "brine/core/time.h"
#include "ack.h"
#include "frame_queue.h"
#include "logger.h"

namespace brine::master {

inline constexpr std::size_t kCacheKeyBytes = 32;
inline constexpr std::string_view kCacheServerLabel = "brine cache server v1";
inline constexpr std::string_view kCacheClientLabel = "brine cache client v1";

// The key at `path`, made first when there is none: 32 random octets written
// to a new file (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) under a temporary
// name in the same folder, fsynced and linked into place, so a crash never
// leaves a short key and two starts agree on one. Throws std::runtime_error
// naming the path when it cannot be made or read, or when what is there is
// not a regular file of 32 octets that this process's user owns and no one
// else may read (a symlink included).
[[nodiscard]] std::string LoadOrCreateCacheKey(const std::filesystem::path& path);

// HMAC-SHA256(key, label cnonce snonce): smac or cmac of the grammar above.
[[nodiscard]] std::string CacheHandshakeMac(std::string_view key, std::string_view label, std::string_view cnonce,
                                            std::string_view snonce);

struct CacheSocketOptions {
  std::string endpoint;  // ipc://<path> or tcp://<host>:<port>
  std::chrono::milliseconds send_timeout{2000};  // the plug-in's brine.send_timeout_ms
  std::size_t max_request_bytes = (64u << 20) + (1u << 20);
  // brine-master: RLIMIT_NOFILE's soft limit less a reserve for the bus, the
  // store and the files it writes (daemon.cpp).
  std::size_t max_connections = 1024;
  // The handshake's key (kCacheKeyBytes); empty: no handshake (the Unix socket).
  std::string key;
  // A connection that asks nothing and is owed nothing this long is closed.
  std::chrono::milliseconds idle_timeout{60000};
  // Frames per request: each costs memory beyond its octets (a Frame, and
  // AckRequest::kFrameOverheadBytes in the queue's budget).
  std::size_t max_frames_per_request = 65536;
  // Replies one connection may leave unread before it is no longer read.
  std::size_t max_unread_reply_bytes = 256u << 10;
  // Bytes of requests read but not yet whole and of replies not yet written,
  // over all connections: past it the connection holding the most is closed
  // (its caller spools). With the queue's own budget this bounds what
  // callers can make brine-master hold.
  std::size_t max_partial_bytes = 32u << 20;
};

class CacheSocket {
 public:
  // Binds and listens at options.endpoint. A Unix socket that cannot be
  // bound throws std::system_error; a tcp port that cannot (another process
  // holds it) is logged and tried again every second, while callers spool.
  // All references must outlive the CacheSocket, which belongs to the reader
  // thread. `store_failing` says whether the writer is retrying a failed
  // commit. `pub` is brine's bus, owned by the same thread.
  CacheSocket(CacheSocketOptions options, FrameQueue& queue, AckMailbox& mailbox, zmq::socket_t& pub,
              const Clock& clock, Logger& log, std::function<bool()> store_failing);
  ~CacheSocket();
  CacheSocket(const CacheSocket&) = delete;
  CacheSocket& operator=(const CacheSocket&) = delete;

  // Appends what the reader polls for (zmq::poll takes plain descriptors): the
  // listening socket while bound and not resting, and each connection, for
  // input unless its unread replies are at their bound, for output while a
  // reply waits to go out. Serve() takes them back in the same order.
  void AppendPollItems(std::vector<zmq::pollitem_t>& items);
  // Accepts, reads and queues or refuses every complete request, and writes
  // waiting replies, for what `items` (from AppendPollItems) found ready;
  // closes the connections past their time and retries a failed bind.
  void Serve(const zmq::pollitem_t* items, std::size_t count);
  // Queues the replies the writer has posted to the mailbox and writes them.
  void SendReplies();
  // Stops accepting connections (at shutdown); replies still go out.
  void Unbind();
  // Requests queued and not yet answered.
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  using Steady = std::chrono::steady_clock;
  enum class Stage { kHello, kProof, kOpen };
  struct Connection {
    int fd = -1;
    std::string in;   // bytes read and not yet parsed into requests
    std::string out;  // replies not yet written
    Stage stage = Stage::kOpen;
    std::string cnonce;  // the caller's, until its proof is checked
    std::string snonce;
    std::size_t waiting = 0;     // requests queued and not yet answered
    Steady::time_point partial;  // since when `in` holds an unfinished request (or the handshake began)
    Steady::time_point moved;    // when `out` last went out or began to wait
    Steady::time_point active;   // when it last sent or was sent anything
  };
  struct Pending {
    std::uint64_t connection = 0;
    std::uint64_t id = 0;
  };

  void Accept();
  void TryListen();
  // False when the connection is to be closed (end of file, error, oversize).
  bool ReadFrom(Connection& c);
  bool Parse(std::uint64_t serial, Connection& c);
  // The handshake message `body` (grammar above); false: close.
  bool Handshake(Connection& c, std::string_view body);
  void CloseExpired();
  // Logs a refused connection, at most once per 10 s (with how many were not logged).
  void LogRefusal(LogLevel level, const std::string& message);
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
  Logger& log_;
  std::function<bool()> store_failing_;
  int listener_ = -1;
  bool listener_polled_ = false;  // by the last AppendPollItems
  bool unbound_ = false;          // Unbind(): no more binding
  Steady::time_point listen_at_{};  // the next bind attempt, while unbound by failure
  std::string listen_error_;        // the last bind failure, logged when it changes
  Steady::time_point resting_until_{};  // no accept before this (after EMFILE)
  Steady::time_point next_expiry_{};
  Steady::time_point refusal_logged_{};
  std::size_t refusals_unlogged_ = 0;
  std::uint64_t next_serial_ = 1;
  std::map<std::uint64_t, Connection> connections_;  // by serial: poll order is stable
  std::uint64_t next_token_ = 1;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::vector<char> read_buffer_;
};

}  // namespace brine::master
