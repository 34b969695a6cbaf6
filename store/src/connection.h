// Opening a SQLite connection the way the store needs it, and the one place
// where SQLite errors become brine::store errors.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <SQLiteCpp/Database.h>

#include "backend.h"
#include "brine/store/store.h"

namespace brine::store::detail {

// Opens `path` with `options`, applies pending migrations (read-write only),
// then sets WAL, synchronous, busy timeout, cache size and the WAL size limit.
// Throws as OpenStore documents.
std::unique_ptr<SQLite::Database> OpenConnection(const std::filesystem::path& path,
                                                 const OpenOptions& options);

// `path` made absolute as a `file:` URI (every byte but letters, digits and
// `/._-` percent-encoded), for SQLite's URI options: "?mode=ro",
// "?immutable=1".
[[nodiscard]] std::string FileUri(const std::filesystem::path& path);

// Rethrows the exception being handled as a store error, with `context`
// prefixed to SQLite's message: BUSY/LOCKED -> BusyError; CORRUPT/NOTADB ->
// FatalError; during a write FULL/IOERR/CANTOPEN/READONLY -> WriteFailedError;
// store errors pass through unchanged; anything else -> StoreError.
[[noreturn]] void RethrowAsStoreError(std::string_view context, Op op);

}  // namespace brine::store::detail
