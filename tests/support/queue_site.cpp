#include "support/queue_site.h"

#include <catch2/catch.hpp>

#include "brine/core/json.h"

namespace brine::test::queue_site {

RunResult BrineRun(const std::filesystem::path& conf, const std::vector<std::string>& args) {
  std::vector<std::string> argv{brine::test::Binary("brine-run").string(), "-c", conf.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return brine::test::Run(argv);
}

Value JsonRun(const std::filesystem::path& conf, std::vector<std::string> args) {
  args.emplace_back("--out=json");
  const RunResult r = BrineRun(conf, args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return ParseJson(r.out);
}

Value StringList(std::initializer_list<const char*> items) {
  brine::ValueList l;
  for (const char* s : items) l.emplace_back(s);
  return Value(std::move(l));
}

}  // namespace brine::test::queue_site
