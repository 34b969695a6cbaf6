// A stand-in for a modern Salt master's event bus (2016.3 and later: 3006,
// 3007, 3008), written from ../shared/spec/salt-modern-bus.md, since Salt
// cannot be installed here. It serves <sock_dir>/master_event_pub.ipc (every
// connected reader gets every frame; nothing is replayed) and
// master_event_pull.ipc (frames written there are republished), plain Unix
// stream sockets, in either framing (brine/wire/salt_stream.h) and with str
// or bin keys and bodies. Like Salt 3006 it drops a reader whose unsent
// bytes pass a cap (ipc_write_buffer), without notice. A restart ends every
// reader (EOF), deletes the socket file and binds a new one, maybe in the
// other framing. Under `ipc_mode: tcp` (Options::tcp_pub_port) it serves
// 127.0.0.1:tcp_master_pub_port and tcp_master_pull_port instead, as Salt
// does, and a restart closes and rebinds the port. One thread serves the
// sockets; the calls below may come from any one other thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "brine/core/value.h"
#include "brine/wire/salt_stream.h"

namespace brine::test {

class ModernBus {
 public:
  struct Options {
    wire::StreamForm form;             // how frames to readers are packed
    // The puller's framing (3008.2+: prefixed while the publisher is plain).
    wire::StreamFraming pull_framing = wire::StreamFraming::kPlain;
    std::size_t write_chunk = 0;       // >0: each write() at most this many bytes (frames split)
    std::size_t drop_after_bytes = 0;  // >0: a reader with more unsent bytes is dropped
    // >0: ipc_mode tcp, the publisher on 127.0.0.1:tcp_pub_port and the
    // puller on 127.0.0.1:tcp_pull_port (both needed); no socket files.
    int tcp_pub_port = 0;
    int tcp_pull_port = 0;
  };

  // Binds both sockets in `sock_dir` (made if missing), or on the tcp ports.
  // Throws std::runtime_error.
  ModernBus(std::filesystem::path sock_dir, Options options);
  ~ModernBus();
  ModernBus(const ModernBus&) = delete;
  ModernBus& operator=(const ModernBus&) = delete;

  // Fires one event to every reader, as Salt's fire_event does (the caller
  // adds _stamp when it wants one).
  void Fire(const std::string& tag, const Value& data);
  // Sends `bytes` as they are to every reader (a garbage frame).
  void FireRaw(const std::string& bytes);
  // The body of each frame, packed in the publisher's form.
  [[nodiscard]] std::string Pack(const std::string& tag, const Value& data) const;

  // Ends every reader (EOF), removes the socket file and binds a new one,
  // which packs as `form` from now on.
  void Restart(const wire::StreamForm& form);
  // Binds a new publisher socket file over the old one while the old
  // connections stay open (a replaced publisher whose old one hangs).
  void ReplaceSocket();
  // Stops serving: every reader gets EOF, both socket files are removed.
  void Shutdown();

  [[nodiscard]] std::size_t readers();
  [[nodiscard]] std::size_t dropped() const { return dropped_; }
  // Readers accepted on the publisher since the start.
  [[nodiscard]] std::size_t accepted() const { return accepted_; }
  // Bodies received on the puller, in order, and the framing each came in.
  [[nodiscard]] std::vector<std::string> pulled();
  [[nodiscard]] std::vector<wire::StreamFraming> pulled_framings();
  // True once `n` readers are connected, within `timeout_ms`.
  [[nodiscard]] bool WaitForReaders(std::size_t n, int timeout_ms = 30000);
  // True once every reader's unsent bytes went out, within `timeout_ms`.
  [[nodiscard]] bool WaitFlushed(int timeout_ms = 30000);

  [[nodiscard]] std::filesystem::path pub_path() const { return dir_ / "master_event_pub.ipc"; }
  [[nodiscard]] std::filesystem::path pull_path() const { return dir_ / "master_event_pull.ipc"; }

 private:
  struct Conn {
    int fd = -1;
    std::string out;  // unsent bytes (readers)
    wire::StreamDecoder in{std::size_t{64} << 20};  // (pullers)
  };
  void Serve();
  void Broadcast(const std::string& frame);  // mu_ held
  void FlushLocked();                        // mu_ held
  void BindPub();                            // mu_ held
  void Wake();

  const std::filesystem::path dir_;
  Options options_;
  std::mutex mu_;  // guards everything below but the atomics
  int pub_listen_ = -1;
  int pull_listen_ = -1;
  std::vector<Conn> readers_;
  std::vector<Conn> old_readers_;  // kept open by ReplaceSocket
  std::vector<Conn> pullers_;
  std::vector<std::string> pulled_;
  std::vector<wire::StreamFraming> pulled_framings_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> dropped_{0};
  std::atomic<std::size_t> accepted_{0};
  std::thread thread_;
};

}  // namespace brine::test
