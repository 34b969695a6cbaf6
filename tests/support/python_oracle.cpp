#include "support/python_oracle.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/temp_dir.h"

namespace brine::test {
namespace {

// Evaluates each expression and prints `=<hex of str(result) as UTF-8 with
// surrogateescape>` (a str result as is, anything else as repr), or
// `!<exception class>`.
constexpr const char* kOracleScript = R"PY(
import sys, json, fnmatch, datetime
out = []
with open(sys.argv[1], encoding='ascii') as f:
    for line in f:
        try:
            r = eval(line)
            s = r if isinstance(r, str) else repr(r)
            out.append('=' + s.encode('utf-8', 'surrogateescape').hex())
        except Exception as e:
            out.append('!' + type(e).__name__)
sys.stdout.write('\n'.join(out) + '\n')
)PY";

}  // namespace

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `cmd` through the shell; returns its stdout and requires exit status 0.
std::string RunCommand(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  INFO("command: " << cmd);
  REQUIRE(status == 0);
  return out;
}

void WriteFile(const std::filesystem::path& path, std::string_view content) {
  if (!path.parent_path().empty()) std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  REQUIRE(f.good());
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string HexDecode(std::string_view hex) {
  std::string out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(nib(hex[i]) * 16 + nib(hex[i + 1]));
  }
  return out;
}

std::string HexEncode(std::string_view bytes, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xF];
  }
  return out;
}

// One python3 process for the whole batch.
std::vector<PyOut> PyEval(const std::vector<std::string>& exprs) {
  TempDir dir;
  std::string input;
  for (const auto& e : exprs) {
    REQUIRE(e.find('\n') == std::string::npos);
    REQUIRE(std::all_of(e.begin(), e.end(), [](char c) { return c > 0 && c < 0x7f; }));
    input += e;
    input += '\n';
  }
  WriteFile(dir / "oracle.py", kOracleScript);
  WriteFile(dir / "in.txt", input);
  const auto lines = SplitLines(RunCommand("/usr/bin/python3 -I -W ignore " + ShellQuote((dir / "oracle.py").string()) +
                                           " " + ShellQuote((dir / "in.txt").string())));
  REQUIRE(lines.size() == exprs.size());
  std::vector<PyOut> out;
  out.reserve(lines.size());
  for (const auto& l : lines) {
    REQUIRE(!l.empty());
    if (l[0] == '=') {
      out.push_back({true, HexDecode(std::string_view(l).substr(1))});
    } else {
      out.push_back({false, l.substr(1)});
    }
  }
  return out;
}

// Python source text for a str holding exactly these bytes (surrogateescape for
// bytes that are not UTF-8, as Salt's Python would see them).
std::string PyBytes(std::string_view s) {
  std::string out = "b'";
  for (char c : s) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
    out += buf;
  }
  return out + "'";
}
std::string PyStr(std::string_view s) { return PyBytes(s) + ".decode('utf-8','surrogateescape')"; }

std::string PyFloat(double d) {
  if (std::isnan(d)) return "float('nan')";
  if (std::isinf(d)) return d > 0 ? "float('inf')" : "float('-inf')";
  char buf[64];
  std::snprintf(buf, sizeof buf, "float.fromhex('%a')", d);
  return buf;
}

std::string PyExpr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kUint: return std::to_string(v.as_uint());
    case Value::Kind::kFloat: return PyFloat(v.as_float());
    case Value::Kind::kString: return PyStr(v.as_string());
    case Value::Kind::kList: {
      std::string out = "[";
      for (const auto& item : v.as_list()) out += PyExpr(item) + ",";
      return out + "]";
    }
    case Value::Kind::kMap: {
      std::string out = "{";
      for (const auto& [k, item] : v.as_map()) out += PyStr(k) + ":" + PyExpr(item) + ",";
      return out + "}";
    }
  }
  return "?";
}

// Runs SQL in a fresh in-memory sqlite3 CLI; returns its output without the
// final newline.
std::string Sqlite(const std::string& sql) {
  std::string out = RunCommand("sqlite3 -batch :memory: " + ShellQuote(sql));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string PyIndent(int indent) { return indent < 0 ? "None" : std::to_string(indent); }

}  // namespace brine::test
