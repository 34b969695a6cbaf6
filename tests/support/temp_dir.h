// A fresh directory under $TMPDIR for one test, removed with everything in it
// when the TempDir goes away.
#pragma once

#include <filesystem>

namespace brine::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path operator/(const std::filesystem::path& p) const {
    return path_ / p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace brine::test
