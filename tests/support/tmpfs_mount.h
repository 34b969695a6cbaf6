// A small tmpfs mounted for one test (needs root, or CAP_SYS_ADMIN), for
// full-disk cases. Unmounted lazily when the guard goes away, so a failed test
// cannot leave it behind.
#pragma once

#include <filesystem>
#include <string>

namespace brine::test {

class TmpfsMount {
 public:
  // Creates `where` and mounts a tmpfs of `size` ("4m") there, mode 0700.
  // On failure mounted() is false and why() says why (the caller skips).
  TmpfsMount(std::filesystem::path where, const std::string& size);
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  [[nodiscard]] bool mounted() const { return mounted_; }
  [[nodiscard]] const std::string& why() const { return why_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace brine::test
