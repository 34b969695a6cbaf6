// The "no secret in the URI" rule (store.h, CheckServerDatabase) and the
// masking of a URI for logs (RedactDatabase), both over libpq's own parser:
// a rule that read the URI text itself was bypassed by `%70assword=`,
// `passw%6Frd=` and `sslpassword=` (issue 25, item 14), since libpq decodes
// percent-encoded keys and knows more secrets than one.
#include <memory>
#include <string>
#include <vector>

#include "brine/store/errors.h"
#include "brine/store/store.h"
#include "libpq.h"

namespace brine::store {
namespace {

using detail::Libpq;

struct ConninfoFree {
  void operator()(PQconninfoOption* o) const { Libpq().PQconninfoFree(o); }
};
using Conninfo = std::unique_ptr<PQconninfoOption, ConninfoFree>;

// libpq marks a secret option with dispchar "*" ("password field - hide
// value"): password and sslpassword today, and whatever a later libpq adds.
// The two named ones count even should a libpq forget the mark.
bool IsSecret(const PQconninfoOption& o) {
  const std::string_view key = o.keyword != nullptr ? o.keyword : "";
  return (o.dispchar != nullptr && o.dispchar[0] == '*') || key == "password" || key == "sslpassword";
}

// The parsed options, or nullptr with `error` set (libpq's message is not
// kept: it may quote the URI).
Conninfo Parse(const std::string& uri, std::string& error) {
  char* message = nullptr;
  Conninfo parsed(Libpq().PQconninfoParse(uri.c_str(), &message));
  if (message != nullptr) Libpq().PQfreemem(message);
  if (!parsed) error = "libpq cannot parse it";
  return parsed;
}

// libpq's key=value form: a value in single quotes, \ and ' escaped.
std::string Quoted(const char* value) {
  std::string out = "'";
  for (const char* c = value; *c != '\0'; ++c) {
    if (*c == '\\' || *c == '\'') out += '\\';
    out += *c;
  }
  return out + "'";
}

}  // namespace

void CheckServerDatabase(const std::filesystem::path& database) {
  if (!IsServerDatabase(database)) return;
  std::string error;
  const Conninfo parsed = Parse(database.native(), error);
  if (!parsed) throw StoreError("a postgresql:// URI is refused: " + error);
  std::vector<std::string> secrets;
  for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
    if (o->val != nullptr && IsSecret(*o)) secrets.emplace_back(o->keyword);
  }
  if (secrets.empty()) return;
  std::string names;
  for (const std::string& s : secrets) names += (names.empty() ? "" : ", ") + s;
  throw StoreError("a password in the URI is refused (" + names + " in " + RedactDatabase(database) +
                   "); put it in ~/.pgpass, PGPASSFILE or passfile=");
}

std::string RedactDatabase(const std::filesystem::path& database) {
  if (!IsServerDatabase(database)) return database.string();
  try {
    std::string error;
    const Conninfo parsed = Parse(database.native(), error);
    if (!parsed) return "a postgresql:// URI (not shown: " + error + ")";
    bool secret = false;
    std::string rebuilt;
    for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
      if (o->val == nullptr) continue;
      const bool hide = IsSecret(*o);
      secret = secret || hide;
      rebuilt += (rebuilt.empty() ? "" : " ") + std::string(o->keyword) + "=" + (hide ? "'********'" : Quoted(o->val));
    }
    return secret ? rebuilt : database.string();
  } catch (const std::exception& e) {
    return std::string("a postgresql:// URI (not shown: ") + e.what() + ")";
  }
}

}  // namespace brine::store
