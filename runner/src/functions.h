// The runner functions brine-run offers, with salt-run's names, parameters
// and defaults, and what they share.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "brine/args/arguments.h"
#include "brine/config/master_config.h"
#include "brine/core/time.h"
#include "brine/core/value.h"
#include "brine/output/map_stream.h"
#include "brine/store/queues.h"
#include "brine/store/store.h"

namespace brine::runner {

// salt-run's argument forms (brine/args), shared with brine-web.
using args::Args;
using args::BindArgs;
using args::Param;
using args::ParsedArgs;
using args::ParseInput;
using args::RuntimeFailure;
using args::UsageError;

// What a function may use. Owned by Main for one call.
class Context {
 public:
  // `config`, `clock`, `out` and `err` must outlive the Context.
  Context(const config::MasterConfig& config, const Clock& clock, std::ostream& out, std::ostream& err)
      : config_(config), clock_(clock), out_(out), err_(err) {}

  [[nodiscard]] const config::MasterConfig& config() const { return config_; }
  [[nodiscard]] const Clock& clock() const { return clock_; }
  // The store, opened read-only on first use. Throws RuntimeFailure when it
  // is missing or unreadable.
  store::Store& Store();
  // The queue tables, opened read-write on first use (the store is created
  // when missing). Throws RuntimeFailure when the store cannot be opened.
  store::Queues& Queues();
  // Where a function that streams (state.event) writes as it goes.
  [[nodiscard]] std::ostream& out() { return out_; }
  // The function printed its own output: its return value is not rendered.
  void SuppressResult() { result_suppressed_ = true; }
  // Prints a map result entry by entry through the command line's outputter,
  // as returning Wrap(outputter, <the map>) would print it; the function then
  // calls SuppressResult. Set by the command line before the call.
  using MapStreamOpener = std::function<std::unique_ptr<output::MapStream>(const Value& outputter)>;
  void SetMapStreamOpener(MapStreamOpener opener) { open_map_stream_ = std::move(opener); }
  [[nodiscard]] std::unique_ptr<output::MapStream> OpenMapStream(const Value& outputter) {
    return open_map_stream_(outputter);
  }
  [[nodiscard]] bool result_suppressed() const { return result_suppressed_; }
  // Prints one of several results as the command line prints a return
  // (--out, --out-file, colour), or text as it is (CSV, a table) to the same
  // place; the function then calls SuppressResult. Both throw RuntimeFailure
  // when the output cannot be written. Set by the command line.
  using ValuePrinter = std::function<bool(const Value&)>;
  using TextPrinter = std::function<bool(const std::string&)>;
  void SetPrinters(ValuePrinter value, TextPrinter text) {
    print_value_ = std::move(value);
    print_text_ = std::move(text);
  }
  void Print(const Value& v);
  void PrintText(const std::string& text);
  // Whether stdout is a terminal (and no --out-file): a person reads the answer.
  void SetTerminal(bool terminal) { terminal_ = terminal; }
  [[nodiscard]] bool terminal() const { return terminal_; }

  // `-l debug`: what brine-run does (the store, the query, timings) goes to
  // stderr as salt-run's console log prints it, `[DEBUG   ] text`.
  void EnableDebug() { debug_ = true; }
  [[nodiscard]] bool debugging() const { return debug_; }
  void Debug(const std::string& text);
  // One line for the operator on stderr, `brine-run: text`, whatever the
  // log level: for what Salt leaves silent but a script's author wants to know
  // (a lookup of a jid the store does not hold).
  void Notice(const std::string& text) { err_ << "brine-run: " << text << "\n"; }
  // A progress line redrawn in place on stderr ("\r"); "" ends it with a newline.
  void Progress(const std::string& text) {
    if (text.empty()) {
      err_ << "\n";
    } else {
      err_ << "\rbrine-run: " << text;
    }
    err_.flush();
  }

  // A function whose answer is a verdict (brine.health) sets the exit code
  // its result is printed with; 0 unless set.
  void SetExitCode(int code) { exit_code_ = code; }
  [[nodiscard]] int exit_code() const { return exit_code_; }
  // The --out the command line was given ("" for none), for a function that
  // shows raw values to json and readable ones to people.
  void SetOutputterOption(std::string name) { outputter_option_ = std::move(name); }
  [[nodiscard]] const std::string& outputter_option() const { return outputter_option_; }

 private:
  const config::MasterConfig& config_;
  const Clock& clock_;
  std::ostream& out_;
  std::ostream& err_;
  bool debug_ = false;
  int exit_code_ = 0;
  std::string outputter_option_;
  bool result_suppressed_ = false;
  MapStreamOpener open_map_stream_;
  ValuePrinter print_value_;
  TextPrinter print_text_;
  bool terminal_ = false;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Queues> queues_;
};

// The store opened read-write (created when missing) with brine.sync, for a
// function that writes beside a running brine-master: `options` with its
// access and sync set from the config. Throws RuntimeFailure.
[[nodiscard]] std::unique_ptr<store::Store> OpenWritableStore(const config::MasterConfig& config,
                                                              store::OpenOptions options = {});
// store.BeginBatch(), tried up to six times on BusyError: a busy brine-master
// commits back to back and SQLite's busy handler polls, so one BEGIN
// IMMEDIATE may wait out its whole busy_timeout (a minute in all).
[[nodiscard]] store::Batch BeginBatchPatiently(store::Store& store);

struct FunctionSpec {
  std::string name;            // module.function
  std::vector<Param> params;   // in Python's order
  // Runs the function on its bound arguments, which it reads by name
  // (a["jid"]). Throws UsageError for a bad value, RuntimeFailure for a
  // failure.
  std::function<Value(Context&, const Args&)> call;
  // Printed after "Usage:" and by -d: filled by AllFunctions from the table
  // in help_texts.cpp, not by the registration.
  std::string doc = {};
};

// Every function, sorted by name, each with its help text. Throws
// std::logic_error (a programming error, caught by the first test) when a
// function has no help text, or a help text names no function.
[[nodiscard]] const std::vector<FunctionSpec>& AllFunctions();
[[nodiscard]] const FunctionSpec* FindFunction(const std::string& name);

// Registration, one per module file.
void AddJobsFunctions(std::vector<FunctionSpec>& out);
void AddBrineFunctions(std::vector<FunctionSpec>& out);
void AddQueueFunctions(std::vector<FunctionSpec>& out);
void AddEventFunctions(std::vector<FunctionSpec>& out);
void AddSqlFunctions(std::vector<FunctionSpec>& out);
void AddManageFunctions(std::vector<FunctionSpec>& out);

// A value as one line of Python-style JSON, for messages.
[[nodiscard]] std::string ToJsonForMessage(const Value& v);

// Argument helpers shared by the modules. `name` is the parameter, for messages.
[[nodiscard]] std::string StringArg(const Value& v, const std::string& name);  // str, or an int as its digits
[[nodiscard]] std::optional<std::string> OptionalStringArg(const Value& v, const std::string& name);
[[nodiscard]] std::int64_t IntArg(const Value& v, const std::string& name);
// A time given as text, read as ParseTimeArg reads it (times.h). Throws
// UsageError naming `name` and the forms it accepts.
[[nodiscard]] Micros TimeArg(const Value& v, const std::string& name);
// A string split on commas (items stripped), or a list of strings.
[[nodiscard]] std::vector<std::string> GlobListArg(const Value& v, const std::string& name);

}  // namespace brine::runner
