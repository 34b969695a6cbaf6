#include "libzmq.h"

#include "brine/args/arguments.h"
#include "brine/core/shared_library.h"

namespace brine::runner::detail {
namespace {

LibzmqApi Load() {
  // Debian's libzmq5; the unversioned libzmq.so belongs to the -dev package,
  // which a machine running brine may lack.
  return shared_library::LoadTable<args::RuntimeFailure, LibzmqApi>(
      "libzmq.so.5", "(ZeroMQ)", [](const shared_library::Handle& lib, LibzmqApi& api) {
#define BRINE_LIBZMQ_LOAD(name) api.name = reinterpret_cast<decltype(&::name)>(lib.Symbol(#name, "libzmq 4.3 is needed"));
        BRINE_LIBZMQ_FUNCTIONS(BRINE_LIBZMQ_LOAD)
#undef BRINE_LIBZMQ_LOAD
      });
}

}  // namespace

const LibzmqApi& Libzmq() { return shared_library::LoadedOnce(&Load); }

}  // namespace brine::runner::detail
