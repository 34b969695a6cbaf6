// A shared library's functions, loaded the first time a program needs them
// instead of at start: store/src/libpq.cpp (libpq) and runner/src/libzmq.cpp
// (libzmq) each keep a table of the functions they call and fill it through
// LoadTable, once, with LoadedOnce.
//
// Why not link them: a linked library is mapped and relocated, with all it
// pulls in, by every start of the program, though most calls never use it
// (docs/performance.md: brine-run's start).
#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace brine::shared_library {

// An open library (dlopen with RTLD_NOW | RTLD_LOCAL: its symbols stay out of
// the global namespace, and a missing function shows at load). A library the
// process already holds (a test that links it) comes back as that one.
class Handle {
 public:
  // Throws std::runtime_error "cannot load <soname> <purpose>: <reason>".
  Handle(const char* soname, const std::string& purpose);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  // The address of `name`. Throws std::runtime_error "<soname> has no <name>
  // (<requirement>)".
  [[nodiscard]] void* Symbol(const char* name, const std::string& requirement) const;
  // Keeps the library loaded for the rest of the process: the table's
  // pointers point into it.
  void Keep() { kept_ = true; }

 private:
  const char* soname_;
  void* handle_;
  bool kept_ = false;
};

// Fills an `Api` table through `fill(handle, api)` (which calls
// handle.Symbol for each member) and keeps the library loaded. A failure is
// rethrown as `Error` (the caller module's own error type) with the same text.
template <class Error, class Api, class Fill>
Api LoadTable(const char* soname, const std::string& purpose, Fill fill) {
  try {
    Handle handle(soname, purpose);
    Api api;
    fill(handle, api);
    handle.Keep();
    return api;
  } catch (const std::runtime_error& e) {
    throw Error(e.what());
  }
}

// The table `load()` returns, loaded on the first call (thread-safe; the
// loaded case is one atomic load, and the mutex only orders the first load).
// A failed load throws and is tried again at the next call.
template <class Api>
const Api& LoadedOnce(Api (*load)()) {
  static std::atomic<const Api*> ready{nullptr};
  if (const Api* api = ready.load(std::memory_order_acquire)) return *api;
  static std::mutex mutex;
  static Api loaded;
  const std::lock_guard lock(mutex);
  if (ready.load(std::memory_order_relaxed) == nullptr) {
    loaded = load();
    ready.store(&loaded, std::memory_order_release);
  }
  return loaded;
}

}  // namespace brine::shared_library
