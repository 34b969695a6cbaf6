#include "payloads.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "brine/core/json.h"

namespace brine::sim {
namespace {

std::string Printf(const char* format, auto... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  return std::string(buf, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}

std::string Hex(Rng& rng, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < digits; ++i) out += kHex[rng.Below(16)];
  return out;
}

// HH:MM:SS.ffffff of `t` (a state's start_time).
std::string ClockTime(Micros t) {
  const std::int64_t us = (t - date::floor<date::days>(t)).count();
  return Printf("%02d:%02d:%02d.%06d", static_cast<int>(us / 3600000000), static_cast<int>(us / 60000000 % 60),
                static_cast<int>(us / 1000000 % 60), static_cast<int>(us % 1000000));
}

// A float with three decimals, as Salt's state durations (milliseconds) are.
Value Millis(double ms) { return Value(std::round(ms * 1000.0) / 1000.0); }

std::string Ip(const MinionProfile& m) {
  return Printf("10.%d.%d.%d", static_cast<int>(m.role) + 1, static_cast<int>(m.number / 250),
                static_cast<int>(m.number % 250) + 10);
}

std::string ShortName(const MinionProfile& m) { return m.id.substr(0, m.id.find('.')); }

}  // namespace

const std::vector<RoleSpec>& Roles() {
  static const std::vector<RoleSpec> kRoles{
      {"web", "nginx", "nginx", "nginx", "/etc/nginx/nginx.conf", "/etc/nginx/conf.d", "nginx -t"},
      {"db", "postgresql", "postgresql-15", "postgresql", "/etc/postgresql/15/main/postgresql.conf",
       "/etc/postgresql/15/main/conf.d", "pg_isready"},
      {"app", "app", "python3-gunicorn", "gunicorn", "/etc/gunicorn/app.conf.py", "/etc/gunicorn/conf.d",
       "/srv/app/bin/check-config"},
      {"cache", "redis", "redis-server", "redis-server", "/etc/redis/redis.conf", "/etc/redis/conf.d",
       "redis-cli ping"},
      {"lb", "haproxy", "haproxy", "haproxy", "/etc/haproxy/haproxy.cfg", "/etc/haproxy/conf.d",
       "haproxy -c -f /etc/haproxy/haproxy.cfg"},
      {"worker", "celery", "python3-celery", "celery-worker", "/etc/default/celery", "/etc/celery/conf.d",
       "celery inspect ping"},
  };
  return kRoles;
}

MinionProfile MakeMinion(std::uint64_t fleet_seed, std::size_t index, std::size_t fleet_size) {
  const std::size_t roles = Roles().size();
  MinionProfile m;
  m.role = index % roles;
  m.number = static_cast<std::int64_t>(index / roles) + 1;
  const std::size_t per_role = (fleet_size + roles - 1) / roles;
  const int width = std::max(4, static_cast<int>(std::to_string(per_role).size()));
  m.id = std::string(Roles()[m.role].name) + "-" + Printf("%0*lld", width, static_cast<long long>(m.number)) +
         "." + std::string(kDomain);
  m.seed = DeriveSeed(fleet_seed, HashLabel(m.id));
  Rng rng(m.seed);
  m.slowness = rng.LogNormal(1.0, 0.35);
  m.ubuntu = rng.Chance(0.25);
  return m;
}

std::string AscTime(Micros t) {
  static constexpr std::array<const char*, 7> kDays{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto day = date::floor<date::days>(t);
  const date::year_month_day ymd(day);
  const date::weekday wd(day);
  const date::hh_mm_ss<std::chrono::seconds> hms(date::floor<std::chrono::seconds>(t - day));
  return Printf("%s %s %2u %02d:%02d:%02d %d", kDays[wd.c_encoding()], kMonths[unsigned(ymd.month()) - 1],
                unsigned(ymd.day()), static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()), int(ymd.year()));
}

std::string PublicKeyPem(const MinionProfile& m) {
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  Rng rng(DeriveSeed(m.seed, 1));
  // The DER of an RSA-2048 SubjectPublicKeyInfo: fixed header, modulus, e=65537.
  std::string body = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA";
  while (body.size() < 386) body += kB64[rng.Below(64)];
  body += "IDAQAB";
  std::string pem = "-----BEGIN PUBLIC KEY-----\n";
  for (std::size_t i = 0; i < body.size(); i += 64) pem += body.substr(i, 64) + "\n";
  return pem + "-----END PUBLIC KEY-----\n";
}

Value Grains(const MinionProfile& m) {
  Rng rng(DeriveSeed(m.seed, 2));
  const std::string ip = Ip(m);
  const std::string mac = "52:54:00:" + Hex(rng, 2) + ":" + Hex(rng, 2) + ":" + Hex(rng, 2);
  static constexpr std::array<int, 4> kCpus{2, 4, 8, 16};
  static constexpr std::array<int, 5> kMem{1985, 3933, 7941, 15995, 32093};
  const int cpus = kCpus[rng.Below(kCpus.size())];
  const int mem = kMem[rng.Below(kMem.size())];
  const std::string uuid = Hex(rng, 8) + "-" + Hex(rng, 4) + "-" + Hex(rng, 4) + "-" + Hex(rng, 4) + "-" + Hex(rng, 12);
  const std::string kernel = m.ubuntu ? "5.15.0-97-generic" : "6.1.0-18-amd64";
  ValueList flags;
  for (const char* f : {"fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce", "cx8", "apic", "sep", "mtrr", "pge",
                        "mca", "cmov", "pat", "pse36", "clflush", "mmx", "fxsr", "sse", "sse2", "ht", "syscall", "nx",
                        "lm", "avx", "avx2", "aes", "hypervisor"}) {
    flags.emplace_back(f);
  }
  const RoleSpec& role = Roles()[m.role];
  ValueMap g;
  g.emplace_back("cwd", "/");
  g.emplace_back("ip_gw", true);
  g.emplace_back("ip4_gw", Printf("10.%d.0.1", static_cast<int>(m.role) + 1));
  g.emplace_back("ip6_gw", false);
  g.emplace_back("dns", Value::Map({{"nameservers", Value::List({"10.0.0.2"})},
                                    {"ip4_nameservers", Value::List({"10.0.0.2"})},
                                    {"ip6_nameservers", Value::EmptyList()},
                                    {"sortlist", Value::EmptyList()},
                                    {"domain", ""},
                                    {"search", Value::List({std::string(kDomain)})},
                                    {"options", Value::EmptyList()}}));
  g.emplace_back("fqdns", Value::EmptyList());
  g.emplace_back("machine_id", Hex(rng, 32));
  g.emplace_back("master", "salt");
  g.emplace_back("server_id", static_cast<long long>(rng.Below(2147483647)));
  g.emplace_back("localhost", ShortName(m));
  g.emplace_back("fqdn", m.id);
  g.emplace_back("host", ShortName(m));
  g.emplace_back("domain", std::string(kDomain));
  g.emplace_back("hwaddr_interfaces", Value::Map({{"lo", "00:00:00:00:00:00"}, {"eth0", mac}}));
  g.emplace_back("id", m.id);
  g.emplace_back("ip4_interfaces", Value::Map({{"lo", Value::List({"127.0.0.1"})}, {"eth0", Value::List({ip})}}));
  g.emplace_back("ip6_interfaces", Value::Map({{"lo", Value::List({"::1"})}, {"eth0", Value::EmptyList()}}));
  g.emplace_back("ip_interfaces",
                 Value::Map({{"lo", Value::List({"127.0.0.1", "::1"})}, {"eth0", Value::List({ip})}}));
  g.emplace_back("ipv4", Value::List({"127.0.0.1", ip}));
  g.emplace_back("ipv6", Value::List({"::1"}));
  g.emplace_back("fqdn_ip4", Value::List({ip}));
  g.emplace_back("fqdn_ip6", Value::EmptyList());
  g.emplace_back("kernel", "Linux");
  g.emplace_back("kernelrelease", kernel);
  g.emplace_back("kernelversion", m.ubuntu ? "#107-Ubuntu SMP Wed Feb 7 13:26:48 UTC 2024"
                                           : "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)");
  g.emplace_back("kernelparams", Value::List({Value::List({"BOOT_IMAGE", "/boot/vmlinuz-" + kernel}),
                                              Value::List({"root", "UUID=" + uuid}), Value::List({"ro", nullptr}),
                                              Value::List({"quiet", nullptr})}));
  g.emplace_back("locale_info", Value::Map({{"defaultlanguage", "en_US"},
                                            {"defaultencoding", "UTF-8"},
                                            {"detectedencoding", "utf-8"},
                                            {"timezone", "UTC"}}));
  g.emplace_back("num_gpus", 0);
  g.emplace_back("gpus", Value::EmptyList());
  g.emplace_back("os", m.ubuntu ? "Ubuntu" : "Debian");
  g.emplace_back("os_family", "Debian");
  g.emplace_back("oscodename", m.ubuntu ? "jammy" : "bookworm");
  g.emplace_back("osfinger", m.ubuntu ? "Ubuntu-22.04" : "Debian-12");
  g.emplace_back("osfullname", m.ubuntu ? "Ubuntu" : "Debian GNU/Linux");
  g.emplace_back("osmajorrelease", m.ubuntu ? 22 : 12);
  g.emplace_back("osrelease", m.ubuntu ? "22.04" : "12.5");
  g.emplace_back("osrelease_info", m.ubuntu ? Value::List({22, 4}) : Value::List({12, 5}));
  g.emplace_back("path", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  g.emplace_back("cpuarch", "x86_64");
  g.emplace_back("cpu_model", "Intel Xeon Processor (Icelake)");
  g.emplace_back("cpu_flags", Value(std::move(flags)));
  g.emplace_back("num_cpus", cpus);
  g.emplace_back("mem_total", mem);
  g.emplace_back("swap_total", 0);
  g.emplace_back("virtual", "kvm");
  g.emplace_back("biosversion", "1.16.2-debian-1.16.2-1");
  g.emplace_back("manufacturer", "QEMU");
  g.emplace_back("productname", "Standard PC (Q35 + ICH9, 2009)");
  g.emplace_back("uuid", uuid);
  g.emplace_back("uid", 0);
  g.emplace_back("username", "root");
  g.emplace_back("gid", 0);
  g.emplace_back("groupname", "root");
  g.emplace_back("pid", static_cast<long long>(rng.Between(600, 4000)));
  g.emplace_back("shell", "/bin/sh");
  g.emplace_back("init", "systemd");
  g.emplace_back("systemd", Value::Map({{"version", m.ubuntu ? "249" : "252"},
                                        {"features", "+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT "
                                                     "-GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 "
                                                     "-IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY "
                                                     "+P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK "
                                                     "-XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified"}}));
  g.emplace_back("saltpath", "/opt/saltstack/salt/lib/python3.10/site-packages/salt");
  g.emplace_back("saltversion", "3006.7");
  g.emplace_back("saltversioninfo", Value::List({3006, 7}));
  g.emplace_back("pythonexecutable", "/opt/saltstack/salt/bin/python3.10");
  g.emplace_back("pythonpath", Value::List({"/opt/saltstack/salt", "/opt/saltstack/salt/lib/python310.zip",
                                            "/opt/saltstack/salt/lib/python3.10",
                                            "/opt/saltstack/salt/lib/python3.10/lib-dynload",
                                            "/opt/saltstack/salt/lib/python3.10/site-packages"}));
  g.emplace_back("pythonversion", Value::List({3, 10, 13, "final", 0}));
  g.emplace_back("zmqversion", "4.3.4");
  g.emplace_back("roles", Value::List({std::string(role.name)}));
  g.emplace_back("datacenter", m.number % 2 == 0 ? "dc2" : "dc1");
  return Value(std::move(g));
}

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands{
      {"uptime", 0.0},
      {"df -h /", 0.0},
      {"systemctl is-active salt-minion", 0.0},
      {"free -m", 0.0},
      {"tail -n 20 /var/log/syslog", 0.0},
      {"cat /etc/os-release | head -n 2", 0.0},
      {"sleep 8; echo done", 8.0},
      {"apt-get -qq update && apt-get -s upgrade | grep -c ^Inst", 4.0},
  };
  return kCommands;
}

CommandResult RunCommand(std::size_t index, const MinionProfile& m, Micros now, bool fail, Rng& rng) {
  const auto day = date::floor<date::days>(now);
  const date::hh_mm_ss<std::chrono::seconds> hms(date::floor<std::chrono::seconds>(now - day));
  const std::string clock = Printf("%02d:%02d:%02d", static_cast<int>(hms.hours().count()),
                                   static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()));
  Rng traits(DeriveSeed(m.seed, 3));
  const int up_days = static_cast<int>(traits.Between(1, 400));
  switch (index) {
    case 0:
      if (fail) return {"bash: line 1: uptime: command not found", 127};
      return {Printf(" %s up %d days, %2d:%02d,  0 users,  load average: %.2f, %.2f, %.2f", clock.c_str(), up_days,
                     static_cast<int>(rng.Below(24)), static_cast<int>(rng.Below(60)), rng.Uniform(0, 2),
                     rng.Uniform(0, 1.5), rng.Uniform(0, 1)),
              0};
    case 1: {
      if (fail) return {"df: /: Input/output error", 1};
      const int size = 20 << traits.Below(3);
      const int used = static_cast<int>(rng.Below(static_cast<std::uint64_t>(size)));
      return {Printf("Filesystem      Size  Used Avail Use%% Mounted on\n/dev/vda1        %dG  %2dG  %3dG  %2d%% /", size,
                     used, size - used, used * 100 / size),
              0};
    }
    case 2:
      if (fail) return {"failed", 3};
      return {"active", 0};
    case 3: {
      if (fail) return {"free: cannot open /proc/meminfo: No such file or directory", 1};
      const int total = 1985 << traits.Below(4);
      const int used = static_cast<int>(rng.Uniform(0.2, 0.8) * total);
      return {Printf("               total        used        free      shared  buff/cache   available\n"
                     "Mem:           %5d       %5d       %5d          12        %4d       %5d\n"
                     "Swap:              0           0           0",
                     total, used, total - used - 300, 300, total - used),
              0};
    }
    case 4: {
      if (fail) return {"tail: cannot open '/var/log/syslog' for reading: No such file or directory", 1};
      std::string out;
      static constexpr std::array<const char*, 6> kLines{
          "systemd[1]: Started session-%d.scope - Session %d of User root.",
          "CRON[%d]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
          "salt-minion[%d]: [INFO    ] Executing command 'tail' in directory '/root'",
          "kernel: [%d.123456] IPv4: martian source 10.0.0.255 from 10.0.0.1, on dev eth0",
          "systemd[1]: Starting apt-daily.service - Daily apt download activities (pid %d)...",
          "chronyd[%d]: Selected source 10.0.0.2 (ntp.example.com)"};
      const std::string host = ShortName(m);
      for (int i = 0; i < 20; ++i) {
        const auto t = now - std::chrono::seconds(20 - i) * 30;
        const int pid = static_cast<int>(rng.Between(300, 90000));
        if (!out.empty()) out += "\n";
        out += date::format("%b %d %H:%M:%S ", date::floor<std::chrono::seconds>(t)) + host + " " +
               Printf(kLines[rng.Below(kLines.size())], pid, pid);
      }
      return {out, 0};
    }
    case 5:
      if (fail) return {"cat: /etc/os-release: Permission denied", 1};
      return {m.ubuntu ? "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\""
                       : "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"",
              0};
    case 6:
      if (fail) return {"/bin/sh: 1: echo: I/O error", 2};
      return {"done", 0};
    default:
      if (fail) {
        return {"E: Could not get lock /var/lib/apt/lists/lock. It is held by process " +
                    std::to_string(rng.Between(1000, 60000)) + " (apt-get)\nE: Unable to lock directory /var/lib/apt/lists/",
                100};
      }
      return {std::to_string(rng.Below(12)), 0};
  }
}

namespace {

// One state before it is placed in time.
struct StateSpec {
  std::string mod;  // pkg
  std::string fun;  // installed
  std::string id;
  std::string name;
  std::string sls;
  Value changes = Value::EmptyMap();
  std::string comment;
  bool result = true;
  double weight_ms = 10;  // relative run time
};

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

StateSpec MakeState(std::string mod, std::string fun, std::string id, std::string name, std::string sls, Rng& rng) {
  StateSpec s{.mod = std::move(mod), .fun = std::move(fun), .id = std::move(id), .name = std::move(name),
              .sls = std::move(sls)};
  const bool changed = rng.Chance(0.05);
  if (s.mod == "pkg") {
    s.weight_ms = rng.Uniform(40, 400);
    if (changed) {
      s.changes = Value::Map({{s.name, Value::Map({{"new", Printf("%d.%d.%d-%d", static_cast<int>(rng.Between(1, 9)),
                                                                  static_cast<int>(rng.Below(30)),
                                                                  static_cast<int>(rng.Below(20)),
                                                                  static_cast<int>(rng.Between(1, 9)))},
                                                   {"old", ""}})}});
      s.comment = "The following packages were installed/updated: " + s.name;
    } else {
      s.comment = "All specified packages are already installed";
    }
  } else if (s.mod == "file" && s.fun == "managed") {
    s.weight_ms = rng.Uniform(4, 40);
    if (changed) {
      const int workers = static_cast<int>(rng.Between(2, 16));
      s.changes = Value::Map(
          {{"diff", Printf("--- \n+++ \n@@ -1,4 +1,4 @@\n # Managed by Salt\n-worker_processes %d;\n+worker_processes %d;\n",
                           workers, workers * 2)}});
      s.comment = "File " + s.name + " updated";
    } else {
      s.comment = "File " + s.name + " is in the correct state";
    }
  } else if (s.mod == "file") {
    s.weight_ms = rng.Uniform(1, 6);
    s.comment = "The directory " + s.name + " is in the correct state";
  } else if (s.mod == "service") {
    s.weight_ms = rng.Uniform(20, 120);
    if (changed) {
      s.changes = Value::Map({{s.name, true}});
      s.comment = "Service restarted";
    } else {
      s.comment = "The service " + s.name + " is already running";
    }
  } else if (s.mod == "cmd") {
    s.weight_ms = rng.Uniform(100, 2000);
    s.changes = Value::Map({{"pid", static_cast<long long>(rng.Between(1000, 90000))},
                            {"retcode", 0},
                            {"stderr", ""},
                            {"stdout", "ok"}});
    s.comment = "Command \"" + s.name + "\" run";
  } else if (s.mod == "user") {
    s.weight_ms = rng.Uniform(3, 20);
    s.comment = "User " + s.name + " is present and up to date";
  } else if (s.mod == "sysctl") {
    s.weight_ms = rng.Uniform(2, 10);
    s.comment = "Sysctl value " + s.name + " = 10 is already set";
  } else {
    s.weight_ms = rng.Uniform(2, 15);
    s.comment = "Cron " + s.name + " already present";
  }
  return s;
}

void Fail(StateSpec& s, Rng& rng) {
  s.result = false;
  s.changes = Value::EmptyMap();
  if (s.mod == "pkg") {
    s.comment = "Problem encountered installing package(s). Additional info follows:\n\nerrors:\n    - Running scope as "
                "unit: run-r" + Printf("%08llx", static_cast<unsigned long long>(rng.Next() >> 32)) +
                ".scope\n      E: Unable to locate package " + s.name;
  } else if (s.mod == "file" && s.fun == "managed") {
    s.comment = "Source file salt://" + s.sls + "/files/" + Basename(s.name) + " not found in saltenv 'base'";
  } else if (s.mod == "file") {
    s.comment = "Failed to create directory " + s.name + ": [Errno 28] No space left on device";
  } else if (s.mod == "service") {
    s.comment = "Job for " + s.name + ".service failed because the control process exited with error code.\nSee "
                "\"systemctl status " + s.name + ".service\" and \"journalctl -xeu " + s.name +
                ".service\" for details.";
  } else if (s.mod == "cmd") {
    s.changes = Value::Map({{"pid", static_cast<long long>(rng.Between(1000, 90000))},
                            {"retcode", 1},
                            {"stderr", "check failed: configuration file has errors"},
                            {"stdout", ""}});
    s.comment = "Command \"" + s.name + "\" run";
  } else {
    s.comment = "An exception occurred in this state: OSError: [Errno 28] No space left on device";
  }
}

std::vector<StateSpec> BaseStates(const MinionProfile& m, std::string_view sls, Rng& rng) {
  const RoleSpec& role = Roles()[m.role];
  std::vector<StateSpec> out;
  const bool common = sls.empty() || sls == "common";
  const bool own = sls.empty() || sls == role.sls;
  if (common) {
    out.push_back(MakeState("pkg", "installed", "base-packages", "base-packages", "common", rng));
    out.push_back(MakeState("user", "present", "deploy", "deploy", "common", rng));
    out.push_back(MakeState("file", "managed", "/etc/ssh/sshd_config", "/etc/ssh/sshd_config", "common.ssh", rng));
    out.push_back(MakeState("service", "running", "ssh", "ssh", "common.ssh", rng));
    out.push_back(MakeState("pkg", "installed", "chrony", "chrony", "common.time", rng));
    out.push_back(MakeState("service", "running", "chrony", "chrony", "common.time", rng));
    out.push_back(MakeState("sysctl", "present", "vm.swappiness", "vm.swappiness", "common.sysctl", rng));
    out.push_back(MakeState("cron", "present", "logrotate-hourly", "/usr/sbin/logrotate /etc/logrotate.conf",
                            "common", rng));
  }
  if (own || !common) {
    const std::string s(own ? role.sls : sls);
    out.push_back(MakeState("pkg", "installed", std::string(role.package), std::string(role.package), s, rng));
    out.push_back(MakeState("file", "managed", std::string(role.config), std::string(role.config), s, rng));
    out.push_back(MakeState("file", "directory", std::string(role.conf_dir), std::string(role.conf_dir), s, rng));
    out.push_back(MakeState("service", "running", std::string(role.service), std::string(role.service), s, rng));
    out.push_back(MakeState("cmd", "run", s + "-check", std::string(role.check), s, rng));
  }
  return out;
}

std::string StateKey(const StateSpec& s) { return s.mod + "_|-" + s.id + "_|-" + s.name + "_|-" + s.fun; }

Value StateValue(const StateSpec& s, std::int64_t run_num, double duration_ms, Micros started) {
  ValueMap v;
  v.emplace_back("__id__", s.id);
  v.emplace_back("__run_num__", static_cast<long long>(run_num));
  v.emplace_back("__sls__", s.sls);
  v.emplace_back("changes", s.changes);
  v.emplace_back("comment", s.comment);
  v.emplace_back("duration", Millis(duration_ms));
  v.emplace_back("name", s.name);
  v.emplace_back("result", s.result);
  v.emplace_back("start_time", ClockTime(started));
  return Value(std::move(v));
}

constexpr std::int64_t kBytesPerState = 380;

}  // namespace

std::int64_t EstimatedStates(std::int64_t target_bytes) { return std::max<std::int64_t>(1, target_bytes / kBytesPerState); }

Value Highstate(const MinionProfile& m, std::string_view sls, std::int64_t target_bytes, Micros begin, Micros end,
                bool fail, Rng& rng) {
  std::vector<StateSpec> states = BaseStates(m, sls, rng);
  const RoleSpec& role = Roles()[m.role];
  const std::string pad_sls = sls.empty() ? std::string(role.sls) : std::string(sls);
  // Sizes are measured with a placeholder duration and start time of typical
  // width; the real ones differ by a few bytes per state.
  const Micros placeholder = begin;
  std::int64_t size = 2;
  std::vector<StateSpec> kept;
  for (std::size_t i = 0; size < target_bytes || kept.empty(); ++i) {
    StateSpec s = i < states.size()
                      ? std::move(states[i])
                      : [&] {
                          const std::string path = std::string(role.conf_dir) + "/" +
                                                   Printf("%04d", static_cast<int>(i - states.size() + 1)) + ".conf";
                          return MakeState("file", "managed", path, path, pad_sls, rng);
                        }();
    size += static_cast<std::int64_t>(StateKey(s).size() + 4 +
                                      ToJson(StateValue(s, static_cast<std::int64_t>(i), 12.345, placeholder)).size());
    kept.push_back(std::move(s));
  }
  if (fail) {
    const std::size_t failures = 1 + rng.Below(std::min<std::size_t>(3, kept.size()));
    for (std::size_t f = 0; f < failures; ++f) {
      const std::size_t i = rng.Below(kept.size());
      Fail(kept[i], rng);
      // A state that requires the failed one fails with it.
      if (i + 1 < kept.size() && kept[i + 1].sls == kept[i].sls && kept[i + 1].result && rng.Chance(0.5)) {
        StateSpec& next = kept[i + 1];
        next.result = false;
        next.changes = Value::EmptyMap();
        next.comment = "One or more requisite failed: " + kept[i].sls + "." + kept[i].id;
        next.weight_ms = 0;
      }
    }
  }
  double total_weight = 0;
  for (const auto& s : kept) total_weight += s.weight_ms;
  // The states fill most of the run; the rest is the minion's own overhead.
  const double window_ms = std::max(1.0, static_cast<double>((end - begin).count()) / 1000.0 * 0.85);
  const double scale = total_weight > 0 ? window_ms / total_weight : 0;
  ValueMap out;
  out.reserve(kept.size());
  Micros t = begin;
  std::int64_t run_num = 0;
  for (const auto& s : kept) {
    const double ms = s.weight_ms * scale;
    out.emplace_back(StateKey(s), StateValue(s, run_num++, ms, t));
    t += std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000.0) + 150);
  }
  return Value(std::move(out));
}

}  // namespace brine::sim
