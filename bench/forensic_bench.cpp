// forensic_bench: the questions of bench/forensic_questions.sql on the store
// query_bench built (1M jobs / 10M returns by default, kept in --store), as
// an operator runs them in the sqlite3 shell: the system SQLite library, no
// brine function registered, a read-only connection. For each question: the
// rows, the median wall time warm (the same connection, after one untimed
// run) and cold (the file dropped from the page cache, a fresh connection),
// and the plan, one EXPLAIN QUERY PLAN line per step. Before timing, the
// statistics are refreshed as brine-master's maintenance does, and that
// refresh is timed too. Target (issue 15): every question <= 100 ms warm, no
// SCAN of ret or event.
//
// With --uri postgresql://... it asks a PostgreSQL store instead (pg_bench
// --store-jobs 1000000 --hold 1 builds one and prints its URI) the questions
// of bench/forensic_questions_pg.sql, their PostgreSQL dialect, through libpq
// as psql would: one connection, the parameters bound as text (the extended
// protocol, so each run plans with its values), the rows fetched; warm only
// (the server's buffers cannot be dropped from here), and for each question
// its EXPLAIN (ANALYZE, BUFFERS) after the timed runs. A plan line that is a
// sequential scan of ret or event (or a partition of them) is flagged.
//
//   forensic_bench [--store DIR] [--runs N] [--questions FILE]
//   forensic_bench --uri postgresql://... [--runs N] [--questions FILE]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "bench_support.h"
#include "brine/store/store.h"

namespace fs = std::filesystem;
using brine::bench::DropCache;
using brine::bench::Median;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct Question {
  std::string name;
  std::string sql;
};

// The grammar is at the top of forensic_questions.sql.
std::vector<Question> ReadQuestions(const fs::path& file) {
  std::ifstream in(file);
  std::vector<Question> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("-- q: ", 0) == 0) {
      out.push_back({line.substr(6), ""});
      inside = true;
    } else if (line.empty()) {
      inside = false;
    } else if (inside && line.rfind("--", 0) != 0) {
      out.back().sql += line + "\n";
    }
  }
  return out;
}

using Params = std::vector<std::pair<std::string, std::string>>;

// True when `sql` names the parameter `name` (":jid" is not in ":jid_since").
bool HasParam(const std::string& sql, const std::string& name) {
  for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name, at + 1)) {
    const auto end = at + name.size();
    if (end == sql.size() || !(std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_')) return true;
  }
  return false;
}

void Bind(SQLite::Statement& q, const std::string& sql, const Params& params) {
  for (const auto& [name, value] : params) {
    if (HasParam(sql, name)) q.bind(name, value);
  }
}

std::string One(SQLite::Database& db, const std::string& sql) {
  SQLite::Statement q(db, sql);
  if (!q.executeStep() || q.getColumn(0).isNull()) return "";
  return q.getColumn(0).getString();
}

// Runs `sql` to the end; returns the seconds and the rows.
std::pair<double, long> Run(SQLite::Database& db, const std::string& sql, const Params& params) {
  const auto start = SteadyClock::now();
  SQLite::Statement q(db, sql);
  Bind(q, sql, params);
  long rows = 0;
  while (q.executeStep()) ++rows;
  return {std::chrono::duration<double>(SteadyClock::now() - start).count(), rows};
}

// --uri: the PostgreSQL dialect of the questions through libpq.
class Pg {
 public:
  explicit Pg(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn_));
  }
  ~Pg() { PQfinish(conn_); }
  Pg(const Pg&) = delete;
  Pg& operator=(const Pg&) = delete;

  // Runs `sql` with `values` bound to $1..$n (text, types inferred).
  std::vector<std::vector<std::string>> Rows(const std::string& sql, const std::vector<std::string>& values = {}) {
    std::vector<const char*> v;
    for (const auto& x : values) v.push_back(x.c_str());
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(v.size()), nullptr, v.data(), nullptr, nullptr, 0);
    const auto status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      const std::string why = PQresultErrorMessage(r);
      PQclear(r);
      throw std::runtime_error("forensic_bench: " + why + sql);
    }
    std::vector<std::vector<std::string>> out(PQntuples(r));
    for (int i = 0; i < PQntuples(r); ++i) {
      for (int c = 0; c < PQnfields(r); ++c) out[i].emplace_back(PQgetvalue(r, i, c));
    }
    PQclear(r);
    return out;
  }
  std::string One(const std::string& sql) {
    const auto rows = Rows(sql);
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
  }

 private:
  PGconn* conn_;
};

// `sql` with each :name of `params` it names replaced by $n, and the values in
// that order (a name used twice is one $n).
std::pair<std::string, std::vector<std::string>> Positional(std::string sql, const Params& params) {
  std::vector<std::string> values;
  for (const auto& [name, value] : params) {
    if (!HasParam(sql, name)) continue;
    values.push_back(value);
    const std::string n = "$" + std::to_string(values.size());
    std::string out;
    std::size_t from = 0;
    for (auto at = sql.find(name); at != std::string::npos; at = sql.find(name, at + 1)) {
      const auto end = at + name.size();
      if (end < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_')) continue;
      out += sql.substr(from, at - from) + n;
      from = end;
    }
    sql = out + sql.substr(from);
  }
  return {sql, values};
}

// True when a step of `plan` (EXPLAIN ANALYZE's lines) is a sequential scan
// matching `scan` that read rows: PostgreSQL plans a scan of an empty
// partition (yesterday's, tomorrow's) as a Seq Scan that finds nothing, so a
// scan counts when it returned rows or its filter removed some.
bool ReadsBySeqScan(const std::vector<std::string>& plan, const std::regex& scan) {
  const std::regex returned(R"(actual time=\S+ rows=([1-9]))");
  const std::regex removed(R"(Rows Removed by Filter: [1-9])");
  auto indent = [](const std::string& line) { return line.find_first_not_of(" ->"); };
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!std::regex_search(plan[i], scan)) continue;
    if (std::regex_search(plan[i], returned)) return true;
    for (std::size_t k = i + 1; k < plan.size() && indent(plan[k]) > indent(plan[i]) &&
                                plan[k].find("->") == std::string::npos;
         ++k) {
      if (std::regex_search(plan[k], removed)) return true;
    }
  }
  return false;
}

int RunPostgres(const std::string& uri, fs::path questions_file, int runs) {
  if (questions_file.empty()) questions_file = fs::path(BRINE_SOURCE_DIR) / "bench" / "forensic_questions_pg.sql";
  Pg pg(uri);
  pg.Rows("SET TimeZone = 'UTC'");
  const long jobs = std::stol(pg.One("SELECT count(*) FROM job"));
  const std::string newest = pg.One("SELECT max(start_time) FROM job WHERE jid LIKE '2%'");
  const std::string since = pg.One("SELECT (timestamptz '" + newest + "' - interval '1 hour')::text");
  // The same choices as on SQLite: windows of the newest hour of jobs, the
  // newest 1/240 of the returns and of the events.
  const long returns = std::stol(pg.One("SELECT count(*) FROM ret"));
  const long events = std::stol(pg.One("SELECT count(*) FROM event"));
  const Params params = {
      {":since_received", pg.One("SELECT received::text FROM event ORDER BY received DESC LIMIT 1 OFFSET " +
                                 std::to_string(events / 240))},
      {":since", since},
      {":recv_since", pg.One("SELECT recv::text FROM ret ORDER BY recv DESC LIMIT 1 OFFSET " +
                             std::to_string(returns / 240))},
      {":jid_since", pg.One("SELECT to_char(timestamptz '" + since + "', 'YYYYMMDDHH24MISS')")},
      {":jid", pg.One("SELECT j.jid FROM job AS j WHERE j.jid >= to_char(timestamptz '" + newest +
                      "' - interval '1 day', 'YYYYMMDD') ORDER BY (SELECT count(*) FROM ret WHERE job_id = j.id) DESC"
                      " LIMIT 1")},
      {":state_jid", pg.One("SELECT jid FROM failed_returns WHERE fun = 'state.apply' ORDER BY recv_time DESC LIMIT 1")},
      {":minion", pg.One("SELECT name FROM minion ORDER BY id LIMIT 1 OFFSET 7")},
      // pg_bench's job of many returns has minions of its own (lookup-minion-N).
      {":ret_minion", pg.One("SELECT m.name FROM ret AS r JOIN minion AS m ON m.id = r.minion_id WHERE r.job_id ="
                             " (SELECT j.id FROM job AS j WHERE j.jid >= to_char(timestamptz '" + newest +
                             "' - interval '1 day', 'YYYYMMDD') ORDER BY (SELECT count(*) FROM ret WHERE job_id = j.id)"
                             " DESC LIMIT 1) ORDER BY m.id LIMIT 1 OFFSET 7")},
      {":user", pg.One("SELECT load_user FROM job WHERE load_user IS NOT NULL ORDER BY jid DESC LIMIT 1")},
  };
  std::printf("forensic_bench: %ld jobs, %ld returns, %ld events in %s; %d runs each, warm\n", jobs, returns, events,
              pg.One("SELECT current_database()").c_str(), runs);
  for (const auto& [k, v] : params) std::printf("  %-16s %s\n", k.c_str(), v.c_str());
  const std::regex scan(R"(Seq Scan on (ret|event)\w*)");
  for (const Question& q : ReadQuestions(questions_file)) {
    const auto [sql, values] = Positional(q.sql, params);
    (void)pg.Rows(sql, values);
    std::vector<double> warm;
    long rows = 0;
    for (int i = 0; i < runs; ++i) {
      const auto start = SteadyClock::now();
      rows = static_cast<long>(pg.Rows(sql, values).size());
      warm.push_back(std::chrono::duration<double>(SteadyClock::now() - start).count());
    }
    std::vector<std::string> plan;
    for (const auto& row : pg.Rows("EXPLAIN (ANALYZE, BUFFERS) " + sql, values)) plan.push_back(row[0]);
    const bool scans = ReadsBySeqScan(plan, scan);
    const double w = Median(warm);
    std::printf("\n  %-58s rows %8ld  warm %9.2f ms  %s%s\n", q.name.c_str(), rows, w * 1000,
                w <= 0.1 ? "ok" : "OVER 100 ms", scans ? ", SCANS" : "");
    for (const std::string& step : plan) std::printf("      %s\n", step.c_str());
    std::printf("{\"bench\":\"forensic_pg\",\"query\":\"%s\",\"jobs\":%ld,\"rows\":%ld,\"warm_s\":%.4f,"
                "\"scans\":%s}\n",
                q.name.c_str(), jobs, rows, w, scans ? "true" : "false");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path store = "/var/tmp/brine-query-bench";
  fs::path questions_file;
  std::string uri;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--store") store = argv[i + 1];
    else if (k == "--runs") runs = std::stoi(argv[i + 1]);
    else if (k == "--questions") questions_file = argv[i + 1];
    else if (k == "--uri") uri = argv[i + 1];
  }
  if (!uri.empty()) return RunPostgres(uri, questions_file, runs);
  if (questions_file.empty()) questions_file = fs::path(BRINE_SOURCE_DIR) / "bench" / "forensic_questions.sql";
  const fs::path db_path = store / "cache" / "brine.sqlite";
  if (!fs::exists(db_path)) {
    std::fprintf(stderr, "forensic_bench: no store at %s: run query_bench --store %s first\n", db_path.c_str(),
                 store.c_str());
    return 1;
  }
  // What brine-master's maintenance does every loop_interval.
  double stats_s = 0;
  {
    auto s = brine::store::OpenStore(db_path, {.master_id = "bench_master"});
    const auto start = SteadyClock::now();
    s->Maintenance()->RefreshStatistics();
    stats_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  }
  SQLite::Database meta(db_path.string(), SQLite::OPEN_READONLY);
  const long jobs = std::stol(One(meta, "SELECT count(*) FROM job"));
  const std::string newest = One(meta, "SELECT max(start_time) FROM job WHERE jid GLOB '2*'");
  const std::string since = One(meta, "SELECT datetime('" + newest + "', '-1 hour')");
  // The store holds 10 days of jobs, but query_bench filed them in minutes:
  // arrival windows are the newest 1/240 of the rows (an hour of 10 days).
  const long returns = std::stol(One(meta, "SELECT max(id) FROM ret"));
  const long events = std::stol(One(meta, "SELECT count(*) FROM event WHERE id > 0"));
  const Params params = {
      {":since_us", One(meta, "SELECT id FROM event ORDER BY id DESC LIMIT 1 OFFSET " + std::to_string(events / 240))},
      {":since", since},
      {":recv_since", One(meta, "SELECT strftime('%Y-%m-%d %H:%M:%f', recv_us / 1000000.0, 'unixepoch') FROM ret "
                                "ORDER BY recv_us DESC LIMIT 1 OFFSET " + std::to_string(returns / 240))},
      {":jid_since", One(meta, "SELECT strftime('%Y%m%d%H%M%S', '" + since + "')")},
      // The job with the most returns (query_bench's 10,000-minion cmd.run).
      {":jid", One(meta, "SELECT j.jid FROM job AS j WHERE j.jid >= strftime('%Y%m%d', '" + newest +
                             "', '-1 day') ORDER BY (SELECT count(*) FROM ret WHERE job_id = j.id) DESC LIMIT 1")},
      {":state_jid", One(meta, "SELECT jid FROM failed_returns WHERE fun = 'state.apply' ORDER BY recv_time DESC LIMIT 1")},
      {":minion", One(meta, "SELECT name FROM minion ORDER BY id LIMIT 1 OFFSET 7")},
      {":user", One(meta, "SELECT user FROM job WHERE user IS NOT NULL ORDER BY jid DESC LIMIT 1")},
  };
  std::printf("forensic_bench: %ld jobs in %s; statistics refreshed in %.1f ms; %d runs each\n", jobs,
              db_path.c_str(), stats_s * 1000, runs);
  for (const auto& [k, v] : params) std::printf("  %-12s %s\n", k.c_str(), v.c_str());
  std::printf("{\"bench\":\"forensic\",\"query\":\"refresh statistics\",\"jobs\":%ld,\"s\":%.4f}\n", jobs, stats_s);

  for (const Question& q : ReadQuestions(questions_file)) {
    SQLite::Database db(db_path.string(), SQLite::OPEN_READONLY);
    SQLite::Statement plan_q(db, "EXPLAIN QUERY PLAN " + q.sql);
    Bind(plan_q, q.sql, params);
    std::vector<std::string> plan;
    bool scans = false;
    while (plan_q.executeStep()) {
      const std::string step = plan_q.getColumn(3).getString();
      plan.push_back(step);
      for (const char* t : {"SCAN r", "SCAN e", "SCAN ret", "SCAN event"}) {
        const std::string p(t);
        if (step.rfind(p, 0) == 0 && (step.size() == p.size() || step[p.size()] == ' ') &&
            step.find("ret_failed") == std::string::npos) {
          scans = true;
        }
      }
    }
    Run(db, q.sql, params);
    std::vector<double> warm, cold;
    long rows = 0;
    for (int i = 0; i < runs; ++i) {
      const auto [s, n] = Run(db, q.sql, params);
      warm.push_back(s);
      rows = n;
    }
    bool cold_ok = true;
    for (int i = 0; i < runs; ++i) {
      cold_ok = DropCache(db_path) && cold_ok;
      SQLite::Database fresh(db_path.string(), SQLite::OPEN_READONLY);
      cold.push_back(Run(fresh, q.sql, params).first);
    }
    const double w = Median(warm), c = cold_ok ? Median(cold) : -1.0;
    std::printf("\n  %-58s rows %8ld  warm %9.2f ms  cold %9.2f ms  %s%s\n", q.name.c_str(), rows, w * 1000,
                c * 1000, w <= 0.1 ? "ok" : "OVER 100 ms", scans ? ", SCANS" : "");
    for (const std::string& step : plan) std::printf("      %s\n", step.c_str());
    std::printf("{\"bench\":\"forensic\",\"query\":\"%s\",\"jobs\":%ld,\"rows\":%ld,\"warm_s\":%.4f,\"cold_s\":%.4f,"
                "\"scans\":%s}\n",
                q.name.c_str(), jobs, rows, w, c, scans ? "true" : "false");
  }
  return 0;
}
