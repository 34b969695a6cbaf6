// The SQL functions SQLite's queries call, registered on brine's own
// connections only (RegisterSqlFunctions). Each is deterministic, reads its
// arguments as UTF-8 text, and answers NULL or 0 for a NULL argument; a glob
// is core's FnMatch (Python's fnmatch.fnmatchcase), the one glob engine.
#include "sqlite_backend.h"

#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"

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

// brine_first_match(patterns_json, text): the index of the first glob of the
// JSON list that matches text, -1 when none does or text is NULL. Retention
// by class: the first rule that matches decides.
void SqlFirstMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int plen = 0, tlen = 0;
  const char* patterns = ArgText(argv[0], &plen);
  const char* text = ArgText(argv[1], &tlen);
  if (patterns == nullptr || text == nullptr) {
    sqlite3_result_int(ctx, -1);
    return;
  }
  try {
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const std::string_view t(text, static_cast<std::size_t>(tlen));
    int i = 0;
    for (const Value& p : list.as_list()) {
      if (FnMatch(p.as_string(), t)) {
        sqlite3_result_int(ctx, i);
        return;
      }
      ++i;
    }
    sqlite3_result_int(ctx, -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

}  // namespace

void RegisterSqlFunctions(SQLite::Database& db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  sqlite3_create_function_v2(db.getHandle(), "brine_jid_is_time", 1, flags, nullptr, SqlJidIsTime, nullptr, nullptr,
                             nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_first_match", 2, flags, nullptr, SqlFirstMatch, nullptr, nullptr,
                             nullptr);
}

}  // namespace brine::store::detail
