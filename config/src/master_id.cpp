#include "master_id.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <array>
#include <fstream>

#include "salt_paths.h"

namespace brine::config::internal {
namespace {

std::string HostName() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "localhost";
  return std::string(buf.data());
}

std::string CanonicalName(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_CANONNAME;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return host;
  std::string name =
      result != nullptr && result->ai_canonname != nullptr ? result->ai_canonname : "";
  freeaddrinfo(result);
  return name.empty() ? host : name;
}

std::string Strip(std::string s) {
  const char* kSpace = " \t\n\r\f\v";
  s.erase(0, s.find_first_not_of(kSpace));
  s.erase(s.find_last_not_of(kSpace) + 1);
  return s;
}

}  // namespace

GeneratedId GenerateMasterId(std::string_view root_dir, bool use_cache) {
  if (use_cache) {
    // Salt: os.path.join(root_dir, CONFIG_DIR.lstrip("/"), "minion_id") with
    // CONFIG_DIR the packaged /etc/salt, not the -c directory.
    std::string path = std::string(root_dir);
    if (!path.empty() && !path.ends_with('/')) path += '/';
    path += "etc/salt/minion_id";
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line)) {
      line = Strip(line);
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      if (line.starts_with(kBom)) line.erase(0, kBom.size());
      if (!line.empty() && line != "localhost") return {.id = line, .from_cache = true};
    }
  }
  return {.id = CanonicalName(HostName()), .from_cache = false};
}

bool IsIpv4(const std::string& text) {
  in_addr addr{};
  return inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

}  // namespace brine::config::internal
