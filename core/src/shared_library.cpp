#include "brine/core/shared_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace brine::shared_library {

Handle::Handle(const char* soname, const std::string& purpose) : soname_(soname) {
  handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error(std::string("cannot load ") + soname + " " + purpose + ": " +
                             (why != nullptr ? why : "unknown error"));
  }
}

Handle::~Handle() {
  if (!kept_) dlclose(handle_);
}

void* Handle::Symbol(const char* name, const std::string& requirement) const {
  void* address = dlsym(handle_, name);
  if (address == nullptr) {
    throw std::runtime_error(std::string(soname_) + " has no " + name + " (" + requirement + ")");
  }
  return address;
}

}  // namespace brine::shared_library
