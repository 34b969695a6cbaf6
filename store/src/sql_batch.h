// RunEach: one statement run for each of several parameter sets in one call
// of a SqlEngine, so on one connection. The engine opens a connection per
// call (sql.h), which costs about half a millisecond on SQLite and more on
// PostgreSQL: a page that asks the same question of 50 minions asks it in
// one call, the statement repeated with each set's parameters renamed.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/sql.h"

namespace brine::store::detail {

// The rows of `sql` for each of `sets` (a statement's :name parameters), in
// order. Every parameter `sql` names must be in each set, and no name of the
// text may end in "_<n>" (each set's are renamed so). Throws as SqlEngine::Run.
[[nodiscard]] std::vector<std::vector<std::vector<Value>>> RunEach(const SqlEngine& engine, const std::string& sql,
                                                                   const std::vector<ValueMap>& sets,
                                                                   std::chrono::milliseconds timeout);

}  // namespace brine::store::detail
