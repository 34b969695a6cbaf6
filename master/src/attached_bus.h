// brine.bus: attach. brine-master as one more local reader of a running Salt
// master's own event bus (2016.3 and later), a plain stream socket
// (brine/wire/salt_stream.h has its grammar, ../shared/spec/salt-modern-bus.md
// its facts). Owned and driven by the reader thread (reader.h):
//   - Maintain() connects when it is time: at once, then every
//     kRetryInterval while the master is away, restarting or not installed,
//     and OnWake() at once when inotify sees a file appear in the folder;
//     brine-master never exits for it. Each episode is logged once; EACCES
//     once a minute, naming the user, the path and what to change.
//   - Read() reads what the socket holds while the queue has room and queues
//     each body as a bus frame (prepared, or spilled raw to the overflow file
//     as the ZeroMQ path does); it never waits on the store. When the queue
//     and the overflow file are full it is not called, so the master drops
//     us: the EOF then found is a gap "brine fell behind".
//   - An undecodable message is quarantined raw with its reason; a prefixed
//     stream goes on with the next frame, a bare one is dropped and
//     reconnected (a gap "undecodable stream").
//   - The socket file's inode is checked every kInodeCheckInterval; a new
//     one ends the connection (a gap "socket replaced").
// Gaps are posted to a GapMailbox for the writer; the framing seen is
// written to config::BusFramingFile for brine-run's event.send.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "brine/config/bus_endpoints.h"
#include "brine/core/time.h"
#include "brine/wire/salt_stream.h"
#include "archiver.h"
#include "bus_gaps.h"
#include "frame_queue.h"
#include "live_status.h"
#include "logger.h"

namespace brine::master {

struct AttachOptions {
  config::SaltBus bus;
  std::filesystem::path framing_file;  // config::BusFramingFile
  std::size_t max_frame_bytes = std::size_t{64} << 20;
};

class AttachedBus {
 public:
  static constexpr std::chrono::milliseconds kRetryInterval{250};
  static constexpr std::chrono::milliseconds kInodeCheckInterval{250};
  static constexpr std::chrono::seconds kPermissionLogInterval{60};

  // All references must outlive the AttachedBus.
  AttachedBus(AttachOptions options, GapMailbox& gaps, AttachStatus& status, Logger& log, const Clock& clock);
  ~AttachedBus();
  AttachedBus(const AttachedBus&) = delete;
  AttachedBus& operator=(const AttachedBus&) = delete;

  // Connects when it is time, and checks the socket file's inode. Never throws.
  void Maintain();
  // The connected socket to poll, or -1.
  [[nodiscard]] int fd() const { return fd_; }
  // While detached in ipc mode: an inotify descriptor on the socket's folder
  // that becomes readable when a file appears there (a master binding its
  // socket), so the reader connects at once rather than at the next retry;
  // -1 when there is none (tcp mode, a folder not there yet: retries only).
  [[nodiscard]] int wake_fd() const { return fd_ < 0 ? watch_fd_ : -1; }
  // wake_fd() was readable: drains it and connects now.
  void OnWake();
  // Reads and queues at most `max_frames` frames while the queue has room.
  // Returns the frames queued. Throws only std::bad_alloc.
  std::size_t Read(FrameQueue& queue, const Archiver& archiver, std::size_t max_frames);
  // The reader left the socket unread because the queue was full.
  void NoteFull() { stalled_ = true; }
  // brine-master stops: ends the connection with a gap "brine-master stopped".
  void Stop();

 private:
  void TryConnect();
  void Detach(store::GapReason reason, const std::string& why);
  void OpenGap(store::GapReason reason);
  void RecordFraming(wire::StreamFraming framing);
  [[nodiscard]] std::optional<ino_t> SocketInode() const;
  void Watch();  // adds the folder's inotify watch, when it can

  const AttachOptions options_;
  GapMailbox& gaps_;
  AttachStatus& status_;
  Logger& log_;
  const Clock& clock_;
  wire::StreamDecoder decoder_;
  std::string read_buffer_;
  int fd_ = -1;
  int watch_fd_ = -1;  // inotify; -1: none
  bool watching_ = false;  // the folder's watch is in place
  std::optional<ino_t> inode_;
  bool ever_attached_ = false;
  bool gap_open_ = false;           // as posted to the mailbox
  bool episode_logged_ = false;     // this detached episode was logged
  bool stalled_ = false;            // left unread with the queue full, and not caught up since
  bool stopped_ = false;            // Stop was called: no more connecting
  std::optional<wire::StreamFraming> framing_written_;
  std::optional<Micros> last_frame_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::chrono::steady_clock::time_point next_inode_check_{};
  std::chrono::steady_clock::time_point last_permission_log_{};
};

}  // namespace brine::master
