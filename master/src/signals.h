// The signals brine-master acts on (SIGTERM and SIGINT stop it, SIGHUP
// reopens the log), taken from a signalfd the reader polls beside the bus
// rather than by an asynchronous handler.
#pragma once

namespace brine::master {

class Signals {
 public:
  // Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in every
  // thread it starts from here on, and opens a non-blocking signalfd for
  // them; ignores SIGPIPE. Call it on the main thread before it starts a
  // thread of its own. Throws std::system_error.
  Signals();
  // Closes the descriptor. The signals stay blocked: the process is ending.
  ~Signals();
  Signals(const Signals&) = delete;
  Signals& operator=(const Signals&) = delete;

  // Readable when a signal waits: a poll on it ends when one arrives.
  [[nodiscard]] int fd() const { return fd_; }

  // Takes every signal waiting. Returns true when a SIGHUP was among them
  // (reopen the log). Throws std::system_error.
  bool Take();

  // The first SIGTERM or SIGINT taken, 0 while there was none.
  [[nodiscard]] int stop_signal() const { return stop_signal_; }

 private:
  int fd_ = -1;
  int stop_signal_ = 0;
};

}  // namespace brine::master
