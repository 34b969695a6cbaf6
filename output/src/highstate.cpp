// A port of the behaviour (not the code) of salt/output/highstate.py as of
// Salt 3007: `output()` unwraps `return`/`data` envelopes, drops an
// orchestration's `retcode`, and formats each host; `_format_host` prints one
// block per state in `__run_num__` order and the summary; `_format_changes`
// renders changes with `nested` at indent 14 (or a nested highstate for
// `{"out": "highstate", "ret": ...}` and for orchestration states).
//
// Where Salt's code raises KeyError, AttributeError or TypeError, Salt's
// output pipeline falls back to `nested`; this file throws `Fallback` at the
// same points and RenderHighstate returns nullopt.
#include "highstate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "nested.h"
#include "pprint.h"
#include "py_text.h"

namespace brine::output {
namespace {

// Salt's outputter would raise here; the pipeline prints `nested` instead.
struct Fallback {};

constexpr std::string_view kFourteen = "              ";

std::vector<std::string> Split(std::string_view s, std::string_view sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      parts.emplace_back(s.substr(start));
      return parts;
    }
    parts.emplace_back(s.substr(start, at - start));
    start = at + sep.size();
  }
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  std::size_t at = 0;
  while ((at = s.find(from, at)) != std::string::npos) {
    s.replace(at, from.size(), to);
    at += to.size();
  }
  return s;
}

std::string StripEsc(std::string s) {
  std::replace(s.begin(), s.end(), '\x1b', '?');
  return s;
}

// Python's isinstance(v, int) (bool included) / numbers.
bool IsPyInt(const Value& v) { return v.is_bool() || v.is_int(); }
bool IsPyNumber(const Value& v) { return v.is_bool() || v.is_number(); }
double AsDouble(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  if (v.kind() == Value::Kind::kInt) return static_cast<double>(v.as_int());
  if (v.kind() == Value::Kind::kUint) return static_cast<double>(v.as_uint());
  return v.as_float();
}

// A key of Salt's `rcounts` dict, with Python's dict equality: True == 1 ==
// 1.0, False == 0, None, and strs by value. Lists and dicts are unhashable.
struct CountKey {
  enum class Kind { kNumber, kNone, kStr } kind;
  double number = 0;
  std::string str;

  static CountKey Of(const Value& v) {
    if (v.is_null()) return {Kind::kNone};
    if (IsPyNumber(v)) return {Kind::kNumber, AsDouble(v)};
    if (v.is_string()) return {Kind::kStr, 0, v.as_string()};
    throw Fallback{};  // TypeError: unhashable type
  }
  static CountKey Str(std::string s) { return {Kind::kStr, 0, std::move(s)}; }
  bool operator==(const CountKey& o) const {
    return kind == o.kind && (kind != Kind::kNumber || number == o.number) &&
           (kind != Kind::kStr || str == o.str);
  }
};

class Counts {
 public:
  void Add(const CountKey& key) {
    for (auto& [k, n] : counts_) {
      if (k == key) {
        ++n;
        return;
      }
    }
    counts_.emplace_back(key, 1);
  }
  long Get(const CountKey& key) const {
    for (const auto& [k, n] : counts_) {
      if (k == key) return n;
    }
    return 0;
  }
  long Sum() const {
    long total = 0;
    for (const auto& entry : counts_) total += entry.second;
    return total;
  }
  std::size_t MaxDigits() const {
    std::size_t widest = 0;
    for (const auto& entry : counts_) widest = std::max(widest, std::to_string(entry.second).size());
    return widest;
  }

 private:
  std::vector<std::pair<CountKey, long>> counts_;
};

const CountKey kTrue{CountKey::Kind::kNumber, 1};
const CountKey kFalse{CountKey::Kind::kNumber, 0};
const CountKey kNone{CountKey::Kind::kNone};

// float(x) as the summary reads a duration: numbers, or a str that is a float
// or a float followed by " ms". nullopt where Salt logs "Cannot parse".
std::optional<double> DurationMs(const Value& d) {
  if (IsPyNumber(d)) return AsDouble(d);
  if (!d.is_string()) throw Fallback{};  // float(None) and friends: TypeError
  if (auto f = py::ParseFloat(d.as_string())) return f;
  const std::string& s = d.as_string();
  return py::ParseFloat(std::string_view(s).substr(0, s.find(" ms")));
}

std::string LeftPad(const std::string& s, long width) {
  const long len = static_cast<long>(py::Length(s));
  return len >= width ? s : std::string(static_cast<std::size_t>(width - len), ' ') + s;
}

// --- textwrap.TextWrapper(width=80, initial_indent=' '*14, subsequent_indent=' '*14).fill

bool IsWrapSpace(char32_t c) { return c == '\t' || c == '\n' || c == 0x0B || c == 0x0C || c == '\r' || c == ' '; }
// textwrap's character classes: \w, its `letter` [^\d\W] and its
// `word_punct` [\w!"'&.,?]. Non-ASCII characters count as letters (Python
// asks the Unicode database; symbols such as emoji are not \w there).
bool IsWordChar(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}
bool IsLetter(char32_t c) { return IsWordChar(c) && !(c >= '0' && c <= '9'); }
bool IsWordPunct(char32_t c) {
  return IsWordChar(c) || c == '!' || c == '"' || c == '\'' || c == '&' || c == '.' || c == ',' || c == '?';
}

std::u32string ExpandTabs(std::u32string_view text) {
  std::u32string out;
  std::size_t column = 0;
  for (const char32_t c : text) {
    if (c == '\t') {
      const std::size_t n = 8 - column % 8;
      out.append(n, U' ');
      column += n;
    } else {
      out += c;
      column = (c == '\n' || c == '\r') ? 0 : column + 1;
    }
  }
  return out;
}

// textwrap's wordsep_re split, alternative by alternative: a whitespace run;
// an em-dash (`--`) after word punctuation and before a word character; or
// the shortest word that ends at a hyphen between letters (`long-` of
// `long-winded`), before whitespace or the end, or before an em-dash.
std::vector<std::u32string> WrapChunks(const std::u32string& text) {
  const std::size_t n = text.size();
  auto at = [&](std::size_t i) { return i < n ? text[i] : U'\0'; };
  // -{2,}(?=\w) at i: the end of the dashes, or 0 when there is none.
  auto em_dash_end = [&](std::size_t i) -> std::size_t {
    std::size_t j = i;
    while (j < n && text[j] == '-') ++j;
    return j - i >= 2 && j < n && IsWordChar(text[j]) ? j : 0;
  };
  std::vector<std::u32string> chunks;
  std::size_t pos = 0;
  while (pos < n) {
    std::size_t end = pos;
    if (IsWrapSpace(text[pos])) {
      while (end < n && IsWrapSpace(text[end])) ++end;
    } else if (pos > 0 && IsWordPunct(text[pos - 1]) && em_dash_end(pos) != 0) {
      end = em_dash_end(pos);
    } else {
      for (end = pos + 1;; ++end) {
        if (text[end - 1] == '-' && end - 1 > pos) {
          // nws+? then `-`, with (?<=lt{2}-) or (?<=lt-lt-), and (?=lt-?lt).
          const std::size_t h = end - 1;
          const bool behind = (h >= 2 && IsLetter(text[h - 1]) && IsLetter(text[h - 2])) ||
                              (h >= 3 && IsLetter(text[h - 1]) && text[h - 2] == '-' && IsLetter(text[h - 3]));
          const bool ahead = IsLetter(at(end)) && (IsLetter(at(end + 1)) || (at(end + 1) == '-' && IsLetter(at(end + 2))));
          if (behind && ahead) break;
        }
        if (end == n || IsWrapSpace(text[end])) break;
        if (IsWordPunct(text[end - 1]) && em_dash_end(end) != 0) break;
      }
    }
    chunks.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return chunks;
}

bool IsBlank(std::u32string_view s) {
  return std::all_of(s.begin(), s.end(), [](char32_t c) { return py::IsSpace(c); });
}

std::string WrapFill(std::string_view text_bytes) {
  constexpr std::size_t kWidth = 80;
  const std::u32string indent(14, U' ');
  std::u32string text = ExpandTabs(py::Decode(text_bytes));
  for (char32_t& c : text) {
    if (IsWrapSpace(c)) c = ' ';
  }
  std::vector<std::u32string> chunks = WrapChunks(text);
  std::reverse(chunks.begin(), chunks.end());
  std::vector<std::u32string> lines;
  while (!chunks.empty()) {
    std::vector<std::u32string> line;
    std::size_t len = 0;
    const std::size_t width = kWidth - indent.size();
    if (!lines.empty() && IsBlank(chunks.back())) chunks.pop_back();
    while (!chunks.empty() && len + chunks.back().size() <= width) {
      len += chunks.back().size();
      line.push_back(std::move(chunks.back()));
      chunks.pop_back();
    }
    if (!chunks.empty() && chunks.back().size() > width) {
      // _handle_long_word with break_long_words and break_on_hyphens.
      const std::size_t space_left = width - len;  // width >= 1 here
      std::u32string& chunk = chunks.back();
      std::size_t end = space_left;
      if (chunk.size() > space_left) {
        const std::size_t hyphen = chunk.rfind(U'-', space_left == 0 ? 0 : space_left - 1);
        if (hyphen != std::u32string::npos && hyphen > 0 && hyphen < space_left &&
            std::any_of(chunk.begin(), chunk.begin() + static_cast<long>(hyphen),
                        [](char32_t c) { return c != '-'; })) {
          end = hyphen + 1;
        }
      }
      line.push_back(chunk.substr(0, end));
      chunk.erase(0, end);
    }
    if (!line.empty() && IsBlank(line.back())) line.pop_back();
    if (!line.empty()) {
      std::u32string joined = indent;
      for (const auto& piece : line) joined += piece;
      lines.push_back(std::move(joined));
    }
  }
  std::u32string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += U'\n';
    out += lines[i];
  }
  return py::Encode(out);
}

// --- The outputter. ------------------------------------------------------------

class HighstatePrinter {
 public:
  explicit HighstatePrinter(const HighstateStyle& style) : style_(style), c_(style.colors) {}

  std::string Output(const Value& input, int indent_level) {
    const Value* data = &input;
    if (data->is_map()) {
      if (const Value* r = data->Find("return")) data = r;
    }
    if (data->is_map()) {
      if (const Value* d = data->Find("data")) data = d;
    }
    if (data->is_map() && data->as_map().size() == 1) {
      const Value& inner = data->as_map().front().second;
      if (inner.is_map() && inner.Find("jid") != nullptr && inner.Find("fun") != nullptr) {
        if (const Value* r = inner.Find("return")) {
          if (!r->is_map()) throw Fallback{};  // AttributeError: no .get
          if (const Value* d = r->Find("data")) data = d;
        }
      }
    }
    if (IsPyInt(*data)) throw Fallback{};  // returned as is; not a str
    if (data->is_string()) return data->as_string();
    if (data->is_null()) return "None";
    if (!data->is_map()) throw Fallback{};  // AttributeError: no .keys()
    const ValueMap& hosts = data->as_map();
    long masters = 0;
    bool has_retcode = false;
    for (const auto& [key, value] : hosts) {
      if (key.size() >= 7 && key.compare(key.size() - 7, 7, "_master") == 0) ++masters;
      if (key == "retcode") has_retcode = true;
    }
    const bool drop_retcode = has_retcode && masters == 1;
    std::string out;
    bool first = true;
    for (const auto& [host, hostdata] : hosts) {
      if (drop_retcode && host == "retcode") continue;
      if (!first) out += '\n';
      first = false;
      out += FormatHost(host, hostdata, indent_level).first;
    }
    return out;  // "" for no hosts: Salt logs an error and prints nothing
  }

 private:
  std::string Colored(std::string_view color, std::string_view text) const {
    std::string s(color);
    s += text;
    s += c_.endc;
    return s;
  }

  std::pair<std::string, bool> FormatHost(const std::string& host_in, const Value& data, int indent_level) {
    std::string_view hcolor = c_.green;
    std::vector<std::string> hstrs;
    long nchanges = 0;
    if (IsPyInt(data)) {
      nchanges = 1;
      hstrs.push_back(std::string(hcolor) + "    " + py::Str(data) + std::string(c_.endc));
      hcolor = c_.cyan;
    } else if (data.is_string()) {
      nchanges = 1;
      for (const std::string& line : py::SplitLines(data.as_string())) {
        hstrs.push_back(std::string(hcolor) + "    " + line + std::string(c_.endc));
      }
      hcolor = c_.cyan;
    } else if (data.is_list()) {
      hcolor = c_.light_red;
      hstrs.push_back("    " + Colored(hcolor, "Data failed to compile:"));
      for (const Value& err : data.as_list()) {
        std::string text = py::Str(err);
        if (style_.strip_esc && err.is_string()) text = StripEsc(text);
        hstrs.push_back(std::string(hcolor) + "----------\n    " + text + std::string(c_.endc));
      }
    } else if (data.is_map()) {
      FormatStates(host_in, data.as_map(), indent_level, hcolor, hstrs, nchanges);
    }
    const std::string host = style_.strip_esc ? StripEsc(host_in) : host_in;
    hstrs.insert(hstrs.begin(), std::string(hcolor) + host + ":" + std::string(c_.endc));
    std::string out;
    for (std::size_t i = 0; i < hstrs.size(); ++i) {
      if (i > 0) out += '\n';
      out += hstrs[i];
    }
    return {out, nchanges > 0};
  }

  using State = const std::pair<std::string, Value>*;

  // sorted(data, key=lambda k: data[k].get("__run_num__", 0)), stable.
  static std::vector<State> RunOrder(std::vector<State> states) {
    if (states.size() < 2) return states;
    std::vector<const Value*> keys;
    const Value zero(0);
    bool numbers = true;
    bool strings = true;
    for (State s : states) {
      const Value* k = s->second.Find("__run_num__");
      if (k == nullptr) k = &zero;
      numbers = numbers && IsPyNumber(*k);
      strings = strings && k->is_string();
      keys.push_back(k);
    }
    if (!numbers && !strings) throw Fallback{};  // TypeError: '<' not supported
    std::vector<std::size_t> order(states.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (numbers) return AsDouble(*keys[a]) < AsDouble(*keys[b]);
      return py::CodePointLess(keys[a]->as_string(), keys[b]->as_string());
    });
    std::vector<State> sorted;
    for (const std::size_t i : order) sorted.push_back(states[i]);
    return sorted;
  }

  static const Value& Require(const Value& map, std::string_view key) {
    const Value* v = map.Find(key);
    if (v == nullptr) throw Fallback{};  // KeyError
    return *v;
  }

  // _format_changes: (changed, text appended after "Changes:   ").
  std::pair<bool, std::string> FormatChanges(const Value& changes) {
    if (!changes.Truthy()) return {false, ""};
    if (!changes.is_map()) return {true, "Invalid Changes data: " + py::Str(changes)};
    const Value* ret = changes.Find("ret");
    const Value* out = changes.Find("out");
    if (ret != nullptr && !ret->is_null() && out != nullptr && out->is_string() &&
        out->as_string() == "highstate") {
      if (!ret->is_map()) throw Fallback{};  // AttributeError: no .items()
      std::string ctext;
      bool changed = false;
      for (const auto& [host, hostdata] : ret->as_map()) {
        auto [text, c] = FormatHost(host, hostdata, 1);
        ctext += '\n';
        bool first = true;
        for (const std::string& line : py::SplitLines(text)) {
          if (!first) ctext += '\n';
          first = false;
          ctext += kFourteen;
          ctext += line;
        }
        changed = changed || c;
      }
      return {changed, ctext};
    }
    NestedStyle nested{.colors = c_, .retcode = 0, .strip_esc = style_.strip_esc, .base_indent = 14};
    return {true, "\n" + py::RStrip(RenderNested(changes, nested))};
  }

  std::string Comment(const Value& ret) {
    std::string comment = py::Strip(py::Str(Require(ret, "comment")));
    comment = ReplaceAll(std::move(comment), "\n", "\n" + std::string(kFourteen));
    if (const Value* d = ret.Find("data")) {
      if (d->is_list()) {
        for (const Value& item : d->as_list()) comment += " " + py::Str(item);
      } else if (d->is_map()) {
        for (const auto& [key, value] : d->as_map()) comment += "\n\t\t" + key + ": " + py::Str(value);
      } else {
        comment += " " + py::Str(*d);
      }
    }
    return comment;
  }

  static std::string WarningsText(const Value& w) {
    std::vector<std::string> items;
    if (w.is_list()) {
      for (const Value& item : w.as_list()) {
        if (!item.is_string()) throw Fallback{};  // TypeError in "\n".join
        items.push_back(item.as_string());
      }
    } else if (w.is_map()) {
      for (const auto& entry : w.as_map()) items.push_back(entry.first);
    } else if (w.is_string()) {
      const std::u32string text = py::Decode(w.as_string());
      for (const char32_t ch : text) items.push_back(py::Encode(std::u32string(1, ch)));
    } else {
      throw Fallback{};  // TypeError: not iterable
    }
    std::string joined;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) joined += '\n';
      joined += items[i];
    }
    return joined;
  }

  void FormatStates(const std::string& host, const ValueMap& data, int indent_level, std::string_view& hcolor,
                    std::vector<std::string>& hstrs, long& nchanges) {
    std::vector<State> states;
    for (const auto& entry : data) {
      const Value& info = entry.second;
      if (info.is_map() && entry.first != "changes" && info.Truthy() && info.Find("__run_num__") == nullptr) {
        hstrs.insert(hstrs.begin(), PFormat(info));
        hstrs.insert(hstrs.begin(),
                     "The State execution failed to record the order in which all states were executed. "
                     "The state return missing data is:");
      }
      if (info.is_map() && info.Find("result") != nullptr) states.push_back(&entry);
    }
    Counts rcounts;
    std::vector<double> durations;
    std::vector<double> parallel_durations;
    for (State state : RunOrder(std::move(states))) {
      const std::string& tname = state->first;
      const Value& ret = state->second;
      const Value& result = *ret.Find("result");
      rcounts.Add(CountKey::Of(result));
      const Value* duration = ret.Find("duration");
      const Value zero(0);
      if (auto ms = DurationMs(duration != nullptr ? *duration : zero)) {
        (ret.Find("__parallel__") != nullptr ? parallel_durations : durations).push_back(*ms);
      }

      std::string_view tcolor = c_.green;
      bool schanged = false;
      std::string ctext;
      const Value* name = ret.Find("name");
      if (name != nullptr && name->is_string() &&
          (name->as_string() == "state.orch" || name->as_string() == "state.orchestrate" ||
           name->as_string() == "state.sls")) {
        const std::string nested = Output(Require(ret, "changes"), indent_level + 1);
        const std::string pad(static_cast<std::size_t>(14 * indent_level), ' ');
        ctext = pad + ReplaceAll("\n" + nested, "\n", "\n" + pad);
        schanged = true;
        ++nchanges;
      } else {
        std::tie(schanged, ctext) = FormatChanges(Require(ret, "changes"));
        if (schanged) ++nchanges;
      }
      if (schanged) tcolor = c_.cyan;
      if (result.is_bool() && !result.as_bool()) hcolor = tcolor = c_.red;
      if (result.is_null()) hcolor = tcolor = c_.light_yellow;

      const std::vector<std::string> comps = Split(tname, "_|-");
      if (comps.size() < 4) throw Fallback{};  // IndexError (Salt itself crashes)
      const std::string comment = Comment(ret);
      auto line = [&](std::string_view label, const std::string& text) {
        return "    " + std::string(tcolor) + std::string(label) + text + std::string(c_.endc);
      };
      std::vector<std::string> block = {
          Colored(tcolor, "----------"),
          line("      ID: ", comps[1]),
          line("Function: ", comps[0] + "." + comps[3]),
          line("  Result: ", py::Str(result)),
          line(" Comment: ", comment),
      };
      if (const Value* started = ret.Find("start_time")) {
        block.push_back(line(" Started: ", py::Str(*started)));
        // ret.setdefault("duration", ""); a duration other than "" gets " ms".
        const bool no_duration = duration == nullptr || (duration->is_string() && duration->as_string().empty());
        block.push_back(line("Duration: ", no_duration ? "" : py::Str(*duration) + " ms"));
      }
      if (comps[1] != comps[2]) block.insert(block.begin() + 3, line("    Name: ", comps[2]));
      for (std::string& l : block) hstrs.push_back(std::move(l));
      hstrs.push_back(Colored(tcolor, "     Changes:   " + ctext));

      if (const Value* warnings = ret.Find("warnings")) {
        rcounts.Add(CountKey::Str("warnings"));
        hstrs.push_back("   " + std::string(c_.light_red) + " Warnings: " +
                        py::LStrip(WrapFill(WarningsText(*warnings))) + std::string(c_.endc));
      }
    }

    const long line_max_len = 9 + static_cast<long>(rcounts.MaxDigits()) + 2;
    auto counts = [&](std::string_view label, long n) {
      return std::string(label) + ": " +
             LeftPad(std::to_string(n), line_max_len - static_cast<long>(label.size() + 2));
    };
    const std::string rule(static_cast<std::size_t>(line_max_len), '-');
    hstrs.push_back(Colored(c_.cyan, "\nSummary for " + host + "\n" + rule));

    std::vector<std::string> changestats;
    if (rcounts.Get(kNone) > 0) {
      changestats.push_back(Colored(c_.light_yellow, "unchanged=" + std::to_string(rcounts.Get(kNone))));
    }
    if (nchanges > 0) changestats.push_back(Colored(c_.green, "changed=" + std::to_string(nchanges)));
    std::string stats;
    if (!changestats.empty()) {
      stats = " (";
      for (std::size_t i = 0; i < changestats.size(); ++i) stats += (i > 0 ? ", " : "") + changestats[i];
      stats += ")";
    }
    hstrs.push_back(Colored(c_.green, counts("Succeeded", rcounts.Get(kTrue) + rcounts.Get(kNone))) + stats);
    const long failed = rcounts.Get(kFalse);
    hstrs.push_back(Colored(failed != 0 ? c_.red : c_.cyan, counts("Failed", failed)));
    const long warned = rcounts.Get(CountKey::Str("warnings"));
    if (warned != 0) hstrs.push_back(Colored(c_.light_red, counts("Warnings", warned)));
    hstrs.push_back(Colored(c_.cyan, rule + "\nTotal states run: " +
                                         LeftPad(std::to_string(rcounts.Sum() - warned), line_max_len - 7)));

    double total_ms = 0;
    for (const double d : durations) total_ms += d;
    if (!parallel_durations.empty()) {
      total_ms += *std::max_element(parallel_durations.begin(), parallel_durations.end());
    }
    std::string unit = "ms";
    if (total_ms > 999) {
      total_ms /= 1000;
      unit = "s";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", total_ms);
    hstrs.push_back(Colored(c_.cyan, "Total run time: " + LeftPad(buf, line_max_len - 5) + " " + unit));
  }

  const HighstateStyle& style_;  // Owned by RenderHighstate's caller, which outlives this.
  const Palette c_;
};

}  // namespace

std::optional<std::string> RenderHighstate(const Value& data, const HighstateStyle& style) {
  try {
    return HighstatePrinter(style).Output(data, 1);
  } catch (const Fallback&) {
    return std::nullopt;
  }
}

}  // namespace brine::output
