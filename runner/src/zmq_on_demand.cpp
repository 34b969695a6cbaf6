// zmq_on_demand: the libzmq functions brine-run calls, loaded from
// libzmq.so.5 the first time one is called (state.event, event.send, the
// queue functions that fire events), instead of at every start.
//
// Why: linking libzmq made every brine-run call map and relocate it and its
// twelve dependencies (libsodium, OpenPGM, NORM, the Kerberos libraries, ...),
// though jobs.* and most functions never open a socket. A trivial program
// linked with libzmq started in 5.3 ms (median of 41) against 3.5 ms without
// on this machine, and the one-hour list_jobs window, a 13-18 ms call, is
// mostly process start. brine-run links these definitions instead of libzmq
// (runner/CMakeLists.txt); the tests, which link libzmq itself, resolve the
// runner's calls to it directly. Same pattern as store/src/libpq.cpp.
//
// If the library cannot be loaded, each function fails as libzmq's own do,
// with errno ELIBACC, and zmq_strerror(ELIBACC) says why, so cppzmq's
// zmq::error_t carries the reason to the caller's one-line message. A
// function brine-run starts to use and this file lacks is a link error.
#include <dlfcn.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

// Debian's libzmq5; the unversioned libzmq.so belongs to the -dev package.
constexpr const char* kLibzmqSoname = "libzmq.so.5";
constexpr int kNotLoaded = ELIBACC;

struct Libzmq {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

const Libzmq& Lib() {
  // Thread-safe once (a static's initialisation); RTLD_LOCAL keeps libzmq's
  // symbols from interposing on these.
  static const Libzmq lib = [] {
    Libzmq l;
    l.handle = dlopen(kLibzmqSoname, RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* why = dlerror();
      l.error = std::string("cannot load ") + kLibzmqSoname + " (ZeroMQ): " + (why != nullptr ? why : "unknown error");
    }
    return l;
  }();
  return lib;
}

template <class F>
F Resolve(const char* name) {
  const Libzmq& lib = Lib();
  return lib.handle != nullptr ? reinterpret_cast<F>(dlsym(lib.handle, name)) : nullptr;
}

}  // namespace

// The function of libzmq named `name`, resolved once.
#define BRINE_ZMQ(name) static const auto fn = Resolve<decltype(&::name)>(#name)
// Fails the call as libzmq does (errno, then -1 or nullptr) when it is missing.
#define BRINE_ZMQ_OR(name, failed) \
  BRINE_ZMQ(name);                 \
  if (fn == nullptr) {             \
    errno = kNotLoaded;            \
    return failed;                 \
  }

extern "C" {

int zmq_errno(void) {
  BRINE_ZMQ(zmq_errno);
  return fn != nullptr ? fn() : errno;
}

const char* zmq_strerror(int errnum_) {
  BRINE_ZMQ(zmq_strerror);
  if (errnum_ == kNotLoaded && !Lib().error.empty()) return Lib().error.c_str();
  return fn != nullptr ? fn(errnum_) : std::strerror(errnum_);
}

void zmq_version(int* major_, int* minor_, int* patch_) {
  BRINE_ZMQ(zmq_version);
  if (fn != nullptr) {
    fn(major_, minor_, patch_);
  } else {
    *major_ = *minor_ = *patch_ = 0;
  }
}

void* zmq_ctx_new(void) {
  BRINE_ZMQ_OR(zmq_ctx_new, nullptr);
  return fn();
}

int zmq_ctx_term(void* context_) {
  BRINE_ZMQ_OR(zmq_ctx_term, -1);
  return fn(context_);
}

int zmq_ctx_set(void* context_, int option_, int optval_) {
  BRINE_ZMQ_OR(zmq_ctx_set, -1);
  return fn(context_, option_, optval_);
}

int zmq_msg_init(zmq_msg_t* msg_) {
  BRINE_ZMQ_OR(zmq_msg_init, -1);
  return fn(msg_);
}

int zmq_msg_recv(zmq_msg_t* msg_, void* s_, int flags_) {
  BRINE_ZMQ_OR(zmq_msg_recv, -1);
  return fn(msg_, s_, flags_);
}

int zmq_msg_close(zmq_msg_t* msg_) {
  BRINE_ZMQ_OR(zmq_msg_close, -1);
  return fn(msg_);
}

void* zmq_msg_data(zmq_msg_t* msg_) {
  BRINE_ZMQ_OR(zmq_msg_data, nullptr);
  return fn(msg_);
}

size_t zmq_msg_size(const zmq_msg_t* msg_) {
  BRINE_ZMQ_OR(zmq_msg_size, 0);
  return fn(msg_);
}

void* zmq_socket(void* context_, int type_) {
  BRINE_ZMQ_OR(zmq_socket, nullptr);
  return fn(context_, type_);
}

int zmq_close(void* s_) {
  BRINE_ZMQ_OR(zmq_close, -1);
  return fn(s_);
}

int zmq_connect(void* s_, const char* addr_) {
  BRINE_ZMQ_OR(zmq_connect, -1);
  return fn(s_, addr_);
}

int zmq_send(void* s_, const void* buf_, size_t len_, int flags_) {
  BRINE_ZMQ_OR(zmq_send, -1);
  return fn(s_, buf_, len_, flags_);
}

int zmq_setsockopt(void* s_, int option_, const void* optval_, size_t optvallen_) {
  BRINE_ZMQ_OR(zmq_setsockopt, -1);
  return fn(s_, option_, optval_, optvallen_);
}

}  // extern "C"
