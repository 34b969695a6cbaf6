#include "brine/runner/cli.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brine/args/arguments.h"
#include "brine/config/master_config.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "master_bus.h"
#include "zmq_socket.h"
#include "brine/output/outputters.h"
#include "functions.h"

namespace brine::runner {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "Usage: brine-run [options] FUNCTION [ARG ...] [KEY=VALUE ...]\n"
    "\n"
    "A salt-run compatible command line over the brine store: jobs.*, queue.*, state.event,\n"
    "event.send, brine.*.\n"
    "Arguments are typed as salt-run types them (YAML). Options may also follow the function.\n"
    "\n"
    "Options:\n"
    "  -c, --config-dir DIR     the Salt master's config folder (default /etc/salt); must exist\n"
    "  --out, --output NAME     outputter: nested (default), json, yaml, txt, raw\n"
    "  --out-indent N           indent for json/yaml (negative: one line)\n"
    "  --out-file FILE          write the output to FILE (emptied first) instead of printing it\n"
    "  --out-file-append        append to --out-file's FILE instead of emptying it\n"
    "  --no-color               no colours (the default when stdout is not a terminal)\n"
    "  --force-color            colours even when stdout is not a terminal\n"
    "  -l, --log-level LEVEL    all garbage trace debug profile info warning error critical quiet;\n"
    "                           debug and below log the store, the query and timings to stderr\n"
    "  -t, --timeout N          accepted for salt-run's command line (brine answers from the store)\n"
    "  --hard-crash             accepted for salt-run's command line (brine has no traceback to show)\n"
    "  --async                  run, print salt-run's asynchronous-mode warning and the jid, not the result\n"
    "  --kwargs-stdin           read more keyword arguments from standard input: one JSON object,\n"
    "                           its values taken as they are (for callers whose items are too big\n"
    "                           for one command-line word, such as the Salt queue backend)\n"
    "  -d, --doc                list the functions and their arguments (or one function's)\n"
    "  -h, --help               this help\n"
    "  --version                brine's version\n"
    "  --versions-report        brine's version and those of its libraries and system\n";

// Salt's log level names (salt.log.setup.LOG_LEVELS).
constexpr const char* kLogLevels[] = {"all",     "garbage", "trace", "debug",    "profile",
                                      "info",    "warning", "error", "critical", "quiet"};

struct Options {
  std::filesystem::path config_dir = config::kDefaultConfigDir;
  bool config_dir_given = false;
  std::optional<std::string> out;
  std::optional<int> out_indent;
  std::optional<std::filesystem::path> out_file;
  bool out_file_append = false;
  bool no_color = false;
  bool force_color = false;
  bool doc = false;
  bool help = false;
  bool version = false;
  bool versions_report = false;
  bool async = false;
  bool debug = false;  // -l at debug or below
  bool kwargs_stdin = false;
  std::vector<std::string> words;  // function and its arguments
};

class OptionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int ParseIndent(const std::string& text) {
  try {
    std::size_t used = 0;
    const int n = std::stoi(text, &used);
    if (used == text.size()) return n;
  } catch (const std::exception&) {
  }
  throw OptionError("--out-indent: expected an integer, got '" + text + "'");
}

// optparse's messages for -l and -t, which salt-run prints the same way.
std::string ParseLogLevelOption(const std::string& name, const std::string& text) {
  std::string lower;
  for (const char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string choices;
  for (const char* l : kLogLevels) {
    if (lower == l) return lower;
    choices += std::string(choices.empty() ? "" : ", ") + "'" + l + "'";
  }
  throw OptionError("option " + name + ": invalid choice: '" + text + "' (choose from " + choices + ")");
}

void CheckTimeout(const std::string& name, const std::string& text) {
  try {
    std::size_t used = 0;
    (void)std::stoi(text, &used);
    if (used == text.size()) return;
  } catch (const std::exception&) {
  }
  throw OptionError("option " + name + ": invalid integer value: '" + text + "'");
}

// True when `option` is --<name> for a parameter <name> of the brine.*
// function `function`.
bool IsBrineKeywordOption(const std::string& function, const std::string& option) {
  if (function.rfind("brine.", 0) != 0 || option.rfind("--", 0) != 0) return false;
  const FunctionSpec* f = FindFunction(function);
  if (f == nullptr) return false;
  for (const Param& p : f->params) {
    if ("--" + p.name == option) return true;
  }
  return false;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name) -> std::string {
      if (i + 1 >= args.size()) throw OptionError(name + " option requires an argument");
      return args[++i];
    };
    std::string name = a;
    std::optional<std::string> inline_value;
    if (a.rfind("--", 0) == 0) {
      if (const auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
      }
    }
    auto arg = [&](const std::string& n) { return inline_value ? *inline_value : value(n); };
    if (name == "-c" || name == "--config-dir") {
      o.config_dir = arg(name);
      o.config_dir_given = true;
    } else if (name == "--out" || name == "--output") {
      o.out = arg(name);
    } else if (name == "--out-indent" || name == "--output-indent") {
      o.out_indent = ParseIndent(arg(name));
    } else if (name == "--out-file" || name == "--output-file") {
      o.out_file = arg(name);
    } else if (name == "--no-color" || name == "--no-colour") {
      o.no_color = true;
    } else if (name == "--force-color" || name == "--force-colour") {
      o.force_color = true;
    } else if (name == "--out-file-append" || name == "--output-file-append") {
      o.out_file_append = true;
    } else if (name == "-l" || name == "--log-level") {
      const std::string level = ParseLogLevelOption(name, arg(name));
      o.debug = level == "all" || level == "garbage" || level == "trace" || level == "debug";
    } else if (name == "--timeout" && !o.words.empty() && IsBrineKeywordOption(o.words[0], name)) {
      // brine.sql's own time budget, not salt-run's -t (which brine ignores).
      o.words.push_back("timeout=" + arg(name));
    } else if (name == "-t" || name == "--timeout") {
      CheckTimeout(name, arg(name));
    } else if (name == "--hard-crash") {
    } else if (name == "--async") {
      o.async = true;
    } else if (name == "--versions-report" || name == "-V") {
      o.versions_report = true;
    } else if (name == "-d" || name == "--doc" || name == "--documentation") {
      o.doc = true;
    } else if (name == "-h" || name == "--help") {
      o.help = true;
    } else if (name == "--version") {
      o.version = true;
    } else if (name == "--kwargs-stdin") {
      o.kwargs_stdin = true;
    } else if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.' && o.words.empty()) {
      // An option before the function; after it, a word starting with '-' is an argument.
      throw OptionError("no such option: " + a);
    } else if (!o.words.empty() && IsBrineKeywordOption(o.words[0], name)) {
      // brine's own functions (not Salt's) take their keyword arguments as
      // options too: `brine.export --since X FILE` is `since=X`.
      o.words.push_back(name.substr(2) + "=" + arg(name));
    } else if (a.rfind("--", 0) == 0 && a.size() > 2) {
      throw OptionError("no such option: " + a);
    } else {
      o.words.push_back(a);
    }
  }
  return o;
}

// --kwargs-stdin: the keyword arguments of one JSON object on `in`, after
// the command line's. Throws UsageError for anything else, and for a keyword
// the command line gave too.
void AddStdinKeywords(std::istream& in, ParsedArgs& args) {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  Value object;
  try {
    object = ParseJson(text);
  } catch (const JsonError& e) {
    throw UsageError(std::string("--kwargs-stdin: standard input is not JSON: ") + e.what());
  }
  if (!object.is_map()) throw UsageError("--kwargs-stdin: standard input must be one JSON object");
  for (const auto& [key, value] : object.as_map()) {
    for (const auto& [given, unused] : args.keyword) {
      if (given == key) throw UsageError("--kwargs-stdin: keyword argument '" + key + "' given twice");
    }
    args.keyword.emplace_back(key, value);
  }
}

// Salt's outputter pipeline (spec 12.1): --out wins over the data's own
// outputter; an unknown name falls back to nested with an error line.
struct Rendered {
  std::string text;
  std::string warning;
};

// The outputter for a result whose own outputter is `own` ("" for none).
std::string OutputterName(const Options& o, const std::string& own, std::string& warning) {
  std::string name = own.empty() ? "nested" : own;
  if (o.out && !o.out->empty() && *o.out != "highstate") name = *o.out;
  if (!output::IsKnownOutputter(name)) {
    warning = "Invalid outputter " + name + " specified, fall back to nested";
    name = "nested";
  }
  return name;
}

output::OutputOptions OutputOptionsFor(const Options& o, bool color) {
  output::OutputOptions opts;
  opts.indent = o.out_indent;
  opts.color = color ? output::OutputOptions::Color::kOn : output::OutputOptions::Color::kOff;
  return opts;
}

Rendered Render(const Options& o, const Value& result, bool color) {
  std::string own;
  const Value* data = &result;
  if (result.is_map() && result.as_map().size() == 2 && result.Find("outputter") != nullptr &&
      result.Find("data") != nullptr) {
    data = result.Find("data");
    if (const std::string* name = result.FindString("outputter")) own = *name;
  }
  Rendered r;
  const std::string name = OutputterName(o, own, r.warning);
  r.text = output::Render(name, *data, OutputOptionsFor(o, color));
  return r;
}

// Where a streamed result goes: stdout, or appended to --out-file.
class StreamTarget {
 public:
  StreamTarget(const Options& o, bool color, std::ostream& out, std::ostream& err)
      : o_(o), color_(color), out_(out), err_(err) {}

  std::unique_ptr<output::MapStream> Open(const Value& outputter) {
    std::string warning;
    const std::string* own = outputter.is_string() ? &outputter.as_string() : nullptr;
    const std::string name = OutputterName(o_, own != nullptr ? *own : std::string(), warning);
    if (!warning.empty()) err_ << "brine-run: " << warning << "\n";
    std::ostream* dest = &out_;
    if (o_.out_file) {
      file_ = std::make_unique<std::ofstream>(*o_.out_file, std::ios::app | std::ios::binary);
      dest = file_.get();
    }
    return std::make_unique<output::MapStream>(name, OutputOptionsFor(o_, color_ && !o_.out_file), *dest);
  }

  // After the function: whether everything streamed reached its destination.
  [[nodiscard]] bool Ok() {
    out_.flush();
    if (file_) file_->flush();
    return !file_ || static_cast<bool>(*file_);
  }

 private:
  const Options& o_;
  bool color_;
  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<std::ofstream> file_;
};

int Emit(const Options& o, const Value& result, bool color, std::ostream& out, std::ostream& err) {
  const Rendered r = Render(o, result, color && !o.out_file);
  if (!r.warning.empty()) err << "brine-run: " << r.warning << "\n";
  if (o.out_file) {
    std::ofstream f(*o.out_file, std::ios::app | std::ios::binary);
    f << r.text;
    if (!f) {
      err << "brine-run: cannot write to " << o.out_file->string() << "\n";
      return kExitRuntime;
    }
  } else {
    out << r.text;
  }
  out.flush();
  return kExitOk;
}

// salt --versions-report's layout: sections of right-aligned names.
std::string VersionsReport() {
  auto line = [](const std::string& name, const std::string& value) {
    std::string pad = name.size() < 18 ? std::string(18 - name.size(), ' ') : "";
    return pad + name + ": " + value + "\n";
  };
  std::string r = "Brine Version:\n" + line("brine", BRINE_VERSION) + "\nDependency Versions:\n" +
                  line("SQLite", store::SqliteVersion()) + line("ZeroMQ", ZmqVersion()) +
                  line("schema", std::to_string(store::LatestSchemaVersion())) + "\nSystem Versions:\n";
  utsname u{};
  if (::uname(&u) == 0) {
    r += line("system", u.sysname) + line("release", u.release) + line("machine", u.machine) +
         line("version", u.version);
  }
  return r;
}

// Salt empties --out-file once at start unless --out-file-append
// (salt.utils.parsers.OutputOptionsMixin), then every print appends.
bool TruncateOutFile(const Options& o, std::ostream& err) {
  if (!o.out_file || o.out_file_append) return true;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*o.out_file, ec)) return true;
  std::ofstream f(*o.out_file, std::ios::trunc | std::ios::binary);
  if (f) return true;
  err << "brine-run: cannot write to " << o.out_file->string() << "\n";
  return false;
}

std::string Signature(const FunctionSpec& f) {
  std::string s = f.name + "(";
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    if (i > 0) s += ", ";
    s += f.params[i].name;
    if (f.params[i].default_value) s += "=" + ToJsonForMessage(*f.params[i].default_value);
  }
  return s + ")";
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err, Terminal terminal) {
  Options o;
  try {
    o = ParseOptions(argc, argv);
  } catch (const OptionError& e) {
    err << "brine-run: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.help) {
    out << kUsage;
    return kExitOk;
  }
  if (o.version) {
    out << "brine-run " << BRINE_VERSION << "\n";
    return kExitOk;
  }
  if (o.versions_report) {
    out << VersionsReport();
    return kExitOk;
  }
  if (!TruncateOutFile(o, err)) return kExitRuntime;
  const bool tty = terminal == Terminal::kTty || (terminal == Terminal::kDetect && ::isatty(1) == 1);
  const bool color = o.force_color || (tty && !o.no_color);
  if (o.doc) {
    Value docs = Value::EmptyMap();
    for (const auto& f : AllFunctions()) {
      if (!o.words.empty() && f.name != o.words[0] && f.name.rfind(o.words[0] + ".", 0) != 0) continue;
      docs.Set(f.name, Signature(f) + "\n\n" + f.doc);
    }
    return Emit(o, docs, color, out, err);
  }
  if (o.words.empty()) {
    err << "brine-run: no function given\n" << kUsage;
    return kExitUsage;
  }
  const std::string function = o.words[0];
  const FunctionSpec* spec = FindFunction(function);
  if (spec == nullptr) {
    (void)Emit(o, Value("'" + function + "' is not available."), color, out, err);
    err << "brine-run: '" << function << "' is not available (brine-run -d lists the functions)\n";
    return kExitUsage;
  }

  // A missing master file means Salt's defaults, but a missing folder is a
  // typo: answering from the default store would look like an empty history.
  if (std::error_code ec; !std::filesystem::is_directory(o.config_dir, ec)) {
    err << "brine-run: -c " << o.config_dir.string() << ": no such folder\n";
    return kExitUsage;
  }
  config::MasterConfig cfg;
  try {
    cfg = config::LoadMasterConfig(o.config_dir);
  } catch (const config::ConfigError& e) {
    err << "brine-run: " << e.what() << "\n";
    return kExitUsage;
  }
  SystemClock clock;
  // --async prints the jid, never the result: what a function prints as it
  // goes is dropped.
  std::ostream discard(nullptr);
  std::ostream& result_out = o.async ? discard : out;
  Context ctx(cfg, clock, result_out, err);
  if (o.debug) {
    ctx.EnableDebug();
    std::string files;
    for (const auto& f : cfg.files_read) files += (files.empty() ? "" : ", ") + f.string();
    ctx.Debug("config " + o.config_dir.string() + ": read " + (files.empty() ? std::string("no file") : files) +
              "; store " + store::RedactDatabase(cfg.brine.database) +
              (cfg.brine.read_database ? "; reads from " + store::RedactDatabase(*cfg.brine.read_database) : std::string()));
  }
  ctx.SetOutputterOption(o.out.value_or(""));
  const auto started = std::chrono::steady_clock::now();
  const Options stream_options = o.async ? Options{} : o;  // StreamTarget keeps a reference
  StreamTarget streamed(stream_options, color, result_out, err);
  ctx.SetMapStreamOpener([&](const Value& outputter) { return streamed.Open(outputter); });
  ctx.SetPrinters([&](const Value& v) { return Emit(stream_options, v, color, result_out, err) == kExitOk; },
                  [&](const std::string& text) {
                    if (stream_options.out_file) {
                      std::ofstream f(*stream_options.out_file, std::ios::app | std::ios::binary);
                      f << text;
                      return static_cast<bool>(f);
                    }
                    result_out << text;
                    result_out.flush();
                    return static_cast<bool>(result_out) || o.async;
                  });
  ctx.SetTerminal(tty && !o.out_file);
  Value result;
  try {
    ParsedArgs args = ParseInput(std::vector<std::string>(o.words.begin() + 1, o.words.end()));
    if (o.kwargs_stdin) AddStdinKeywords(std::cin, args);
    const Args bound = BindArgs(function, spec->params, args);
    if (ctx.debugging()) {
      std::string shown;
      for (std::size_t i = 0; i < bound.values().size(); ++i) {
        shown += (i > 0 ? ", " : "") + bound.params()[i].name + "=" + ToJsonForMessage(bound.values()[i]);
      }
      ctx.Debug("calling " + function + "(" + shown + ")");
    }
    if (o.async) {
      // salt-run hands the call to the master and returns at once, logging
      // the tag it runs under; brine's functions answer from the store, so
      // the call runs here and only its jid is printed, as salt-run prints it.
      const std::string jid = JidGenerator(clock, JidUniqueness::kPlain, 0).Next();
      (void)spec->call(ctx, bound);
      err << "[WARNING ] Running in asynchronous mode. Results of this execution may be collected by attaching to "
             "the master event bus or by examining the master job cache, if configured. This execution is running "
             "under tag salt/run/"
          << jid << "\n";
      ctx.Debug(function + " took " + std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                                          std::chrono::steady_clock::now() - started)
                                                          .count()) +
                " us");
      return Emit(o, Value(jid), color, out, err);
    }
    result = spec->call(ctx, bound);
    ctx.Debug(function + " took " + std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                                        std::chrono::steady_clock::now() - started)
                                                        .count()) +
              " us");
  } catch (const UsageError& e) {
    // salt-run returns this text as the runner's result, so it goes through the outputter.
    (void)Emit(o, Value("\nPassed invalid arguments: " + std::string(e.what()) + "\n\nUsage:\n" + spec->doc), color,
               out, err);
    err << "brine-run: " << e.what() << "\n";
    return kExitUsage;
  } catch (const RuntimeFailure& e) {
    err << "brine-run: " << e.what() << "\n";
    return kExitRuntime;
  } catch (const store::StoreError& e) {
    err << "brine-run: " << e.what() << "\n";
    return kExitRuntime;
  }
  if (ctx.result_suppressed()) {
    if (streamed.Ok()) return kExitOk;
    err << "brine-run: cannot write to " << (o.out_file ? o.out_file->string() : "stdout") << "\n";
    return kExitRuntime;
  }
  const int code = Emit(o, result, color, out, err);
  return code != kExitOk ? code : ctx.exit_code();
}

}  // namespace brine::runner
