// Python and sqlite3 as oracles for the core tests (core_*_test.cpp): Python
// defines the expected output (json.dumps, repr, datetime, int(), fnmatch,
// bytes.decode), so each batch of cases goes to one python3 process as one
// expression per line, and brine's bytes are compared with what Python printed.
// The helpers REQUIRE (Catch2) that the processes ran.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/value.h"

namespace brine::test {

// `s` in single quotes for /bin/sh.
[[nodiscard]] std::string ShellQuote(const std::string& s);
// Runs `cmd` through the shell; returns its stdout and requires exit status 0.
std::string RunCommand(const std::string& cmd);
// Writes `content` to `path` (binary), creating its folders, and requires that it worked.
void WriteFile(const std::filesystem::path& path, std::string_view content);
[[nodiscard]] std::vector<std::string> SplitLines(const std::string& text);
// Lower-case hex digits to bytes, and bytes to hex digits.
[[nodiscard]] std::string HexDecode(std::string_view hex);
[[nodiscard]] std::string HexEncode(std::string_view bytes, bool upper = false);

struct PyOut {
  bool ok = false;
  std::string text;  // the result's bytes, or the exception's class name
};

// Evaluates each expression (one line of ASCII) in one python3 process: the
// result as str (a str as is, anything else as repr) as UTF-8 with
// surrogateescape, or the exception's class name.
[[nodiscard]] std::vector<PyOut> PyEval(const std::vector<std::string>& exprs);

// Python source text for a bytes object / a str holding exactly these bytes
// (surrogateescape for bytes that are not UTF-8, as Salt's Python sees them).
[[nodiscard]] std::string PyBytes(std::string_view s);
[[nodiscard]] std::string PyStr(std::string_view s);
// Python source text for this double (exact, via float.fromhex), or this Value.
[[nodiscard]] std::string PyFloat(double d);
[[nodiscard]] std::string PyExpr(const Value& v);
// json.dumps's indent argument: None for a negative indent.
[[nodiscard]] std::string PyIndent(int indent);

// Runs SQL in a fresh in-memory sqlite3 CLI; returns its output without the
// final newline.
[[nodiscard]] std::string Sqlite(const std::string& sql);

}  // namespace brine::test
