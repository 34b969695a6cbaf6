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
//   forensic_bench [--store DIR] [--runs N] [--questions FILE]
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  fs::path store = "/var/tmp/brine-query-bench";
  fs::path questions_file = fs::path(BRINE_SOURCE_DIR) / "bench" / "forensic_questions.sql";
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--store") store = argv[i + 1];
    else if (k == "--runs") runs = std::stoi(argv[i + 1]);
    else if (k == "--questions") questions_file = argv[i + 1];
  }
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
