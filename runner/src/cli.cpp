#include "brine/runner/cli.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arguments.h"
#include "brine/config/master_config.h"
#include "brine/core/json.h"
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
    "event.send, brine.stats.\n"
    "Arguments are typed as salt-run types them (YAML). Options may also follow the function.\n"
    "\n"
    "Options:\n"
    "  -c, --config-dir DIR     the Salt master's config folder (default /etc/salt)\n"
    "  --out, --output NAME     outputter: nested (default), json, yaml, txt, raw\n"
    "  --out-indent N           indent for json/yaml (negative: one line)\n"
    "  --out-file FILE          append the output to FILE instead of printing it\n"
    "  --no-color               no colours (the default when stdout is not a terminal)\n"
    "  --force-color            colours even when stdout is not a terminal\n"
    "  -l, --log-level LEVEL    accepted for salt-run's command line\n"
    "  --kwargs-stdin           read more keyword arguments from standard input: one JSON object,\n"
    "                           its values taken as they are (for callers whose items are too big\n"
    "                           for one command-line word, such as the Salt queue backend)\n"
    "  -d, --doc                list the functions and their arguments (or one function's)\n"
    "  -h, --help               this help\n"
    "  --version                brine's version\n";

struct Options {
  std::filesystem::path config_dir = config::kDefaultConfigDir;
  std::optional<std::string> out;
  std::optional<int> out_indent;
  std::optional<std::filesystem::path> out_file;
  bool no_color = false;
  bool force_color = false;
  bool doc = false;
  bool help = false;
  bool version = false;
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
    } else if (name == "-l" || name == "--log-level") {
      (void)arg(name);
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

  config::MasterConfig cfg;
  try {
    cfg = config::LoadMasterConfig(o.config_dir);
  } catch (const config::ConfigError& e) {
    err << "brine-run: " << e.what() << "\n";
    return kExitUsage;
  }
  SystemClock clock;
  Context ctx(cfg, clock, out);
  StreamTarget streamed(o, color, out, err);
  ctx.SetMapStreamOpener([&](const Value& outputter) { return streamed.Open(outputter); });
  Value result;
  try {
    ParsedArgs args = ParseInput(std::vector<std::string>(o.words.begin() + 1, o.words.end()));
    if (o.kwargs_stdin) AddStdinKeywords(std::cin, args);
    result = spec->call(ctx, BindArgs(function, spec->params, args));
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
  return Emit(o, result, color, out, err);
}

}  // namespace brine::runner
