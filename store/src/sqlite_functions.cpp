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

// --- SQL functions used by GetJids (registered on our connections only) -----

const char* ArgText(sqlite3_value* v, int* len) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(v));
  *len = sqlite3_value_bytes(v);
  return text;
}

// brine_fnmatch(patterns_json, text): any glob of the JSON list matches text.
void SqlFnmatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int plen = 0, tlen = 0;
  const char* patterns = ArgText(argv[0], &plen);
  const char* text = ArgText(argv[1], &tlen);
  if (patterns == nullptr || text == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const std::string_view t(text, static_cast<std::size_t>(tlen));
    for (const Value& p : list.as_list()) {
      if (FnMatch(p.as_string(), t)) {
        sqlite3_result_int(ctx, 1);
        return;
      }
    }
    sqlite3_result_int(ctx, 0);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// brine_tgt_match(load_json, patterns_json): the load's tgt (a string, or a
// list whose elements are tried in turn) matches any glob.
void SqlTargetMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int llen = 0, plen = 0;
  const char* load_text = ArgText(argv[0], &llen);
  const char* patterns = ArgText(argv[1], &plen);
  if (load_text == nullptr || patterns == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value load = ParseJson(std::string_view(load_text, static_cast<std::size_t>(llen)));
    const Value list = ParseJson(std::string_view(patterns, static_cast<std::size_t>(plen)));
    const Value* tgt = load.Find("tgt");
    auto any = [&](std::string_view t) {
      for (const Value& p : list.as_list()) {
        if (FnMatch(p.as_string(), t)) return true;
      }
      return false;
    };
    bool hit = false;
    if (tgt != nullptr && tgt->is_string()) {
      hit = any(tgt->as_string());
    } else if (tgt != nullptr && tgt->is_list()) {
      for (const Value& t : tgt->as_list()) {
        if (t.is_string() && any(t.as_string())) hit = true;
      }
    }
    sqlite3_result_int(ctx, hit ? 1 : 0);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// brine_meta_match(metadata_json, wanted_json): Salt's search_metadata rule,
// any key of wanted present in metadata with an equal value.
void SqlMetadataMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  int mlen = 0, wlen = 0;
  const char* meta = ArgText(argv[0], &mlen);
  const char* wanted = ArgText(argv[1], &wlen);
  if (meta == nullptr || wanted == nullptr) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  try {
    const Value m = ParseJson(std::string_view(meta, static_cast<std::size_t>(mlen)));
    const Value w = ParseJson(std::string_view(wanted, static_cast<std::size_t>(wlen)));
    int hit = 0;
    if (w.is_map()) {
      for (const auto& [k, v] : w.as_map()) {
        const Value* have = m.Find(k);
        if (have != nullptr && *have == v) hit = 1;
      }
    }
    sqlite3_result_int(ctx, hit);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
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
  sqlite3_create_function_v2(db.getHandle(), "brine_fnmatch", 2, flags, nullptr, SqlFnmatch,
                             nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_tgt_match", 2, flags, nullptr, SqlTargetMatch,
                             nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_meta_match", 2, flags, nullptr,
                             SqlMetadataMatch, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_jid_is_time", 1, flags, nullptr, SqlJidIsTime, nullptr, nullptr,
                             nullptr);
  sqlite3_create_function_v2(db.getHandle(), "brine_first_match", 2, flags, nullptr, SqlFirstMatch, nullptr, nullptr,
                             nullptr);
}

}  // namespace brine::store::detail
