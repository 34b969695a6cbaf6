#include "brine/args/arguments.h"

#include <algorithm>

#include "brine/config/yaml.h"

namespace brine::args {
namespace {

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; });
}

std::string_view Strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Python's repr() of a parameter name list: 'a', 'a' and 'b', 'a', 'b', and 'c'.
std::string NameList(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += names.size() == 2 ? " and " : (i + 1 == names.size() ? ", and " : ", ");
    out += "'" + names[i] + "'";
  }
  return out;
}

bool IsKeywordName(std::string_view s) {
  if (s.empty()) return false;
  const auto first = static_cast<unsigned char>(s[0]);
  if (!(std::isalpha(first) || first == '_' || first >= 0x80)) return false;
  return std::all_of(s.begin() + 1, s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || u == '_' || u == '.' || u == '-' || u >= 0x80;
  });
}

}  // namespace

Value YamlifyArg(std::string_view word) {
  const Value original{std::string(word)};
  if (word.empty() || IsBlank(word)) return original;
  const std::string_view stripped = Strip(word);
  if (word.find('_') != std::string_view::npos &&
      std::all_of(stripped.begin(), stripped.end(), [](char c) { return (c >= '0' && c <= '9') || c == '_'; })) {
    return original;
  }
  if (word.find_first_of("\t\r\n") != std::string_view::npos) return original;
  if (word == "---" || word == "...") return original;
  // PyYAML reads a leading `%` as a directive, which must be followed by a
  // document on a later line; with no newline here that is an error, so Salt
  // keeps the text. yaml-cpp would give null (list_jobs search_function=% then
  // matched every job).
  if (!stripped.empty() && stripped.front() == '%') return original;
  if (word == "None") return Value();
  Value parsed;
  try {
    parsed = config::ParseYaml(word);
  } catch (const std::exception&) {
    return original;
  }
  // Text with `#` (maybe a comment): Salt keeps the text when the parse is a
  // string or null, and otherwise returns the parse as it is, before (and so
  // without) the braces rule below: `- a #c` is the list ["a"].
  const bool hash = word.find('#') != std::string_view::npos;
  if (hash && (parsed.is_string() || parsed.is_null())) return original;
  if (!hash && parsed.is_map()) return word.front() == '{' ? parsed : original;
  if (!hash && parsed.is_list()) return word.front() == '[' ? parsed : original;
  // YAML reads `|` as "" and `!` as "" or null; Salt keeps them.
  if ((word == "|" || word == "!") && ((parsed.is_string() && parsed.as_string().empty()) || parsed.is_null())) {
    return original;
  }
  return parsed;
}

ParsedArgs ParseInput(const std::vector<std::string>& words) {
  ParsedArgs out;
  for (const std::string& w : words) {
    const auto eq = w.find('=');
    // name=value, but not name==value (Salt's (?!=) lookahead).
    if (eq != std::string::npos && eq + 1 <= w.size() && (eq + 1 == w.size() || w[eq + 1] != '=') &&
        IsKeywordName(std::string_view(w).substr(0, eq))) {
      out.keyword.emplace_back(w.substr(0, eq), YamlifyArg(std::string_view(w).substr(eq + 1)));
    } else {
      out.positional.push_back(YamlifyArg(w));
    }
  }
  return out;
}

Args::Args(std::string function, const std::vector<Param>& params, std::vector<Value> values)
    : function_(std::move(function)), params_(&params), values_(std::move(values)) {
  if (values_.size() != params_->size()) {
    throw std::logic_error(function_ + " was given " + std::to_string(values_.size()) + " values for " +
                           std::to_string(params_->size()) + " parameters");
  }
}

const Value& Args::operator[](std::string_view name) const {
  for (std::size_t i = 0; i < params_->size(); ++i) {
    if ((*params_)[i].name == name) return values_[i];
  }
  throw std::logic_error(function_ + " reads the argument '" + std::string(name) + "', which it does not declare");
}

Args BindArgs(const std::string& function, const std::vector<Param>& params, const ParsedArgs& args) {
  const std::string fn = function.substr(function.rfind('.') + 1) + "()";
  // A last parameter named **name collects the keywords no other parameter
  // takes, as Python's **kwargs does.
  const bool has_extra = !params.empty() && params.back().name.starts_with("**");
  const std::size_t named = params.size() - (has_extra ? 1 : 0);
  std::vector<std::optional<Value>> bound(params.size());
  if (args.positional.size() > named) {
    std::size_t required = 0;
    for (std::size_t i = 0; i < named; ++i) required += params[i].default_value ? 0 : 1;
    std::string takes;
    if (required == named) {
      takes = std::to_string(named) + " positional argument" + (named == 1 ? "" : "s");
    } else {
      takes = "from " + std::to_string(required) + " to " + std::to_string(named) + " positional arguments";
    }
    const std::size_t n = args.positional.size();
    throw UsageError(fn + " takes " + takes + " but " + std::to_string(n) + (n == 1 ? " was" : " were") + " given");
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  ValueMap extra;
  for (const auto& keyword : args.keyword) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& name = keyword.first;
    const Value& value = keyword.second;
    auto it = std::find_if(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(named),
                           [&](const Param& p) { return p.name == name; });
    if (it == params.begin() + static_cast<std::ptrdiff_t>(named)) {
      if (!has_extra) throw UsageError(fn + " got an unexpected keyword argument '" + name + "'");
      for (const auto& [given, unused] : extra) {
        if (given == name) throw UsageError(fn + " got multiple values for argument '" + name + "'");
      }
      extra.emplace_back(name, value);
      continue;
    }
    auto& slot = bound[static_cast<std::size_t>(it - params.begin())];
    if (slot) throw UsageError(fn + " got multiple values for argument '" + name + "'");
    slot = value;
  }
  if (has_extra) bound.back() = Value(std::move(extra));
  std::vector<std::string> missing;
  std::vector<Value> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) {
      out.push_back(*bound[i]);
    } else if (params[i].default_value) {
      out.push_back(*params[i].default_value);
    } else {
      missing.push_back(params[i].name);
      out.emplace_back();
    }
  }
  if (!missing.empty()) {
    throw UsageError(fn + " missing " + std::to_string(missing.size()) + " required positional argument" +
                     (missing.size() == 1 ? "" : "s") + ": " + NameList(missing));
  }
  return Args(function, params, std::move(out));
}

}  // namespace brine::args
