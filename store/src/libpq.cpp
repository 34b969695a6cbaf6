#include "libpq.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "brine/store/errors.h"

namespace brine::store::detail {
namespace {

// libpq's soname has been libpq.so.5 since PostgreSQL 8.2; the unversioned
// libpq.so belongs to the -dev package, which a machine running brine may lack.
constexpr const char* kLibpqSoname = "libpq.so.5";

LibpqApi Load() {
  // RTLD_LOCAL: libpq's symbols stay out of the global namespace; RTLD_NOW:
  // a missing function shows here, not at the first call that needs it.
  void* lib = dlopen(kLibpqSoname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    throw StoreError(std::string("cannot load ") + kLibpqSoname + " for a PostgreSQL store: " +
                     (why != nullptr ? why : "unknown error"));
  }
  LibpqApi api;
#define BRINE_LIBPQ_LOAD(name)                                                                          \
  api.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));                                    \
  if (api.name == nullptr) {                                                                            \
    dlclose(lib);                                                                                       \
    throw StoreError(std::string(kLibpqSoname) + " has no " #name " (libpq 14 or newer is needed)"); \
  }
  BRINE_LIBPQ_FUNCTIONS(BRINE_LIBPQ_LOAD)
#undef BRINE_LIBPQ_LOAD
  return api;
}

}  // namespace

const LibpqApi& Libpq() {
  // Called for every libpq call, so the loaded case is one atomic load; the
  // mutex only orders the first load (a failed load is retried, not kept).
  static std::atomic<const LibpqApi*> ready{nullptr};
  if (const LibpqApi* api = ready.load(std::memory_order_acquire)) return *api;
  static std::mutex mutex;
  static LibpqApi loaded;
  const std::lock_guard lock(mutex);
  if (ready.load(std::memory_order_relaxed) == nullptr) {
    loaded = Load();
    ready.store(&loaded, std::memory_order_release);
  }
  return loaded;
}

}  // namespace brine::store::detail
