// brine-run's function table: each function reads its bound arguments by
// name (Args), and takes its help text from one table (help_texts.cpp).
// These need runner/src's private headers; the CLI's behaviour is in
// runner_cli_test.cpp and the other runner_*_test.cpp files.
#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../runner/src/functions.h"
#include "../runner/src/help_texts.h"
#include "brine/runner/cli.h"
#include "support/golden.h"
#include "support/value_printer.h"

using brine::Value;
using brine::runner::AllFunctions;
using brine::runner::Args;
using brine::runner::FunctionSpec;
using brine::runner::HelpText;
using brine::runner::Param;

namespace {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

CliResult Cli(std::vector<std::string> words) {
  words.insert(words.begin(), "brine-run");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream out;
  std::ostringstream err;
  const int code = brine::runner::Main(static_cast<int>(words.size()), argv.data(), out, err,
                                       brine::runner::Terminal::kNotTty);
  return {code, out.str(), err.str()};
}

FunctionSpec Spec(std::string name) { return FunctionSpec{std::move(name), {}, nullptr}; }

}  // namespace

TEST_CASE("runner: every registered function's parameters are read by name to their own values",
          "[runner][args]") {
  REQUIRE(AllFunctions().size() >= 26);
  for (const FunctionSpec& f : AllFunctions()) {
    INFO(f.name);
    // A distinct value per parameter, so a name read to the wrong slot shows.
    std::vector<Value> values;
    for (std::size_t i = 0; i < f.params.size(); ++i) values.emplace_back(static_cast<long long>(i));
    const Args a(f.name, f.params, values);
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      INFO(f.params[i].name);
      CHECK(a[f.params[i].name] == Value(static_cast<long long>(i)));
    }
  }
}

TEST_CASE("runner: BindArgs' result is read by name, with defaults and keywords in their places", "[runner][args]") {
  const FunctionSpec* f = brine::runner::FindFunction("jobs.lookup_jid");
  REQUIRE(f != nullptr);
  brine::runner::ParsedArgs parsed;
  parsed.positional = {Value("20240101120000123456")};
  parsed.keyword = {{"missing", Value(true)}};
  const Args a = brine::runner::BindArgs(f->name, f->params, parsed);
  CHECK(a["jid"] == Value("20240101120000123456"));
  CHECK(a["ext_source"].is_null());
  CHECK(a["returned"] == Value(true));
  CHECK(a["missing"] == Value(true));
  CHECK(a["display_progress"] == Value(false));
  CHECK(a.function() == "jobs.lookup_jid");
  CHECK(a.values().size() == f->params.size());
}

TEST_CASE("runner: reading an argument the function does not declare is a logic_error naming both",
          "[runner][args]") {
  const FunctionSpec* f = brine::runner::FindFunction("jobs.list_jobs");
  REQUIRE(f != nullptr);
  const Args a(f->name, f->params, std::vector<Value>(f->params.size()));
  CHECK_NOTHROW(a["search_function"]);
  try {
    (void)a["serach_function"];
    FAIL("a misspelt argument name was read without an error");
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("jobs.list_jobs") != std::string::npos);
    CHECK(what.find("'serach_function'") != std::string::npos);
  }
  // A logic_error, never a UsageError: brine-run must not blame the user for it.
  CHECK_THROWS_AS(a[""], std::logic_error);
  CHECK_THROWS_AS(Args(f->name, f->params, {Value()}), std::logic_error);
}

TEST_CASE("runner: every function has a help text and every help text names a function", "[runner][args]") {
  REQUIRE_NOTHROW(AllFunctions());
  CHECK(brine::runner::HelpTexts().size() == AllFunctions().size());
  for (const FunctionSpec& f : AllFunctions()) {
    INFO(f.name);
    CHECK(!f.doc.empty());
    CHECK(f.doc.find("CLI Example:\n\n    brine-run " + f.name) != std::string::npos);
  }
}

TEST_CASE("runner: a function without a help text, or a help text for no function, is refused by name",
          "[runner][args]") {
  const HelpText both[] = {{"a.one", "One."}, {"a.two", "Two."}};
  std::vector<FunctionSpec> fns = {Spec("a.one"), Spec("a.two")};
  brine::runner::AttachHelpTexts(fns, both);
  CHECK(fns[0].doc == "One.");
  CHECK(fns[1].doc == "Two.");

  const HelpText one[] = {{"a.one", "One."}};
  CHECK_THROWS_WITH(brine::runner::AttachHelpTexts(fns, one), Catch::Contains("a.two has no help text"));

  const HelpText extra[] = {{"a.one", "One."}, {"a.three", "Three."}, {"a.two", "Two."}};
  CHECK_THROWS_WITH(brine::runner::AttachHelpTexts(fns, extra), Catch::Contains("a.three names no function"));

  const HelpText twice[] = {{"a.one", "One."}, {"a.two", "Two."}, {"a.two", "Two again."}};
  CHECK_THROWS_AS(brine::runner::AttachHelpTexts(fns, twice), std::logic_error);
}

TEST_CASE("runner: -d prints every function's signature and help text byte for byte", "[runner][golden]") {
  const CliResult json = Cli({"-d", "--out", "json"});
  CHECK(json.code == 0);
  CHECK(json.err.empty());
  CHECK(brine::test::CheckGolden("runner/doc.json.txt", json.out) == "");
  const CliResult nested = Cli({"-d"});
  CHECK(nested.code == 0);
  CHECK(brine::test::CheckGolden("runner/doc.nested.txt", nested.out) == "");
}
