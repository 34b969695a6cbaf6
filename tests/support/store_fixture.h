// The store suite's fixture (store_test.cpp, store_writes_test.cpp,
// store_maintenance_test.cpp): a fresh store on SQLite, or on the process's
// private PostgreSQL server when BRINE_TEST_BACKEND is "postgresql", and the
// loads the cases write.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/store/store.h"
#include "support/master_process.h"
#include "support/postgres_server.h"
#include "support/temp_dir.h"

namespace brine::test::store_fixture {

using brine::FakeClock;
using brine::store::OpenOptions;
using brine::store::OpenStore;
using brine::store::Store;

inline const brine::Micros kT0 = brine::FromUnixMicros(1704110400000000);  // 2024-01-01 12:00:00 UTC

Value J(const std::string& text);

// A return load as a minion sends it.
Value Ret(const std::string& jid, const std::string& minion, Value ret_value, int retcode = 0);

std::vector<std::string> Strings(std::initializer_list<const char*> l);

// The suite runs on SQLite, and on PostgreSQL when BRINE_TEST_BACKEND is
// "postgresql" (ctest's store:postgresql, store_writes:postgresql and
// store_maintenance:postgresql run it so, leaving out the cases
// tagged [sqlite], which test what only SQLite has).
bool OnPostgres();

struct Fixture {
  TempDir dir;
  FakeClock clock{kT0};
  // A SQLite file, or a fresh database on this process's PostgreSQL server.
  std::filesystem::path path = OnPostgres() ? std::filesystem::path(PostgresServer::Shared().CreateDatabase())
                                            : dir / "brine.sqlite";
  [[nodiscard]] bool sqlite() const { return !OnPostgres(); }
  // Runs SQL on the store's database: rows a line, fields separated by '|'.
  [[nodiscard]] std::string Q(const std::string& sql) const {
    return sqlite() ? brine::test::Sql(path, sql) : PostgresServer::Shared().Query(path.native(), sql);
  }
  OpenOptions Options() {
    OpenOptions o;
    o.clock = &clock;
    o.master_id = "salt_master";
    return o;
  }
  std::unique_ptr<Store> Open() { return OpenStore(path, Options()); }
  // An SQL expression that is 1 when `column` holds the JSON `json`, else 0
  // (text on SQLite; on PostgreSQL the views are jsonb, which compares by value).
  [[nodiscard]] std::string JsonEq(const std::string& column, const std::string& json) const {
    std::string quoted;
    for (char c : json) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return sqlite() ? "(" + column + " = '" + quoted + "')" : "(" + column + " = '" + quoted + "'::jsonb)::int";
  }
};

}  // namespace brine::test::store_fixture
