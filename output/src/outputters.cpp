#include "brine/output/outputters.h"

#include <array>

#include "brine/core/json.h"
#include "highstate.h"
#include "nested.h"
#include "pprint.h"
#include "render_unstripped.h"
#include "py_text.h"
#include "yaml_emitter.h"

namespace brine::output {
namespace {

Palette PaletteFor(const OutputOptions& options) {
  return options.color == OutputOptions::Color::kOn ? Palette::On() : Palette::Off();
}

bool StripEsc(const OutputOptions& options) {
  return options.strip_colors == OutputOptions::StripColors::kOn;
}

std::string Nested(const Value& data, const OutputOptions& options) {
  return RenderNested(data, NestedStyle{.colors = PaletteFor(options),
                                        .retcode = options.retcode,
                                        .strip_esc = StripEsc(options),
                                        .base_indent = 0});
}

// salt/output/json_out.py: indent 4 unless --out-indent; negative is one line.
std::string Json(const Value& data, const OutputOptions& options) {
  const int indent = options.indent.value_or(4);
  return ToJson(data, JsonStyle::Python(indent < 0 ? -1 : indent));
}

// salt/output/yaml_out.py over salt.utils.yaml.safe_dump.
std::string Yaml(const Value& data, const OutputOptions& options) {
  YamlStyle style;
  style.dialect = options.yaml_emitter == OutputOptions::YamlEmitter::kLibyaml ? YamlDialect::kLibyaml
                                                                                : YamlDialect::kPyYaml;
  if (options.indent.has_value()) {
    style.flow = *options.indent < 0;
    style.indent = style.flow ? 0 : *options.indent;
  }
  return DumpYaml(data, style);
}

// salt/output/txt.py: `key: line` per line of each str value, `key: str(v)`
// for other values; a str as it is; anything else through pprint.pformat.
std::string Txt(const Value& data) {
  if (data.is_string()) return data.as_string() + "\n";
  if (!data.is_map()) return PFormat(data) + "\n";
  std::string out;
  for (const auto& [key, value] : data.as_map()) {
    if (value.is_string()) {
      for (const std::string& line : py::SplitLines(value.as_string())) out += key + ": " + line + "\n";
    } else {
      out += key + ": " + py::Str(value) + "\n";
    }
  }
  return out;
}

// Salt's display_output: print(text.rstrip()) unless that is empty.
std::string Printed(std::string text) {
  text.resize(py::RStripLength(text));  // in place: the text can be as big as a 50 MB return
  if (text.empty()) return "";
  text += '\n';
  return text;
}

}  // namespace

bool IsKnownOutputter(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kNames = {"nested", "json", "yaml",     "txt",
                                                             "text",   "raw",  "highstate"};
  for (const std::string_view known : kNames) {
    if (name == known) return true;
  }
  return false;
}

std::string RenderUnstripped(std::string_view outputter, const Value& data, const OutputOptions& options) {
  if (outputter == "nested") return Nested(data, options);
  if (outputter == "json") return Json(data, options);
  if (outputter == "yaml") return Yaml(data, options);
  if (outputter == "txt" || outputter == "text") return Txt(data);
  if (outputter == "raw") return py::Str(data);
  if (outputter == "highstate") {
    const std::optional<std::string> text =
        RenderHighstate(data, HighstateStyle{.colors = PaletteFor(options), .strip_esc = StripEsc(options)});
    // Salt's try_printout: an outputter that fails falls back to nested.
    return text.has_value() ? *text : Nested(data, options);
  }
  throw UnknownOutputter("unknown outputter: " + std::string(outputter));
}

std::string Render(std::string_view outputter, const Value& data, const OutputOptions& options) {
  return Printed(RenderUnstripped(outputter, data, options));
}

}  // namespace brine::output
