#include "pprint.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "py_text.h"

namespace brine::output {
namespace {

constexpr long kWidth = 80;

using Entry = const std::pair<std::string, Value>*;

// pprint sorts dict items (sort_dicts=True); str keys sort by code point.
std::vector<Entry> SortedItems(const ValueMap& map) {
  std::vector<Entry> items;
  items.reserve(map.size());
  for (const auto& entry : map) items.push_back(&entry);
  std::stable_sort(items.begin(), items.end(),
                   [](Entry a, Entry b) { return py::CodePointLess(a->first, b->first); });
  return items;
}

// pprint's _safe_repr: repr() with dict keys sorted.
std::string SafeRepr(const Value& v) {
  if (v.is_list()) {
    std::string out = "[";
    bool first = true;
    for (const Value& item : v.as_list()) {
      if (!first) out += ", ";
      first = false;
      out += SafeRepr(item);
    }
    return out + "]";
  }
  if (v.is_map()) {
    std::string out = "{";
    bool first = true;
    for (Entry e : SortedItems(v.as_map())) {
      if (!first) out += ", ";
      first = false;
      out += py::StrRepr(e->first);
      out += ": ";
      out += SafeRepr(e->second);
    }
    return out + "}";
  }
  return py::Repr(v);
}

long Len(std::string_view text) { return static_cast<long>(py::Length(text)); }

class PrettyPrinter {
 public:
  std::string Format(const Value& v) {
    Format(v, 0, 0, 0);
    return std::move(out_);
  }

 private:
  void Format(const Value& v, long indent, long allowance, int level) {
    std::string rep = SafeRepr(v);
    if (Len(rep) > kWidth - indent - allowance) {
      if (v.is_map()) return PrintDict(v.as_map(), indent, allowance, level + 1);
      if (v.is_list()) return PrintList(v.as_list(), indent, allowance, level + 1);
      if (v.is_string()) return PrintStr(v.as_string(), indent, allowance, level + 1);
    }
    out_ += rep;
  }

  void PrintDict(const ValueMap& map, long indent, long allowance, int level) {
    out_ += '{';
    const std::vector<Entry> items = SortedItems(map);
    indent += 1;
    allowance += 1;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool last = i + 1 == items.size();
      const std::string key = py::StrRepr(items[i]->first);
      out_ += key;
      out_ += ": ";
      Format(items[i]->second, indent + Len(key) + 2, last ? allowance : 1, level);
      if (!last) {
        out_ += ",\n";
        out_.append(static_cast<std::size_t>(indent), ' ');
      }
    }
    out_ += '}';
  }

  void PrintList(const ValueList& list, long indent, long allowance, int level) {
    out_ += '[';
    indent += 1;
    allowance += 1;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const bool last = i + 1 == list.size();
      if (i > 0) {
        out_ += ",\n";
        out_.append(static_cast<std::size_t>(indent), ' ');
      }
      Format(list[i], indent, last ? allowance : 1, level);
    }
    out_ += ']';
  }

  // re.findall(r'\S*\s*', line) without the empty match at the end.
  static std::vector<std::string> WordsWithTrailingSpace(const std::string& line) {
    const std::u32string text = py::Decode(line);
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i < text.size()) {
      const std::size_t start = i;
      while (i < text.size() && !py::IsSpace(text[i])) ++i;
      while (i < text.size() && py::IsSpace(text[i])) ++i;
      parts.push_back(py::Encode(std::u32string_view(text).substr(start, i - start)));
    }
    return parts;
  }

  void PrintStr(const std::string& s, long indent, long allowance, int level) {
    if (s.empty()) {
      out_ += "''";
      return;
    }
    std::vector<std::string> chunks;
    const std::vector<std::string> lines = py::SplitLines(s, true);
    if (level == 1) {
      indent += 1;
      allowance += 1;
    }
    long max_width1 = kWidth - indent;
    const long max_width = max_width1;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const bool last_line = i + 1 == lines.size();
      std::string rep = py::StrRepr(lines[i]);
      if (last_line) max_width1 -= allowance;
      if (Len(rep) <= max_width1) {
        chunks.push_back(std::move(rep));
        continue;
      }
      const std::vector<std::string> parts = WordsWithTrailingSpace(lines[i]);
      long max_width2 = max_width;
      std::string current;
      for (std::size_t j = 0; j < parts.size(); ++j) {
        std::string candidate = current + parts[j];
        if (j + 1 == parts.size() && last_line) max_width2 -= allowance;
        if (Len(py::StrRepr(candidate)) > max_width2) {
          if (!current.empty()) chunks.push_back(py::StrRepr(current));
          current = parts[j];
        } else {
          current = std::move(candidate);
        }
      }
      if (!current.empty()) chunks.push_back(py::StrRepr(current));
    }
    if (chunks.size() == 1) {
      out_ += chunks[0];
      return;
    }
    if (level == 1) out_ += '(';
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (i > 0) {
        out_ += '\n';
        out_.append(static_cast<std::size_t>(indent), ' ');
      }
      out_ += chunks[i];
    }
    if (level == 1) out_ += ')';
  }

  std::string out_;
};

}  // namespace

std::string PFormat(const Value& v) { return PrettyPrinter().Format(v); }

}  // namespace brine::output
