// What the PostgreSQL backend costs on the wire, for tests and benches: the
// batching contract (docs/scaling.md) is a number of round trips, which no
// timing on a loaded machine shows reliably.
#pragma once

#include <cstdint>

namespace brine::store {

// Round trips this process has made to PostgreSQL servers so far, over every
// store and queue it opened: each statement sent on its own, and each
// pipeline of deferred writes, counts one.
std::int64_t PostgresRoundTrips();

}  // namespace brine::store
