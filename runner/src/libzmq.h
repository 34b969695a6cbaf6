// libzmq, loaded the first time brine-run needs the bus (state.event,
// event.send, the queue functions that fire events) rather than at every
// start: the same pattern as store/src/libpq.h.
//
// Why: linking libzmq made every brine-run call map and relocate it and its
// twelve dependencies (libsodium, OpenPGM, NORM, the Kerberos libraries, ...),
// though jobs.* and most functions never open a socket. A trivial program
// linked with libzmq started in 5.3 ms (median of 41) against 3.5 ms without
// on this machine, and the one-hour list_jobs window, a 13-18 ms call, is
// mostly process start. Every call of the runner goes through this table, in
// brine-run and in the tests alike (a test binary that links libzmq itself
// gets the same, already loaded, library back from dlopen).
#pragma once

#include <zmq.h>

namespace brine::runner::detail {

// Every libzmq function the runner calls.
#define BRINE_LIBZMQ_FUNCTIONS(X)                                                                         \
  X(zmq_close) X(zmq_connect) X(zmq_ctx_new) X(zmq_ctx_term) X(zmq_errno) X(zmq_msg_close) X(zmq_msg_data) \
  X(zmq_msg_init) X(zmq_msg_recv) X(zmq_msg_size) X(zmq_send) X(zmq_setsockopt) X(zmq_socket) X(zmq_strerror) X(zmq_version)

// Pointers to those functions, named as libzmq names them.
struct LibzmqApi {
#define BRINE_LIBZMQ_MEMBER(name) decltype(&::name) name = nullptr;
  BRINE_LIBZMQ_FUNCTIONS(BRINE_LIBZMQ_MEMBER)
#undef BRINE_LIBZMQ_MEMBER
};

// libzmq's functions, loaded from libzmq.so.5 on the first call (thread-safe;
// the library stays loaded). Throws RuntimeFailure (arguments.h) naming what
// is missing when libzmq or one of its functions cannot be loaded; later
// calls retry.
[[nodiscard]] const LibzmqApi& Libzmq();

}  // namespace brine::runner::detail
