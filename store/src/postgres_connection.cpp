#include "postgres_connection.h"


#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>

#include "brine/store/postgres_stats.h"
#include "libpq.h"

namespace brine::store::detail {

namespace {
std::atomic<std::int64_t> round_trips{0};
}  // namespace

std::int64_t PgRoundTripCount() { return round_trips.load(std::memory_order_relaxed); }

}  // namespace brine::store::detail

namespace brine::store {
std::int64_t PostgresRoundTrips() { return detail::PgRoundTripCount(); }
}  // namespace brine::store

namespace brine::store::detail {

PgResult::~PgResult() {
  if (r_ != nullptr) Libpq().PQclear(r_);
}

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) Libpq().PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

int PgResult::rows() const { return Libpq().PQntuples(r_); }

int PgResult::fields() const { return Libpq().PQnfields(r_); }

bool PgResult::null(int row, int field) const { return Libpq().PQgetisnull(r_, row, field) != 0; }

std::string_view PgResult::text(int row, int field) const {
  return std::string_view(Libpq().PQgetvalue(r_, row, field), static_cast<std::size_t>(Libpq().PQgetlength(r_, row, field)));
}

std::int64_t PgResult::integer(int row, int field) const { return std::strtoll(Libpq().PQgetvalue(r_, row, field), nullptr, 10); }

std::int64_t PgResult::affected() const {
  const char* n = Libpq().PQcmdTuples(r_);
  return n[0] == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

namespace {

// The rule of store.h's CheckServerDatabase holds for every connection, so
// no caller can connect with a secret from a config file by going round it.
pg_conn* Connect(const std::string& uri) {
  CheckServerDatabase(uri);
  return Libpq().PQconnectdb(uri.c_str());
}

}  // namespace

PgConnection::PgConnection(const std::string& uri) : conn_(Connect(uri)) {
  if (conn_ == nullptr) throw StoreError("opening the PostgreSQL database: out of memory");
  if (Libpq().PQstatus(conn_) != CONNECTION_OK) {
    // libpq's message names host and database, never the password.
    const std::string message = "opening " + Where() + ": " + Libpq().PQerrorMessage(conn_);
    Libpq().PQfinish(conn_);
    conn_ = nullptr;
    throw PgError(message, "08001", true);
  }
  // Notices (e.g. "relation already exists, skipping") are not brine's to print.
  Libpq().PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
}

PgConnection::~PgConnection() {
  if (conn_ != nullptr) Libpq().PQfinish(conn_);
}

std::string PgConnection::Where() const {
  const char* db = Libpq().PQdb(conn_);
  const char* host = Libpq().PQhost(conn_);
  return std::string("PostgreSQL database ") + (db ? db : "?") + " on " + (host && *host ? host : "the local socket");
}

bool PgConnection::in_transaction() const { return Libpq().PQtransactionStatus(conn_) != PQTRANS_IDLE; }

// A failure of libpq itself (no result, a send that failed): the connection
// is gone or unusable even when libpq has not marked it bad yet (in pipeline
// mode it may not have when a send to a killed server failed).
PgError PgConnection::Failure(const char* what) const {
  std::string message = Libpq().PQerrorMessage(conn_);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return PgError(std::string(what) + ": " + message, "", true);
}

namespace {

PgError ResultFailure(pg_conn* conn, PGresult* r) {
  const char* state = Libpq().PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string message = Libpq().PQresultErrorMessage(r);
  if (message.empty()) message = Libpq().PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  // No SQLSTATE: libpq made the error itself ("server closed the connection
  // unexpectedly"), which is a lost connection.
  const char* table = Libpq().PQresultErrorField(r, PG_DIAG_TABLE_NAME);
  return PgError(message, state ? state : "", Libpq().PQstatus(conn) != CONNECTION_OK || state == nullptr,
                 table ? table : "");
}

}  // namespace

PgResult PgConnection::Exec(const std::string& sql, const std::vector<PgParam>& params) {
  round_trips.fetch_add(1, std::memory_order_relaxed);
  PGresult* r = nullptr;
  if (params.empty()) {
    r = Libpq().PQexec(conn_, sql.c_str());
  } else {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const PgParam& p : params) {
      values.push_back(p.value ? p.value->data() : nullptr);
      lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
      formats.push_back(p.binary ? 1 : 0);
    }
    // Text parameters are sent with their length: libpq reads them as
    // NUL-terminated only when the format is text, so copy those.
    std::vector<std::string> copies;
    copies.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].value && !params[i].binary) {
        copies.emplace_back(*params[i].value);
        values[i] = copies.back().c_str();
      }
    }
    r = Libpq().PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                     formats.data(), 0);
  }
  if (r == nullptr) throw Failure("PostgreSQL");
  const ExecStatusType st = Libpq().PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    PgError e = ResultFailure(conn_, r);
    Libpq().PQclear(r);
    throw e;
  }
  return PgResult(r);
}

std::vector<PgResult> PgConnection::ExecPipeline(const std::vector<PgStatement>& statements) {
  std::vector<PgResult> results;
  results.reserve(statements.size());
  for (std::size_t done = 0; done < statements.size(); done += kPipelineChunk) {
    const std::size_t end = std::min(statements.size(), done + kPipelineChunk);
    round_trips.fetch_add(1, std::memory_order_relaxed);
    if (Libpq().PQenterPipelineMode(conn_) == 0) throw Failure("PostgreSQL pipeline");
    // Statements prepared in this round trip, in the order of their results
    // (each ahead of its first execution): the names count as prepared only
    // once the server said so, since a failure earlier in the pipeline skips them.
    std::vector<std::pair<std::size_t, std::string>> preparing;  // statement index, SQL
    std::unordered_map<std::string, std::string> named;          // SQL -> name, this round trip
    std::optional<PgError> failed;
    try {
      for (std::size_t i = done; i < end; ++i) {
        const PgStatement& st = statements[i];
        std::vector<const char*> values;
        std::vector<int> lengths, formats;
        values.reserve(st.params.size());
        for (const PgStatement::Param& p : st.params) {
          values.push_back(p.value ? p.value->c_str() : nullptr);
          lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
          formats.push_back(p.binary ? 1 : 0);
        }
        const int n = static_cast<int>(st.params.size());
        const std::string* name = nullptr;
        if (st.reuse) {
          if (auto it = prepared_.find(st.sql); it != prepared_.end()) {
            name = &it->second;
          } else if (auto at = named.find(st.sql); at != named.end()) {
            name = &at->second;
          } else if (prepared_.size() + named.size() < kMaxPrepared) {
            name = &named.emplace(st.sql, "brine_" + std::to_string(++prepare_count_)).first->second;
            if (Libpq().PQsendPrepare(conn_, name->c_str(), st.sql.c_str(), n, nullptr) == 0) throw Failure("PostgreSQL");
            preparing.emplace_back(i, st.sql);
          }
        }
        const int sent = name != nullptr
                             ? Libpq().PQsendQueryPrepared(conn_, name->c_str(), n, values.data(), lengths.data(),
                                                           formats.data(), 0)
                             : Libpq().PQsendQueryParams(conn_, st.sql.c_str(), n, nullptr, values.data(),
                                                         lengths.data(), formats.data(), 0);
        if (sent == 0) throw Failure("PostgreSQL");
      }
      if (Libpq().PQpipelineSync(conn_) == 0) throw Failure("PostgreSQL");
      // One result (then a NULL) per prepare and per statement, then the sync's.
      auto next = [&]() -> PGresult* {
        PGresult* r = Libpq().PQgetResult(conn_);
        if (r == nullptr) throw Failure("PostgreSQL");
        return r;
      };
      auto drain = [&] {
        while (PGresult* r = Libpq().PQgetResult(conn_)) Libpq().PQclear(r);
      };
      std::size_t prepare = 0;
      for (std::size_t i = done; i < end; ++i) {
        if (prepare < preparing.size() && preparing[prepare].first == i) {
          PGresult* r = next();
          const ExecStatusType st = Libpq().PQresultStatus(r);
          if (st == PGRES_COMMAND_OK) {
            prepared_.emplace(preparing[prepare].second, named.at(preparing[prepare].second));
          } else if (st != PGRES_PIPELINE_ABORTED && !failed) {
            failed = ResultFailure(conn_, r);
          }
          Libpq().PQclear(r);
          drain();
          ++prepare;
        }
        PGresult* r = next();
        const ExecStatusType st = Libpq().PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
          results.emplace_back(r);
        } else {
          if (st != PGRES_PIPELINE_ABORTED && !failed) failed = ResultFailure(conn_, r);
          Libpq().PQclear(r);
        }
        drain();
      }
      PGresult* sync = next();
      Libpq().PQclear(sync);
    } catch (...) {
      // A broken connection: leave pipeline mode as far as libpq lets us.
      Libpq().PQexitPipelineMode(conn_);
      throw;
    }
    if (Libpq().PQexitPipelineMode(conn_) == 0 && !failed) throw Failure("PostgreSQL pipeline");
    if (failed) throw *failed;
  }
  return results;
}

void PgConnection::StartRows(const std::string& sql, const std::vector<PgParam>& params) {
  round_trips.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::string> copies;
  std::vector<const char*> values;
  copies.reserve(params.size());
  for (const PgParam& p : params) {
    if (p.value) {
      copies.emplace_back(*p.value);
      values.push_back(copies.back().c_str());
    } else {
      values.push_back(nullptr);
    }
  }
  if (Libpq().PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), nullptr,
                        nullptr, 0) == 0) {
    throw Failure("PostgreSQL");
  }
  Libpq().PQsetSingleRowMode(conn_);
}

std::optional<PgResult> PgConnection::NextRow() {
  PGresult* r = Libpq().PQgetResult(conn_);
  if (r == nullptr) return std::nullopt;
  const ExecStatusType st = Libpq().PQresultStatus(r);
  if (st == PGRES_SINGLE_TUPLE) return PgResult(r);
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
    Libpq().PQclear(r);
    // Drain: the query is done after its final result.
    while ((r = Libpq().PQgetResult(conn_)) != nullptr) Libpq().PQclear(r);
    return std::nullopt;
  }
  PgError e = ResultFailure(conn_, r);
  Libpq().PQclear(r);
  while ((r = Libpq().PQgetResult(conn_)) != nullptr) Libpq().PQclear(r);
  throw e;
}

void RethrowPgAsStoreError(std::string_view context, Op op) {
  const std::string prefix = std::string(context) + ": ";
  try {
    throw;
  } catch (const StoreError&) {
    throw;
  } catch (const PgError& e) {
    const std::string msg = prefix + e.what();
    const std::string& s = e.sqlstate();
    if (s == "40001" || s == "40P01" || s == "55P03") throw BusyError(msg);
    // A return another writer stored first, behind no job lock: the batch's
    // INSERT of returns takes no ON CONFLICT (postgres_pipeline.cpp,
    // AppendReturnInserts), so the replay, which reads the job again, counts
    // it as a repeat. ret's partitions are ret_pYYYYMMDD and ret_default.
    if (s == "23505" && (e.table() == "ret" || e.table().starts_with("ret_"))) throw BusyError(msg);
    if (s == "XX001" || s == "XX002") throw FatalError(msg);
    const bool resources = s.starts_with("53") || s.starts_with("57P") || s.starts_with("58") || s.starts_with("08");
    if (op == Op::kWrite && (e.connection_lost() || resources)) throw WriteFailedError(msg);
    throw StoreError(msg);
  } catch (const std::exception& e) {
    throw StoreError(prefix + e.what());
  }
}

}  // namespace brine::store::detail
