// Salt's terminal colours (salt/utils/color.py get_colors over
// salt/textformat.py): each is `ESC[0;<codes>m`; with colour off every entry
// is the empty string, which is how Salt's outputters drop colour.
#pragma once

#include <string_view>

namespace brine::output {

struct Palette {
  std::string_view green;
  std::string_view cyan;
  std::string_view red;
  std::string_view light_red;
  std::string_view yellow;
  std::string_view light_yellow;
  std::string_view endc;

  static Palette On() {
    return {.green = "\x1b[0;32m",
            .cyan = "\x1b[0;36m",
            .red = "\x1b[0;31m",
            .light_red = "\x1b[0;1;31m",
            .yellow = "\x1b[0;33m",
            .light_yellow = "\x1b[0;1;33m",
            .endc = "\x1b[0;0m"};
  }
  static Palette Off() { return {}; }
};

}  // namespace brine::output
