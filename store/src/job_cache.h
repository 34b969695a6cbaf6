// JobCache: the one implementation of Store (store.h), Salt's job cache
// semantics over a Backend (backend.h). OpenStore picks the backend.
#pragma once

#include <memory>

#include "backend.h"
#include "brine/store/store.h"

namespace brine::store::detail {

// A Store over `backend` (opened with `options`, whose clock and access it
// uses). Never throws.
[[nodiscard]] std::unique_ptr<Store> MakeJobCache(std::unique_ptr<Backend> backend, const OpenOptions& options);

}  // namespace brine::store::detail
