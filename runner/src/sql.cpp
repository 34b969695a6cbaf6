// brine.sql, brine.sql_file and brine.sql_views: ad-hoc read-only SQL on the
// store through store/'s SqlEngine (brine/store/sql.h says what keeps it
// read-only and time-bounded; docs/day-two.md, "brine.sql").
#include <csignal>

#include <cmath>
#include <fstream>
#include <iterator>

#include "brine/output/rows.h"
#include "brine/store/sql.h"
#include "functions.h"

namespace brine::runner {
namespace {

constexpr std::int64_t kDefaultLimit = 10000;

std::string Database(const Context& ctx) {
  // brine.read_database (a replica) when set, as every read of brine-run.
  return ctx.config().brine.read_database.value_or(ctx.config().brine.database).string();
}

store::SqlOptions Options(const Args& a, store::SqlOptions::Statements statements) {
  const Value& t = a["timeout"];
  if (!t.is_number() || t.is_bool()) throw UsageError("timeout must be a number of seconds, got " + ToJsonForMessage(t));
  const double seconds = t.is_float() ? t.as_float() : static_cast<double>(t.as_int());
  if (!(seconds > 0) || seconds > 86400) throw UsageError("timeout must be more than 0 and at most 86400 seconds");
  const std::int64_t limit = IntArg(a["limit"], "limit");
  if (limit < 1) throw UsageError("limit must be at least 1, got " + std::to_string(limit));
  return {.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000))),
          .row_limit = limit,
          .statements = statements};
}

// Prints one statement's rows in the form the command line asks for.
void PrintResult(Context& ctx, const store::SqlResult& r, std::int64_t limit, bool first) {
  const std::string& out = ctx.outputter_option();
  const bool text = out == "csv" || (out.empty() && ctx.terminal());
  if (text && r.columns.empty()) {
    // BEGIN, COMMIT, SET...: no columns, nothing to show as a table.
  } else if (out == "csv") {
    ctx.PrintText(std::string(first ? "" : "\r\n") + output::CsvTable(r.columns, r.rows));
  } else if (out.empty() && ctx.terminal()) {
    ctx.PrintText(std::string(first ? "" : "\n") + output::AlignedTable(r.columns, r.rows));
  } else {
    ctx.Print(output::RowObjects(r.columns, r.rows));
  }
  if (r.truncated) {
    ctx.Notice("showed the first " + std::to_string(r.rows.size()) + " rows; there were more (limit=" +
               std::to_string(limit) + ")");
  }
}

// Ctrl-C or a SIGTERM while a query runs cancels it, so a PostgreSQL server
// does not go on running a query whose client is gone. The handler only sets
// the flag (SqlCancel is a lock-free atomic).
store::SqlCancel interrupted;

extern "C" void OnInterrupt(int) { interrupted.Cancel(); }

// Installs OnInterrupt for SIGINT and SIGTERM for its lifetime.
class InterruptCancels {
 public:
  InterruptCancels() {
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~InterruptCancels() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptCancels(const InterruptCancels&) = delete;
  InterruptCancels& operator=(const InterruptCancels&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

void Run(Context& ctx, const std::string& text, const Args& a, store::SqlOptions::Statements statements,
         const std::string& where) {
  const store::SqlOptions options = Options(a, statements);
  const ValueMap& params = a["**params"].as_map();
  const std::string database = Database(ctx);
  ctx.Debug("brine.sql on " + database + ": timeout " + std::to_string(options.timeout.count()) + " ms, limit " +
            std::to_string(options.row_limit));
  bool first = true;
  try {
    const auto engine = store::OpenSqlEngine(database);
    const InterruptCancels on_interrupt;
    engine->Run(
        text, params, options,
        [&](store::SqlResult&& r) {
          PrintResult(ctx, r, options.row_limit, first);
          first = false;
        },
        &interrupted);
  } catch (const store::SqlCancelledError&) {
    throw RuntimeFailure(where + "interrupted: the query was cancelled");
  } catch (const store::SqlTimeoutError& e) {
    throw RuntimeFailure(where + std::string(e.what()) + " (timeout=S gives it more)");
  } catch (const store::SqlError& e) {
    throw RuntimeFailure(where + e.what());
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());
  }
  ctx.SuppressResult();
}

}  // namespace

void AddSqlFunctions(std::vector<FunctionSpec>& out) {
  const Value limit(static_cast<long long>(kDefaultLimit));
  out.push_back({"brine.sql",
                 {{"query", std::nullopt}, {"timeout", Value(30)}, {"limit", limit}, {"**params", std::nullopt}},
                 [](Context& ctx, const Args& a) -> Value {
                   Run(ctx, StringArg(a["query"], "query"), a, store::SqlOptions::Statements::kOne, "");
                   return Value();
                 }});
  out.push_back({"brine.sql_file",
                 {{"path", std::nullopt}, {"timeout", Value(30)}, {"limit", limit}, {"**params", std::nullopt}},
                 [](Context& ctx, const Args& a) -> Value {
                   const std::string path = StringArg(a["path"], "path");
                   std::ifstream f(path, std::ios::binary);
                   if (!f) throw RuntimeFailure("cannot read " + path);
                   const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
                   if (f.bad()) throw RuntimeFailure("cannot read " + path);
                   Run(ctx, text, a, store::SqlOptions::Statements::kMany, path + ": ");
                   return Value();
                 }});
  out.push_back({"brine.sql_views", {}, [](Context& ctx, const Args&) -> Value {
                   try {
                     Value views = Value::EmptyMap();
                     for (const store::SqlView& v : store::OpenSqlEngine(Database(ctx))->Views()) {
                       ValueList columns(v.columns.begin(), v.columns.end());
                       views.Set(v.name, Value(std::move(columns)));
                     }
                     return views;
                   } catch (const store::StoreError& e) {
                     throw RuntimeFailure(e.what());
                   }
                 }});
}

}  // namespace brine::runner
