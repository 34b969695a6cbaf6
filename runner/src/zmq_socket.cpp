#include "zmq_socket.h"

#include <cerrno>

#include "libzmq.h"

namespace brine::runner {

using detail::Libzmq;

ZmqSocket::ZmqSocket(Type type) {
  const auto& zmq = Libzmq();
  context_ = zmq.zmq_ctx_new();
  if (context_ == nullptr) Fail();
  socket_ = zmq.zmq_socket(context_, type == Type::kPush ? ZMQ_PUSH : ZMQ_SUB);
  if (socket_ == nullptr) {
    const int error = zmq.zmq_errno();
    zmq.zmq_ctx_term(context_);
    throw ZmqError(zmq.zmq_strerror(error), error);
  }
}

ZmqSocket::~ZmqSocket() {
  // Libzmq() loaded in the constructor, so it cannot throw here.
  const auto& zmq = Libzmq();
  zmq.zmq_close(socket_);
  while (zmq.zmq_ctx_term(context_) != 0 && zmq.zmq_errno() == EINTR) {
  }
}

void ZmqSocket::Fail() {
  const auto& zmq = Libzmq();
  const int error = zmq.zmq_errno();
  throw ZmqError(zmq.zmq_strerror(error), error);
}

void ZmqSocket::Set(int option, int value) {
  if (Libzmq().zmq_setsockopt(socket_, option, &value, sizeof value) != 0) Fail();
}

void ZmqSocket::Set(int option, std::string_view value) {
  if (Libzmq().zmq_setsockopt(socket_, option, value.data(), value.size()) != 0) Fail();
}

void ZmqSocket::Connect(const std::string& endpoint) {
  if (Libzmq().zmq_connect(socket_, endpoint.c_str()) != 0) Fail();
}

bool ZmqSocket::Send(std::string_view bytes) {
  const auto& zmq = Libzmq();
  if (zmq.zmq_send(socket_, bytes.data(), bytes.size(), 0) >= 0) return true;
  if (zmq.zmq_errno() == EAGAIN) return false;
  Fail();
}

std::optional<std::string> ZmqSocket::Receive() {
  const auto& zmq = Libzmq();
  zmq_msg_t msg;
  zmq.zmq_msg_init(&msg);
  if (zmq.zmq_msg_recv(&msg, socket_, 0) < 0) {
    const int error = zmq.zmq_errno();
    zmq.zmq_msg_close(&msg);
    if (error == EAGAIN || error == EINTR) return std::nullopt;
    throw ZmqError(zmq.zmq_strerror(error), error);
  }
  std::string bytes(static_cast<const char*>(zmq.zmq_msg_data(&msg)), zmq.zmq_msg_size(&msg));
  zmq.zmq_msg_close(&msg);
  return bytes;
}

std::string ZmqVersion() {
  int major = 0, minor = 0, patch = 0;
  try {
    Libzmq().zmq_version(&major, &minor, &patch);
  } catch (const args::RuntimeFailure&) {
    // Not loadable: the report says 0.0.0 and brine-run goes on.
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace brine::runner
