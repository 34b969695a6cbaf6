#include "nested.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "brine/core/json.h"
#include "py_text.h"

namespace brine::output {
namespace {

class NestedPrinter {
 public:
  explicit NestedPrinter(const NestedStyle& style) : style_(style) {}

  void Display(const Value& v, int indent, std::string_view prefix) {
    switch (v.kind()) {
      case Value::Kind::kNull:
        Line(indent, style_.colors.light_yellow, "None", prefix);
        return;
      case Value::Kind::kBool:
        Line(indent, style_.colors.light_yellow, v.as_bool() ? "True" : "False", prefix);
        return;
      case Value::Kind::kInt:
      case Value::Kind::kUint:
      case Value::Kind::kFloat:
        Line(indent, style_.colors.light_yellow, py::Repr(v), prefix);
        return;
      case Value::Kind::kString:
        DisplayString(v.as_string(), indent, prefix);
        return;
      case Value::Kind::kList:
        DisplayList(v.as_list(), indent);
        return;
      case Value::Kind::kMap:
        DisplayMap(v.as_map(), indent, prefix);
        return;
    }
  }

  std::string Join() const {
    std::string out;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      if (i > 0) out += '\n';
      out += lines_[i];
    }
    return out;
  }

 private:
  // Salt's NestDisplay.ustring: indent, colour, prefix, text, reset, suffix.
  void Line(int indent, std::string_view color, std::string_view msg, std::string_view prefix,
            std::string_view suffix = "") {
    std::string line(static_cast<std::size_t>(std::max(indent, 0)), ' ');
    line += color;
    line += prefix;
    line += msg;
    line += style_.colors.endc;
    line += suffix;
    lines_.push_back(std::move(line));
  }

  // Keys, `----------` and `|_` turn red for a failed job (Salt's _retcode).
  std::string_view StructureColor(std::string_view normal) const {
    return style_.retcode != 0 ? style_.colors.red : normal;
  }

  void DisplayString(const std::string& s, int indent, std::string_view prefix) {
    const std::string continuation(prefix.size(), ' ');
    bool first = true;
    for (std::string& line : py::SplitLines(s)) {
      if (style_.strip_esc) std::replace(line.begin(), line.end(), '\x1b', '?');
      Line(indent, style_.colors.green, line, first ? prefix : std::string_view(continuation));
      first = false;
    }
  }

  void DisplayList(const ValueList& list, int indent) {
    for (const Value& item : list) {
      if (item.is_list() || item.is_map()) {
        Line(indent, StructureColor(style_.colors.green), "|_", "");
        Display(item, indent + 2, item.is_map() ? "" : "- ");
      } else {
        Display(item, indent, "- ");
      }
    }
  }

  void DisplayMap(const ValueMap& map, int indent, std::string_view prefix) {
    if (indent != 0) Line(indent, StructureColor(style_.colors.cyan), "----------", "");
    std::vector<const std::pair<std::string, Value>*> entries;
    entries.reserve(map.size());
    for (const auto& entry : map) entries.push_back(&entry);
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto* a, const auto* b) { return py::CodePointLess(a->first, b->first); });
    for (const auto* entry : entries) {
      Line(indent, StructureColor(style_.colors.cyan), entry->first, prefix, ":");
      Display(entry->second, indent + 4, "");
    }
  }

  const NestedStyle& style_;  // Owned by the caller of RenderNested, which outlives this.
  std::vector<std::string> lines_;
};

}  // namespace

std::string RenderNested(const Value& data, const NestedStyle& style) {
  NestedPrinter printer(style);
  printer.Display(data, style.base_indent, "");
  return printer.Join();
}

}  // namespace brine::output
