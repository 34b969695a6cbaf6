// The rules every Queues backend applies before touching its database.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/store/queues.h"

namespace brine::store::detail {

// Throws std::invalid_argument unless IsValidQueueName(queue).
void CheckName(const std::string& queue);

// The storage JSON of each item. Throws std::invalid_argument for an item
// nested deeper than kMaxJsonDepth (ParseJson could not read it back).
std::vector<std::string> ItemTexts(std::span<const Value> items);

}  // namespace brine::store::detail

namespace brine::store {

// The queues of the PostgreSQL database at libpq URI `uri` (postgres_queues.cpp);
// throws as OpenQueues documents.
std::unique_ptr<Queues> OpenPostgresQueues(const std::string& uri, const OpenOptions& options);

}  // namespace brine::store
