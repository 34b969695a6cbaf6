// A ZeroMQ socket of brine-run's (a PUSH to the master's pull socket, a SUB
// on its publisher), with a context of its own, over the libzmq table of
// libzmq.h: brine-run and the tests take the same path.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "brine/args/arguments.h"

namespace brine::runner {

// A libzmq call that failed: what zmq_strerror says, and its errno.
class ZmqError : public args::RuntimeFailure {
 public:
  ZmqError(const std::string& what, int error_number) : args::RuntimeFailure(what), error_number_(error_number) {}
  [[nodiscard]] int error_number() const { return error_number_; }

 private:
  int error_number_;
};

class ZmqSocket {
 public:
  enum class Type { kPush, kSub };
  // Loads libzmq on first use. Throws RuntimeFailure when it cannot be loaded,
  // ZmqError when the context or socket cannot be made.
  explicit ZmqSocket(Type type);
  // Closes the socket (waiting up to its linger for what it still holds),
  // then ends the context.
  ~ZmqSocket();
  ZmqSocket(const ZmqSocket&) = delete;
  ZmqSocket& operator=(const ZmqSocket&) = delete;

  // zmq_setsockopt with an int, or with bytes. Throw ZmqError.
  void Set(int option, int value);
  void Set(int option, std::string_view value);
  // Throws ZmqError for an endpoint libzmq refuses.
  void Connect(const std::string& endpoint);
  // Sends one message; false when it could not be handed over within the
  // socket's send timeout. Throws ZmqError for any other failure.
  [[nodiscard]] bool Send(std::string_view bytes);
  // The next message; nullopt when none came within the receive timeout or a
  // signal interrupted the wait. Throws ZmqError for any other failure.
  [[nodiscard]] std::optional<std::string> Receive();

 private:
  // Throws ZmqError with zmq_errno() and its text, as cppzmq's error_t says it.
  [[noreturn]] static void Fail();
  void* context_ = nullptr;
  void* socket_ = nullptr;
};

// The ZeroMQ library's version ("4.3.4"), or "0.0.0" when it cannot be
// loaded, for --versions-report.
[[nodiscard]] std::string ZmqVersion();

}  // namespace brine::runner
