// The id a Salt master uses when its config sets none. Internal to brine_config.
#pragma once

#include <string>
#include <string_view>

namespace brine::config::internal {

// salt.config.get_id for a master, as far as brine needs it: the id cached in
// `<root_dir>/etc/salt/minion_id` (Salt reads the minion's cache even for a
// master, unless `minion_id_caching` is false) when it is non-empty and not
// "localhost"; otherwise the host's name as brine generates it: the canonical
// name getaddrinfo gives for gethostname(), or gethostname() itself when that
// fails. `from_cache` is set when the cache file supplied it. Never throws for
// an unreadable cache (Salt ignores it too); the caller appends "_master".
struct GeneratedId {
  std::string id;
  bool from_cache = false;
};
[[nodiscard]] GeneratedId GenerateMasterId(std::string_view root_dir, bool use_cache);

// salt.utils.network.is_ipv4 (dotted quad, as inet_pton accepts it).
[[nodiscard]] bool IsIpv4(const std::string& text);

}  // namespace brine::config::internal
