// The SQL functions SQLite's queries call, registered on brine's own
// connections only (RegisterSqlFunctions). Each is deterministic, reads its
// arguments as UTF-8 text, and answers NULL or 0 for a NULL argument. Globs
// are no SQL function's business: core's FnMatch decides them above the
// backends (job_query.cpp, retention_plan.cpp).
#include "sqlite_backend.h"

#include "brine/core/jid.h"

namespace brine::store::detail {
namespace {

const char* ArgText(sqlite3_value* v, int* len) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(v));
  *len = sqlite3_value_bytes(v);
  return text;
}

// brine_jid_is_time(jid): 1 when the jid names a time (JidToMicros reads
// it), else 0. Retention ages only those by their text; every other jid
// ("12345", "0", "req") by when brine first saw it.
void SqlJidIsTime(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  int len = 0;
  const char* jid = ArgText(argv[0], &len);
  sqlite3_result_int(ctx, jid != nullptr && JidToMicros(std::string_view(jid, static_cast<std::size_t>(len))) ? 1 : 0);
}

}  // namespace

void RegisterSqlFunctions(SQLite::Database& db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  sqlite3_create_function_v2(db.getHandle(), "brine_jid_is_time", 1, flags, nullptr, SqlJidIsTime, nullptr, nullptr,
                             nullptr);
}

}  // namespace brine::store::detail
