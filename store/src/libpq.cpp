#include "libpq.h"

#include "brine/core/shared_library.h"
#include "brine/store/errors.h"

namespace brine::store::detail {
namespace {

LibpqApi Load() {
  // libpq's soname has been libpq.so.5 since PostgreSQL 8.2; the unversioned
  // libpq.so belongs to the -dev package, which a machine running brine may lack.
  return shared_library::LoadTable<StoreError, LibpqApi>(
      "libpq.so.5", "for a PostgreSQL store", [](const shared_library::Handle& lib, LibpqApi& api) {
#define BRINE_LIBPQ_LOAD(name) api.name = reinterpret_cast<decltype(&::name)>(lib.Symbol(#name, "libpq 14 or newer is needed"));
        BRINE_LIBPQ_FUNCTIONS(BRINE_LIBPQ_LOAD)
#undef BRINE_LIBPQ_LOAD
      });
}

}  // namespace

const LibpqApi& Libpq() { return shared_library::LoadedOnce(&Load); }

}  // namespace brine::store::detail
