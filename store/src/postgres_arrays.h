// ArrayText: a PostgreSQL array literal ('{...}') built element by element,
// the value of one array parameter. A multi-row write is then one statement
// text for any number of rows (unnest($1::bigint[], $2::text[], ...)),
// parsed and planned once per connection. Contract: an element is quoted
// and escaped as array_in reads it (backslash and double quote escaped),
// NULL is the unquoted NULL, a number goes in as its text; Take() hands the
// literal out and starts a new one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace brine::store::detail {

// A PostgreSQL array literal ('{...}') built element by element, the value
// of one array parameter: a multi-row write is then one statement text for
// any number of rows, parsed and planned once per connection.
class ArrayText {
 public:
  void Add(std::string_view text) {
    Comma();
    out_ += '"';
    // Inside quotes only '"' and '\\' need a backslash.
    for (std::size_t at = 0;;) {
      const std::size_t special = text.find_first_of("\"\\", at);
      out_.append(text.substr(at, special - at));
      if (special == std::string_view::npos) break;
      out_ += '\\';
      out_ += text[special];
      at = special + 1;
    }
    out_ += '"';
  }
  void Add(const std::string& text) { Add(std::string_view(text)); }
  void Add(const std::optional<std::string>& text) {
    if (text) {
      Add(std::string_view(*text));
    } else {
      Null();
    }
  }
  void Add(std::int64_t v) {
    Comma();
    out_ += std::to_string(v);
  }
  void Add(const std::optional<std::int64_t>& v) {
    if (v) {
      Add(*v);
    } else {
      Null();
    }
  }
  void Add(const std::optional<bool>& b) {
    Comma();
    out_ += !b ? "NULL" : *b ? "t" : "f";
  }
  // A number already in text (TimeText).
  void AddNumber(std::string_view number) {
    Comma();
    out_ += number;
  }
  // The literal; the builder is empty afterwards.
  std::string Take() {
    out_ += '}';
    std::string done = std::move(out_);
    out_ = "{";
    return done;
  }

 private:
  void Null() {
    Comma();
    out_ += "NULL";
  }
  void Comma() {
    if (out_.size() > 1) out_ += ',';
  }
  std::string out_ = "{";
};

}  // namespace brine::store::detail
