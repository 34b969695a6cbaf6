// How brine-master's writer tells its reader that acknowledged requests
// (cache_socket.h) are done: a mailbox the writer posts to from its thread and
// the reader takes from in its poll loop, woken through an eventfd.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace brine::master {

enum class AckStatus : std::uint8_t {
  kStored = 0,    // committed: any reader sees it, a kill -9 cannot lose it
  kNotTaken = 1,  // not filed here; the caller spools it (reason says why)
};

struct AckDone {
  std::uint64_t token = 0;
  AckStatus status = AckStatus::kStored;
  std::string reason;  // for kNotTaken
};

class AckMailbox {
 public:
  // Throws std::system_error when no eventfd can be made.
  AckMailbox();
  ~AckMailbox();
  AckMailbox(const AckMailbox&) = delete;
  AckMailbox& operator=(const AckMailbox&) = delete;

  // Any thread. Makes fd() readable.
  void Post(std::vector<AckDone> done);
  // What was posted since the last Take, in order; fd() no longer readable.
  [[nodiscard]] std::vector<AckDone> Take();
  // Readable while something is posted; for zmq::poll.
  [[nodiscard]] int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::mutex mu_;
  std::vector<AckDone> posted_;
};

}  // namespace brine::master
