#include "push_sink.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <zmq.hpp>

namespace brine::sim {
namespace {

// Whether a process accepts connections on the unix socket `path`: ZeroMQ
// would otherwise retry a stale socket file quietly until the send timed out.
// Anything but a refused connect (a path too long for sockaddr_un, say) is
// left for ZeroMQ to judge.
bool Listening(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof addr.sun_path) return true;
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int error = errno;
  ::close(fd);
  return rc == 0 || error != ECONNREFUSED;
}

}  // namespace

struct PushSink::Zmq {
  zmq::context_t ctx{1};
  zmq::socket_t push{ctx, zmq::socket_type::push};
};

PushSink::PushSink(const std::string& endpoint, PushOptions options)
    : endpoint_(endpoint), options_(options), zmq_(std::make_unique<Zmq>()) {
  constexpr std::string_view kIpc = "ipc://";
  if (endpoint.starts_with(kIpc)) {
    const std::filesystem::path path(endpoint.substr(kIpc.size()));
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw SinkError("no event bus at " + endpoint + " (" + path.string() +
                      " does not exist): is brine-master running with this brine.sock_dir?");
    }
    if (!Listening(path)) {
      throw SinkError("no event bus at " + endpoint + " (nothing listens on " + path.string() +
                      ", a stale socket file): is brine-master running?");
    }
  }
  try {
    // Queue only for a connected master, so a missing one is noticed (the
    // send times out) instead of frames piling up for nobody.
    zmq_->push.set(zmq::sockopt::immediate, 1);
    zmq_->push.set(zmq::sockopt::sndtimeo, static_cast<int>(options_.send_timeout.count()));
    zmq_->push.set(zmq::sockopt::linger, static_cast<int>(options_.linger.count()));
    zmq_->push.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw SinkError("cannot connect to " + endpoint + ": " + e.what());
  }
}

PushSink::~PushSink() {
  // An unclosed sink (an error on the way) drops what is queued at once.
  if (zmq_) {
    try {
      zmq_->push.set(zmq::sockopt::linger, 0);
    } catch (const zmq::error_t&) {
    }
  }
}

void PushSink::Send(std::string_view frame, const SimEvent&) {
  while (true) {
    try {
      if (!zmq_->push.send(zmq::const_buffer(frame.data(), frame.size()), zmq::send_flags::none)) {
        throw SinkError("brine-master at " + endpoint_ + " took no event for " +
                        std::to_string(options_.send_timeout.count() / 1000) + " s: is it running?");
      }
      return;
    } catch (const zmq::error_t& e) {
      // A signal (the operator's Ctrl-C) interrupted the wait: this frame
      // still goes; the caller stops after it.
      if (e.num() == EINTR) continue;
      throw SinkError("sending to " + endpoint_ + ": " + e.what());
    }
  }
}

void PushSink::Close() {
  const auto started = std::chrono::steady_clock::now();
  zmq_->push.close();
  zmq_->ctx.close();  // blocks until the queued frames are out, or the linger ran out
  zmq_.reset();
  if (std::chrono::steady_clock::now() - started >= options_.linger) {
    throw SinkError("frames still queued for " + endpoint_ + " after " + std::to_string(options_.linger.count()) +
                    " ms were dropped: brine-master stopped reading");
  }
}

}  // namespace brine::sim
