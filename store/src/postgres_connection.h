// A libpq connection the way the store needs it, and the one place where
// PostgreSQL errors become brine::store errors. libpq over libpqxx: the store
// needs a handful of calls (connect, parameterised exec, results), its own
// error classes and no exceptions from the driver; libpqxx would add a C++
// dependency and its own exception hierarchy to translate for nothing more.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "brine/store/store.h"

struct pg_conn;
struct pg_result;

namespace brine::store::detail {

// Thrown by PgConnection for a server or connection error; Rethrow turns it
// into a store error.
class PgError : public std::runtime_error {
 public:
  PgError(const std::string& message, std::string sqlstate, bool connection_lost, std::string table = {})
      : std::runtime_error(message),
        sqlstate_(std::move(sqlstate)),
        connection_lost_(connection_lost),
        table_(std::move(table)) {}
  [[nodiscard]] const std::string& sqlstate() const { return sqlstate_; }
  [[nodiscard]] bool connection_lost() const { return connection_lost_; }
  // The table the error is about, when the server names one (a constraint's).
  [[nodiscard]] const std::string& table() const { return table_; }

 private:
  std::string sqlstate_;
  bool connection_lost_;
  std::string table_;
};

// One query result; rows and fields as text.
class PgResult {
 public:
  explicit PgResult(pg_result* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  ~PgResult();
  [[nodiscard]] int rows() const;
  [[nodiscard]] int fields() const;
  [[nodiscard]] bool null(int row, int field) const;
  [[nodiscard]] std::string_view text(int row, int field) const;
  [[nodiscard]] std::int64_t integer(int row, int field) const;
  [[nodiscard]] std::int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched

 private:
  pg_result* r_;
};

// A parameter: text, or NULL; `binary` sends bytes as they are (bytea).
struct PgParam {
  std::optional<std::string_view> value;
  bool binary = false;
  static PgParam Null() { return {}; }
};

// A statement kept to be sent later: it owns its parameters.
struct PgStatement {
  struct Param {
    std::optional<std::string> value;  // nullopt: NULL
    bool binary = false;
  };
  std::string sql;
  std::vector<Param> params;
  // Parsed and planned once per connection (a named prepared statement),
  // then only executed: for SQL whose text never varies with the data,
  // every value being a parameter.
  bool reuse = false;
};

class PgConnection {
 public:
  // Connects with libpq (password from .pgpass, PGPASSFILE or passfile=, never
  // from brine) and checks the server. Throws StoreError naming the host and
  // database, never the URI (it could hold a password).
  explicit PgConnection(const std::string& uri);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one statement (or, without params, several). Throws PgError.
  PgResult Exec(const std::string& sql, const std::vector<PgParam>& params = {});
  // Sends `statements` in libpq's pipeline mode, one round trip per
  // kPipelineChunk statements, and returns their results in order. A
  // statement marked `reuse` is prepared the first time this connection
  // sends its text (in the same round trip), and executed by name from then
  // on; past kMaxPrepared texts, the rest go unnamed. The first
  // failing statement's error is thrown (the server skips the rest up to the
  // chunk's sync; inside a transaction, that transaction has failed).
  std::vector<PgResult> ExecPipeline(const std::vector<PgStatement>& statements);
  // Statements per pipeline sync. Bounded because the connection blocks: the
  // server's small per-statement replies must fit the socket buffers while
  // libpq is still sending (libpq's docs on pipeline mode and deadlock).
  static constexpr std::size_t kPipelineChunk = 1000;
  // Prepared statements one connection keeps (a bound on a caller that
  // marks varying SQL `reuse` by mistake).
  static constexpr std::size_t kMaxPrepared = 64;

  // Starts a row-by-row read (PQsetSingleRowMode): call Next until nullopt.
  void StartRows(const std::string& sql, const std::vector<PgParam>& params);
  std::optional<PgResult> NextRow();

  [[nodiscard]] bool in_transaction() const;
  // libpq's connection, for the SQL console's own calls (sql_postgres.cpp).
  [[nodiscard]] pg_conn* handle() const { return conn_; }
  // Where this connection goes, for messages: "database <db> on <host>".
  [[nodiscard]] std::string Where() const;

 private:
  pg_conn* conn_;
  // SQL text -> the name it is prepared under on this connection.
  std::unordered_map<std::string, std::string> prepared_;
  std::int64_t prepare_count_ = 0;  // names are never reused
  PgError Failure(const char* what) const;
};

// Round trips to any PostgreSQL server this process made so far (Exec,
// StartRows and each pipeline chunk count one): what the batching promises
// (brine/store/postgres_stats.h).
std::int64_t PgRoundTripCount();

// The schema version of the connected database (0: none).
int SchemaVersionOf(PgConnection& db);

// Runs `session` (statements without parameters, such as SETs) and reads the
// schema version in one round trip; 0 when there is no brine_schema table.
// For a reader: on a failure the session's statements are undone too.
int ReadOnlySchemaVersion(PgConnection& db, const std::string& session);

// Brings the database to the latest migrations/postgres version, in one
// transaction under an advisory lock: a second master starting at the same
// time waits, then finds the schema current. Throws TooNewError, FatalError
// (tables but no brine schema) or PgError.
void ApplyPostgresMigrations(PgConnection& db);

// Rethrows the exception being handled as a store error with `context`
// prefixed: during Op::kWrite a lost connection, a server shutting down or
// out of resources (disk full, SQLSTATE classes 53, 57P, 58) ->
// WriteFailedError (replay the batch on a new Store); lock timeouts,
// serialization failures and deadlocks -> BusyError; data corruption ->
// FatalError; store errors pass through; anything else -> StoreError.
[[noreturn]] void RethrowPgAsStoreError(std::string_view context, Op op);

}  // namespace brine::store::detail
