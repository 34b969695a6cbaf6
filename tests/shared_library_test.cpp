// core/shared_library.h: the lazy loading that store's libpq and runner's
// libzmq share.
#include <zmq.h>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "brine/core/shared_library.h"

namespace {

struct ZmqApi {
  decltype(&::zmq_ctx_new) zmq_ctx_new = nullptr;
};

class TestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int g_loads = 0;

ZmqApi LoadZmq() {
  ++g_loads;
  return brine::shared_library::LoadTable<TestError, ZmqApi>(
      "libzmq.so.5", "(ZeroMQ)", [](const brine::shared_library::Handle& lib, ZmqApi& api) {
        api.zmq_ctx_new = reinterpret_cast<decltype(&::zmq_ctx_new)>(lib.Symbol("zmq_ctx_new", "libzmq 4.3"));
      });
}

}  // namespace

TEST_CASE("shared_library: a library the process links already comes back as that one, loaded once",
          "[core]") {
  // The test binary links libzmq: the table must point at the very functions
  // it calls, so a test of the runner runs the code brine-run runs.
  const ZmqApi& api = brine::shared_library::LoadedOnce(&LoadZmq);
  REQUIRE(api.zmq_ctx_new == &::zmq_ctx_new);
  const ZmqApi& again = brine::shared_library::LoadedOnce(&LoadZmq);
  REQUIRE(&again == &api);
  REQUIRE(g_loads == 1);
}

TEST_CASE("shared_library: a missing library or function fails with the caller's error naming it", "[core]") {
  using brine::shared_library::Handle;
  using brine::shared_library::LoadTable;
  try {
    (void)LoadTable<TestError, ZmqApi>("libbrine-none.so.9", "(for nothing)", [](const Handle&, ZmqApi&) {});
    FAIL("a missing library loaded");
  } catch (const TestError& e) {
    REQUIRE(std::string(e.what()).find("cannot load libbrine-none.so.9 (for nothing): ") == 0);
  }
  try {
    (void)LoadTable<TestError, ZmqApi>("libzmq.so.5", "(ZeroMQ)", [](const Handle& lib, ZmqApi&) {
      (void)lib.Symbol("zmq_no_such_function", "libzmq 99 is needed");
    });
    FAIL("a missing function resolved");
  } catch (const TestError& e) {
    REQUIRE(std::string(e.what()) == "libzmq.so.5 has no zmq_no_such_function (libzmq 99 is needed)");
  }
}
