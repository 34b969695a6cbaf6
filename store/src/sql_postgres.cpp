// The SQL console on a PostgreSQL store (contract: brine/store/sql.h).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "libpq.h"
#include "postgres_connection.h"
#include "sql_internal.h"

namespace brine::store::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string Seconds(std::chrono::milliseconds ms) {
  const auto n = ms.count();
  if (n % 1000 == 0) return std::to_string(n / 1000) + " s";
  return std::to_string(n) + " ms";
}

// Sends PQcancel when the budget runs out or the caller's SqlCancel is set,
// and again every 100 ms until the call ends (a cancel that reaches the
// server between two statements is ignored there). A thread of its own:
// the calling thread is blocked in libpq.
class Watchdog {
 public:
  enum class Stop { kNone, kTimeout, kCancel };

  Watchdog(pg_conn* conn, Clock::time_point deadline, const SqlCancel* cancel)
      : cancel_handle_(Libpq().PQgetCancel(conn)), deadline_(deadline), cancel_(cancel) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (cancel_handle_ != nullptr) Libpq().PQfreeCancel(cancel_handle_);
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  [[nodiscard]] Stop stop() const { return stop_.load(); }
  // Cancels the running statement now, from the calling thread (rows past
  // the limit are not wanted).
  void CancelStatement() {
    std::lock_guard lock(cancel_mu_);
    char error[256];
    if (cancel_handle_ != nullptr) (void)Libpq().PQcancel(cancel_handle_, error, sizeof error);
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(stop_.load() == Stop::kNone ? 20 : 100));
      if (done_) break;
      if (stop_.load() == Stop::kNone) {
        if (cancel_ != nullptr && cancel_->cancelled()) {
          stop_.store(Stop::kCancel);
        } else if (Clock::now() >= deadline_) {
          stop_.store(Stop::kTimeout);
        }
      }
      if (stop_.load() != Stop::kNone) {
        lock.unlock();
        CancelStatement();
        lock.lock();
      }
    }
  }

  pg_cancel* cancel_handle_;
  std::mutex cancel_mu_;  // one PQcancel at a time on cancel_handle_
  Clock::time_point deadline_;
  const SqlCancel* cancel_;
  std::atomic<Stop> stop_{Stop::kNone};
  std::mutex mu_;  // guards done_
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Byte offset of the `chars`-th character (from 0) of `text`.
std::size_t ByteOfChar(std::string_view text, std::size_t chars) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (seen == chars) return i;
      ++seen;
    }
  }
  return i;
}

Value FieldValue(PGresult* r, int row, int field, Oid type) {
  if (Libpq().PQgetisnull(r, row, field) != 0) return Value();
  const char* v = Libpq().PQgetvalue(r, row, field);
  const std::string_view text(v, static_cast<std::size_t>(Libpq().PQgetlength(r, row, field)));
  switch (type) {
    case 16: return Value(text == "t");                                           // bool
    case 20: case 21: case 23: case 26: return Value(std::strtoll(v, nullptr, 10));  // int8 int2 int4 oid
    case 700: case 701: return Value(std::strtod(v, nullptr));                   // float4 float8
    case 17: return Value(std::string(text.starts_with("\\x") ? text.substr(2) : text));  // bytea, hex form
    default: return Value(std::string(text));
  }
}

class PostgresSqlEngine final : public SqlEngine {
 public:
  explicit PostgresSqlEngine(std::string uri) : uri_(std::move(uri)) {}

  void Run(std::string_view text, const ValueMap& params, const SqlOptions& options,
           const std::function<void(SqlResult&&)>& each, const SqlCancel* cancel) const override {
    std::unique_ptr<PgConnection> conn;
    try {
      conn = std::make_unique<PgConnection>(uri_);
    } catch (...) {
      RethrowPgAsStoreError("brine.sql", Op::kRead);
    }
    std::vector<ScriptStatement> statements;
    if (options.statements == SqlOptions::Statements::kMany) {
      statements = SplitPostgresScript(text);
    } else if (!SplitPostgresScript(text).empty()) {
      // The server refuses several statements in one extended-protocol call.
      statements.push_back({text, 0});
    }
    Watchdog watchdog(conn->handle(), Clock::now() + options.timeout, cancel);
    auto stopped = [&] {
      if (watchdog.stop() == Watchdog::Stop::kCancel) throw SqlCancelledError("the query was cancelled");
      if (watchdog.stop() == Watchdog::Stop::kTimeout) {
        throw SqlTimeoutError("the query ran out of time: it was stopped after its budget of " +
                              Seconds(options.timeout));
      }
    };
    try {
      for (const ScriptStatement& statement : statements) {
        stopped();
        each(RunOne(*conn, watchdog, text, statement, params, options.row_limit));
      }
    } catch (const SqlError&) {
      throw;
    } catch (const StoreError&) {
      throw;
    } catch (...) {
      stopped();
      RethrowPgAsStoreError("brine.sql", Op::kRead);
    }
    stopped();
  }

  std::vector<SqlView> Views() const override {
    try {
      PgConnection conn(uri_);
      std::string names = "{";
      for (const std::string& n : DocumentedViews()) names += (names.size() > 1 ? "," : "") + n;
      names += "}";
      PgResult r = conn.Exec(
          "SELECT table_name::text, column_name::text FROM information_schema.columns "
          "WHERE table_schema = current_schema() AND table_name = ANY($1::text[]) "
          "ORDER BY table_name, ordinal_position",
          {PgParam{names}});
      std::vector<SqlView> out;
      for (const std::string& n : DocumentedViews()) {
        SqlView view{n, {}};
        for (int i = 0; i < r.rows(); ++i) {
          if (r.text(i, 0) == n) view.columns.emplace_back(r.text(i, 1));
        }
        if (!view.columns.empty()) out.push_back(std::move(view));
      }
      return out;
    } catch (...) {
      RethrowPgAsStoreError("reading the views", Op::kRead);
    }
  }

 private:
  std::string uri_;

  static SqlResult RunOne(PgConnection& conn, Watchdog& watchdog, std::string_view whole,
                          const ScriptStatement& statement, const ValueMap& params, std::int64_t row_limit) {
    const TranslatedStatement t = TranslateNamedParameters(statement.text);
    if (t.positional) {
      const auto [line, column] = LineAndColumn(whole, statement.offset + *t.positional);
      throw SqlError("positional parameters ($1) are not supported: name them, :name, and give name=VALUE", line,
                     column);
    }
    std::vector<std::optional<std::string>> values;
    std::vector<Oid> types;
    for (const std::string& name : t.names) {
      const Value* value = nullptr;
      for (const auto& [key, v] : params) {
        if (key == name) value = &v;
      }
      if (value == nullptr) {
        const std::size_t at = statement.text.find(":" + name);
        const auto [line, column] = LineAndColumn(whole, statement.offset + (at == std::string_view::npos ? 0 : at));
        throw SqlError("parameter :" + name + " has no value (give " + name + "=VALUE)", line, column);
      }
      values.push_back(SqlParamText(*value));
      // Untyped, as text: the server gives each the type its place asks for
      // (`jid > :since` compares text even when since=20240101 is a number
      // on the command line); `:a + :b` needs a cast, `:a::int + :b::int`.
      types.push_back(0);
    }
    std::vector<const char*> pointers;
    for (const auto& v : values) pointers.push_back(v ? v->c_str() : nullptr);
    pg_conn* pq = conn.handle();
    // A query runs first, so the text cannot SET TRANSACTION READ WRITE.
    (void)conn.Exec("BEGIN TRANSACTION READ ONLY; SELECT 1");
    if (Libpq().PQsendQueryParams(pq, t.text.c_str(), static_cast<int>(pointers.size()), types.data(), pointers.data(),
                                  nullptr, nullptr, 0) == 0 ||
        Libpq().PQsetSingleRowMode(pq) == 0) {
      throw PgError(std::string("PostgreSQL: ") + Libpq().PQerrorMessage(pq), "", true);
    }
    SqlResult result;
    result.statement = std::string(statement.text);
    std::vector<Oid> field_types;
    std::optional<SqlError> failed;
    bool cancelled_for_limit = false;
    while (PGresult* r = Libpq().PQgetResult(pq)) {
      const ExecStatusType st = Libpq().PQresultStatus(r);
      if (st == PGRES_COPY_OUT || st == PGRES_COPY_IN || st == PGRES_COPY_BOTH) {
        // libpq would wait for copy data for ever; the connection, in the
        // middle of a copy, is dropped with the engine's call.
        Libpq().PQclear(r);
        const auto [line, column] = LineAndColumn(whole, statement.offset);
        throw SqlError("COPY is not supported by brine.sql (SELECT the rows; --out csv writes CSV)", line, column);
      }
      if (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK) {
        if (field_types.empty() && result.columns.empty()) {
          const int fields = Libpq().PQnfields(r);
          for (int f = 0; f < fields; ++f) {
            result.columns.emplace_back(Libpq().PQfname(r, f));
            field_types.push_back(Libpq().PQftype(r, f));
          }
        }
        for (int row = 0; row < Libpq().PQntuples(r) && !cancelled_for_limit; ++row) {
          if (static_cast<std::int64_t>(result.rows.size()) >= row_limit) {
            result.truncated = true;
            cancelled_for_limit = true;
            watchdog.CancelStatement();
            break;
          }
          std::vector<Value> values_row;
          for (int f = 0; f < static_cast<int>(field_types.size()); ++f) {
            values_row.push_back(FieldValue(r, row, f, field_types[static_cast<std::size_t>(f)]));
          }
          result.rows.push_back(std::move(values_row));
        }
      } else if (st != PGRES_COMMAND_OK && st != PGRES_EMPTY_QUERY && !failed && !cancelled_for_limit) {
        const char* state = Libpq().PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char* primary = Libpq().PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        const char* position = Libpq().PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
        std::string message = primary != nullptr ? primary : Libpq().PQresultErrorMessage(r);
        while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
        if (state == nullptr) {
          Libpq().PQclear(r);
          throw PgError(message, "", true);
        }
        if (std::string_view(state) == "25006") message += " (brine.sql is read-only)";
        std::size_t at = 0;  // the statement's start when the server gives no position
        if (position != nullptr) {
          const std::size_t chars = static_cast<std::size_t>(std::max(1L, std::strtol(position, nullptr, 10))) - 1;
          at = t.OriginalOffset(ByteOfChar(t.text, chars));
        }
        const auto [line, column] = LineAndColumn(whole, statement.offset + at);
        failed = SqlError(message, line, column);
      }
      Libpq().PQclear(r);
    }
    (void)conn.Exec("ROLLBACK");
    if (failed) {
      if (watchdog.stop() == Watchdog::Stop::kNone) throw *failed;
      // The error is the watchdog's cancel: Run reports the budget or the cancel.
      throw PgError("canceled", "57014", false);
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<SqlEngine> OpenPostgresSqlEngine(const std::string& uri) {
  return std::make_unique<PostgresSqlEngine>(uri);
}

}  // namespace brine::store::detail
