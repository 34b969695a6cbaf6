// brine-run in-process over a store built through the store API, for the
// runner_*_test.cpp files: a master config folder with its store (Site), the
// CLI driven through brine::runner::Main (Cli), and the sample jobs and records
// that several of those files share. Site's helpers REQUIRE (Catch2) success.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "brine/core/value.h"
#include "brine/runner/cli.h"
#include "brine/store/store.h"
#include "support/temp_dir.h"

namespace brine::test {

// What salt-run prints for a jid it does not know.
inline constexpr const char* kNoJob = "Cannot contact returner or no job with this jid";

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// brine-run ARGS..., in-process, stdout not a terminal (unless said).
[[nodiscard]] CliResult Cli(const std::vector<std::string>& args,
                            runner::Terminal terminal = runner::Terminal::kNotTty);

// The number of lines ("\n") in `s`.
[[nodiscard]] std::size_t Lines(const std::string& s);
// The keys of a map in order ({} for anything else).
[[nodiscard]] std::vector<std::string> Keys(const Value& v);
// A whole file ("" when missing).
[[nodiscard]] std::string Slurp(const std::filesystem::path& p);

using Jids = std::vector<std::string>;

// A master config folder (`master` sets cachedir and brine.database) over a
// store built through the store API, in a temp dir of its own.
class Site {
 public:
  explicit Site(const std::string& extra_config = "");

  // Another config folder on the same store.
  std::filesystem::path WriteConf(const std::string& name, const std::string& extra_config);

  [[nodiscard]] std::filesystem::path dir() const { return dir_.path(); }
  [[nodiscard]] std::filesystem::path conf() const { return dir_ / "conf"; }
  [[nodiscard]] std::filesystem::path db() const { return dir_ / "brine.sqlite"; }

  // The store, opened for writing on first use.
  store::Store& Store();

  // The publish load of a job (Salt's save_load input) and its expected minions.
  void Publish(const std::string& jid, const std::string& fun, Value arg, Value tgt, const std::string& tgt_type,
               const std::string& user, const std::vector<std::string>& minions, const Value& extra = Value::EmptyMap());

  // One minion's return load (Salt's store_job input); requires that it is stored.
  void Return(const std::string& jid, const std::string& minion, const std::string& fun, Value ret, int retcode = 0,
              bool success = true, const Value& extra = Value::EmptyMap());

  // brine-run -c <conf> ARGS... (the writer is closed first).
  CliResult Run(std::vector<std::string> args, const std::filesystem::path& conf_dir = {});

  // The --out json answer of a successful call, parsed.
  Value Json(std::vector<std::string> args, const std::filesystem::path& conf_dir = {});

  std::vector<std::string> JsonKeys(std::vector<std::string> args) { return Keys(Json(std::move(args))); }

 private:
  TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

// A job record as jobs.list_jobs shows it (format_jid_instance's key order).
[[nodiscard]] Value Record(const std::string& fun, Value args, Value tgt, const std::string& tgt_type,
                           const std::string& user, const std::string& start, const Value& metadata = Value());

// The two jobs of spec salt-jobs.md 12.2's examples: test.ping to "*" with no
// returns, cmd.run uptime to web* with web1's return.
inline const std::string kPing = "20240101120000123456";
inline const std::string kUptime = "20240101120500654321";
void BuildSpecJobs(Site& s);

// A highstate return of one state that succeeded without changes.
[[nodiscard]] Value StateReturn();

}  // namespace brine::test
