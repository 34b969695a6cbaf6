// HTML assembled only from escaped pieces (docs/web.md, "Security model").
//
// Text becomes HTML in exactly one place, Escape(); an `Html` holds markup
// that is already safe. The only other ways to make one are Html::Literal,
// which takes compile-time text (a string literal written in brine's source,
// never data read at run time), and joining two Html values. There is no
// constructor from std::string, so a minion named `<script>` can only ever be
// text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace brine::web {

class Html {
 public:
  // Text known at compile time: its constructor is consteval, so only a
  // string literal (or another constant) converts to it, never a run-time buffer.
  struct Markup {
    template <std::size_t N>
    consteval Markup(const char (&markup)[N]) : text(markup, N - 1) {}  // NOLINT: implicit on purpose
    std::string_view text;
  };

  Html() = default;
  // Markup written in brine's source, e.g. Html::Literal("<td>").
  [[nodiscard]] static Html Literal(Markup markup) { return Html(std::string(markup.text)); }
  Html& operator+=(const Html& more) {
    text_ += more.text_;
    return *this;
  }
  friend Html operator+(Html a, const Html& b) { return std::move(a += b); }
  [[nodiscard]] const std::string& str() const { return text_; }

 private:
  friend Html Escape(std::string_view text);
  explicit Html(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// The one escaping function: & < > " ' become entities, so the result is safe
// as element text and inside a double- or single-quoted attribute value.
// Bytes that are not valid UTF-8, and C0 controls other than tab, LF and CR,
// become U+FFFD (a page is text). Never throws except std::bad_alloc.
[[nodiscard]] Html Escape(std::string_view text);

}  // namespace brine::web
