// What the simulated minions and runners return: grains, command output,
// highstate dicts, public keys. Each builder draws only from the Rng it is
// given, so a return depends on its own seed and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "brine/core/time.h"
#include "brine/core/value.h"
#include "random.h"

namespace brine::sim {

// A kind of server in the fleet; minion ids are `<name>-<NNNN>.example.com`.
struct RoleSpec {
  std::string_view name;      // web
  std::string_view sls;       // nginx
  std::string_view package;   // nginx
  std::string_view service;   // nginx
  std::string_view config;    // /etc/nginx/nginx.conf
  std::string_view conf_dir;  // /etc/nginx/conf.d
  std::string_view check;     // nginx -t
};

[[nodiscard]] const std::vector<RoleSpec>& Roles();

inline constexpr std::string_view kDomain = "example.com";

// One minion's fixed traits, drawn once from its own seed.
struct MinionProfile {
  std::string id;           // web-0001.example.com
  std::size_t role = 0;     // index into Roles()
  std::int64_t number = 0;  // 1-based within the role
  std::uint64_t seed = 0;   // its own stream (grains, key, uptime)
  double slowness = 1.0;    // multiplies its response delays
  bool ubuntu = false;      // Ubuntu 22.04 instead of Debian 12
};

[[nodiscard]] MinionProfile MakeMinion(std::uint64_t fleet_seed, std::size_t index, std::size_t fleet_size);

// grains.items of `m` (about 2.5 kB of JSON), the same on every call.
[[nodiscard]] Value Grains(const MinionProfile& m);

// A PEM RSA-2048 public key (salt/auth `pub`), the same on every call for `m`.
[[nodiscard]] std::string PublicKeyPem(const MinionProfile& m);

// Python's time.asctime() of `t` (UTC): `Thu Sep 24 15:30:38 2015`.
[[nodiscard]] std::string AscTime(Micros t);

// The commands operators run with cmd.run.
struct CommandSpec {
  std::string_view command;
  double run_s;  // how long it runs, before per-minion jitter
};
[[nodiscard]] const std::vector<CommandSpec>& Commands();

struct CommandResult {
  std::string output;
  int retcode = 0;
};
// The output of Commands()[index] on `m` at `now`; `fail`: its failing form
// (non-zero retcode and an error message, as cmd.run returns them).
[[nodiscard]] CommandResult RunCommand(std::size_t index, const MinionProfile& m, Micros now, bool fail, Rng& rng);

// state.apply's highstate dict for `m`: keys `<mod>_|-<id>_|-<name>_|-<fun>`,
// each {__id__, __run_num__, __sls__, changes, comment, duration, name, result,
// start_time}, its JSON at least `target_bytes` long (at most one entry more).
// `sls` empty: the highstate (common + the role's sls), else that sls. The
// states run between `begin` and `end`. `fail`: one to three states fail
// (result false), and sometimes a state that requires one of them.
[[nodiscard]] Value Highstate(const MinionProfile& m, std::string_view sls, std::int64_t target_bytes,
                              Micros begin, Micros end, bool fail, Rng& rng);

// About how many states Highstate puts in `target_bytes`; for run times.
[[nodiscard]] std::int64_t EstimatedStates(std::int64_t target_bytes);

}  // namespace brine::sim
