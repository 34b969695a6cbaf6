#include "support/runner_site.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "brine/core/json.h"

namespace brine::test {

namespace fs = std::filesystem;

CliResult Cli(const std::vector<std::string>& args, runner::Terminal terminal) {
  std::vector<std::string> words = {"brine-run"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  const int code = runner::Main(static_cast<int>(words.size()), argv.data(), out, err, terminal);
  return {code, out.str(), err.str()};
}

std::size_t Lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::vector<std::string> Keys(const Value& v) {
  std::vector<std::string> out;
  if (v.is_map()) {
    for (const auto& [k, _] : v.as_map()) out.push_back(k);
  }
  return out;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Site::Site(const std::string& extra_config) {
  fs::create_directories(dir_ / "cache");
  WriteConf("conf", extra_config);
}

fs::path Site::WriteConf(const std::string& name, const std::string& extra_config) {
  fs::create_directories(dir_ / name);
  std::ofstream(dir_ / name / "master") << "cachedir: " << (dir_ / "cache").string() << "\n"
                                        << "brine.database: " << db().string() << "\n"
                                        << "brine.bus: bind\n"
                                        << extra_config << "\n";
  return dir_ / name;
}

store::Store& Site::Store() {
  if (!store_) store_ = store::OpenStore(db());
  return *store_;
}

void Site::Publish(const std::string& jid, const std::string& fun, Value arg, Value tgt, const std::string& tgt_type,
                   const std::string& user, const std::vector<std::string>& minions, const Value& extra) {
  Value load = Value::Map({{"jid", jid},
                           {"fun", fun},
                           {"arg", std::move(arg)},
                           {"tgt", std::move(tgt)},
                           {"tgt_type", tgt_type},
                           {"user", user}});
  for (const auto& [k, v] : extra.as_map()) load.Set(k, v);
  Store().SaveLoad(jid, load, minions.empty() ? std::nullopt : std::optional(minions));
}

void Site::Return(const std::string& jid, const std::string& minion, const std::string& fun, Value ret, int retcode,
                  bool success, const Value& extra) {
  Value load = Value::Map({{"jid", jid},
                           {"id", minion},
                           {"fun", fun},
                           {"fun_args", Value::EmptyList()},
                           {"return", std::move(ret)},
                           {"retcode", retcode},
                           {"success", success}});
  for (const auto& [k, v] : extra.as_map()) load.Set(k, v);
  const auto outcome = Store().Returner(load);
  REQUIRE(outcome.kind == store::ReturnOutcome::Kind::kStored);
}

CliResult Site::Run(std::vector<std::string> args, const fs::path& conf_dir) {
  store_.reset();
  args.insert(args.begin(), {"-c", (conf_dir.empty() ? conf() : conf_dir).string()});
  return Cli(args);
}

Value Site::Json(std::vector<std::string> args, const fs::path& conf_dir) {
  args.emplace_back("--out=json");
  const CliResult r = Run(std::move(args), conf_dir);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  REQUIRE(r.err.empty());
  return ParseJson(r.out);
}

Value Record(const std::string& fun, Value args, Value tgt, const std::string& tgt_type, const std::string& user,
             const std::string& start, const Value& metadata) {
  Value r = Value::Map({{"Function", fun},
                        {"Arguments", std::move(args)},
                        {"Target", std::move(tgt)},
                        {"Target-type", tgt_type},
                        {"User", user}});
  if (!metadata.is_null()) r.Set("Metadata", metadata);
  r.Set("StartTime", start);
  return r;
}

void BuildSpecJobs(Site& s) {
  s.Publish(kPing, "test.ping", Value::EmptyList(), "*", "glob", "root", {});
  s.Publish(kUptime, "cmd.run", Value::List({"uptime"}), "web*", "glob", "sudo_alice", {"web1", "web2"});
  s.Return(kUptime, "web1", "cmd.run", " 12:05:01 up 3 days", 0, true);
}

Value StateReturn() {
  return Value::Map({{"test_|-t1_|-t1_|-succeed_without_changes",
                      Value::Map({{"name", "t1"},
                                  {"changes", Value::EmptyMap()},
                                  {"result", true},
                                  {"comment", "Success!"},
                                  {"__sls__", "demo"},
                                  {"__run_num__", 0},
                                  {"start_time", "11:00:00.100000"},
                                  {"duration", 1.5},
                                  {"__id__", "t1"}})}});
}

}  // namespace brine::test
