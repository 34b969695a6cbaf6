// config/: the Salt master config reader: defaults, every key, master.d and
// includes, root_dir, brine's own keys, and the errors that name the file and
// the key. The YAML typing under it is in config_yaml_test.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "brine/config/master_config.h"
#include "brine/core/value.h"
#include "support/python_oracle.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using brine::Value;
using brine::config::ConfigError;
using brine::config::LoadMasterConfig;
using brine::config::LoadMasterConfigFromText;
using brine::config::MasterConfig;
using brine::test::TempDir;
using brine::test::WriteFile;

namespace {

// The ConfigError message LoadMasterConfig throws, or "" when it does not throw.
std::string LoadError(const fs::path& dir) {
  try {
    (void)LoadMasterConfig(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------
// Master config

TEST_CASE("config: a missing master file gives Salt's defaults", "[config]") {
  TempDir dir;
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.config_dir == dir.path());
  CHECK(c.files_read.empty());
  CHECK(c.raw == Value::EmptyMap());
  CHECK(c.warnings.empty());
  CHECK(c.user == "root");
  CHECK(c.root_dir == "/");
  CHECK(c.sock_dir == "/var/run/salt/master");
  CHECK(c.cachedir == "/var/cache/salt/master");
  CHECK(c.ipc_mode == MasterConfig::IpcMode::kIpc);
  CHECK(c.keep_jobs_seconds == 86400);
  CHECK(c.loop_interval_s == 60);
  CHECK(c.job_cache);
  CHECK(c.runner_returns);
  CHECK_FALSE(c.job_cache_store_endtime);
  CHECK_FALSE(c.unique_jid);
  CHECK(c.event_return_whitelist.empty());
  CHECK(c.event_return_blacklist.empty());
  CHECK(c.log_level == "warning");
  CHECK(c.timeout_s == 5);
  CHECK(c.brine.database == "/var/cache/salt/master/brine.sqlite");
  CHECK(c.brine.overflow_mb == 256);
  CHECK(c.brine.overflow_dir == "/var/cache/salt/master");
  CHECK(c.brine.sock_dir == "/var/run/salt/master");
  CHECK(c.brine.log_file == "/var/log/salt/brine-master");
  CHECK(c.brine.tcp_pull_port == 4513);
  CHECK(c.brine.tcp_pub_port == 4512);
  CHECK(c.brine.log_level == "warning");
  CHECK(c.brine.batch_max_events == 10000);
  CHECK(c.brine.flush_interval_ms == 100);
  CHECK(c.brine.sync == MasterConfig::Brine::Sync::kNormal);
  CHECK(c.brine.max_frame_bytes == 67108864);
  CHECK(c.brine.max_queue_mb == 32);
  CHECK(c.brine.keep_events_seconds == 86400);
  CHECK(c.brine.active_window_s == 300);
  CHECK(c.brine.send_timeout_ms == 2000);
  // MasterConfig{} documents the same defaults.
  MasterConfig d;
  CHECK(d.brine.database == c.brine.database);
  CHECK(d.brine.max_frame_bytes == c.brine.max_frame_bytes);
}

TEST_CASE("config: every key is read and typed", "[config]") {
  TempDir dir;
  WriteFile(dir / "master",
            "id: saltmaster1\n"
            "user: salt\n"
            "sock_dir: /run/salt/m\n"
            "cachedir: /data/cache\n"
            "ipc_mode: tcp\n"
            "keep_jobs_seconds: 3600\n"
            "loop_interval: 30\n"
            "job_cache: False\n"
            "runner_returns: no\n"
            "job_cache_store_endtime: yes\n"
            "unique_jid: on\n"
            "event_return_whitelist: [salt/job/*, salt/run/*]\n"
            "event_return_blacklist: salt/auth\n"
            "log_level: DEBUG\n"
            "timeout: 10\n"
            "brine.database: /data/brine.db\n"
            "brine.sock_dir: /run/brine\n"
            "brine.tcp_pull_port: 5513\n"
            "brine.tcp_pub_port: 5512\n"
            "brine.log_file: /var/log/brine.log\n"
            "brine.log_level: info\n"
            "brine.batch_max_events: 500\n"
            "brine.flush_interval_ms: 250\n"
            "brine.sync: full\n"
            "brine.max_frame_bytes: 1048576\n"
            "brine.max_queue_mb: 16\n"
            "brine.keep_events_seconds: 0\n"
            "brine.keep_jobs_by_fun: {saltutil.find_job: 3600, 'state.*': 7776000, 'test.*': 0}\n"
            "brine.keep_events_by_tag:\n  salt/auth: 60\n"
            "brine.max_store_mb: 2048\n"
            "brine.overflow_mb: 0\n"
            "brine.active_window_s: 60\n"
            "brine.send_timeout_ms: 500\n"
            "some_other_salt_key: {x: 1}\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.files_read == std::vector<fs::path>{dir / "master"});
  CHECK(c.id == "saltmaster1");
  CHECK(c.user == "salt");
  CHECK(c.sock_dir == "/run/salt/m");
  CHECK(c.cachedir == "/data/cache");
  CHECK(c.ipc_mode == MasterConfig::IpcMode::kTcp);
  CHECK(c.keep_jobs_seconds == 3600);
  CHECK(c.loop_interval_s == 30);
  CHECK_FALSE(c.job_cache);
  CHECK_FALSE(c.runner_returns);
  CHECK(c.job_cache_store_endtime);
  CHECK(c.unique_jid);
  CHECK(c.event_return_whitelist == std::vector<std::string>{"salt/job/*", "salt/run/*"});
  CHECK(c.event_return_blacklist == std::vector<std::string>{"salt/auth"});
  CHECK(c.log_level == "debug");
  CHECK(c.timeout_s == 10);
  CHECK(c.brine.database == "/data/brine.db");
  CHECK(c.brine.sock_dir == "/run/brine");
  CHECK(c.brine.tcp_pull_port == 5513);
  CHECK(c.brine.tcp_pub_port == 5512);
  CHECK(c.brine.log_file == "/var/log/brine.log");
  CHECK(c.brine.log_level == "info");
  CHECK(c.brine.batch_max_events == 500);
  CHECK(c.brine.flush_interval_ms == 250);
  CHECK(c.brine.sync == MasterConfig::Brine::Sync::kFull);
  CHECK(c.brine.max_frame_bytes == 1048576);
  CHECK(c.brine.max_queue_mb == 16);
  CHECK(c.brine.keep_events_seconds == 0);
  CHECK(c.brine.keep_jobs_by_fun ==
        MasterConfig::GlobSeconds{{"saltutil.find_job", 3600}, {"state.*", 7776000}, {"test.*", 0}});
  CHECK(c.brine.keep_events_by_tag == MasterConfig::GlobSeconds{{"salt/auth", 60}});
  CHECK(c.brine.max_store_mb == 2048);
  CHECK(c.brine.overflow_mb == 0);
  CHECK(c.brine.overflow_dir == "/data");  // beside brine.database
  CHECK(c.brine.active_window_s == 60);
  CHECK(c.brine.send_timeout_ms == 500);
  REQUIRE(c.raw.is_map());
  CHECK(c.raw.as_map().front().first == "id");
  CHECK(*c.raw.Find("some_other_salt_key") == Value::Map({{"x", 1}}));
  CHECK(c.warnings.empty());
}

TEST_CASE("config: master.d files are read in name order and later keys win", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "timeout: 7\nloop_interval: 11\nuser: fromMaster\n");
  WriteFile(dir / "master.d" / "20-b.conf", "timeout: 20\nuser: b\n");
  WriteFile(dir / "master.d" / "10-a.conf", "timeout: 10\nkeep_jobs_seconds: 100\nuser: a\n");
  WriteFile(dir / "master.d" / "30-c.conf", "user: c\n");
  WriteFile(dir / "master.d" / "ignored.txt", "user: txt\n");
  WriteFile(dir / "master.d" / ".hidden.conf", "user: hidden\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.files_read == std::vector<fs::path>{dir / "master", dir / "master.d" / "10-a.conf",
                                              dir / "master.d" / "20-b.conf",
                                              dir / "master.d" / "30-c.conf"});
  CHECK(c.timeout_s == 20);
  CHECK(c.keep_jobs_seconds == 100);
  CHECK(c.loop_interval_s == 11);
  CHECK(c.user == "c");
}

TEST_CASE("config: files of one include set merge maps and lists, as Salt's dictupdate does",
          "[config]") {
  TempDir dir;
  WriteFile(dir / "master",
            "brine: {database: /from/master.db, batch_max_events: 7}\n"
            "event_return_whitelist: [master/*]\n");
  WriteFile(dir / "master.d" / "a.conf",
            "brine: {sync: full, flush_interval_ms: 5}\nevent_return_whitelist: [a/*, common/*]\n");
  WriteFile(dir / "master.d" / "b.conf",
            "brine: {flush_interval_ms: 9}\nevent_return_whitelist: [common/*, b/*]\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  // Within master.d: maps merged key by key, lists concatenated without repeats.
  CHECK(c.brine.sync == MasterConfig::Brine::Sync::kFull);
  CHECK(c.brine.flush_interval_ms == 9);
  CHECK(c.event_return_whitelist == std::vector<std::string>{"a/*", "common/*", "b/*"});
  // Against the master file: master.d's `brine:` replaces the master's whole.
  CHECK(c.brine.database == "/var/cache/salt/master/brine.sqlite");
  CHECK(c.brine.batch_max_events == 10000);
  CHECK(*c.raw.Find("brine") == Value::Map({{"sync", "full"}, {"flush_interval_ms", 9}}));
}

TEST_CASE("config: include takes a string or a list of globs relative to the config dir",
          "[config]") {
  TempDir dir;
  TempDir elsewhere;
  WriteFile(elsewhere / "abs.conf", "brine.active_window_s: 42\n");
  WriteFile(dir / "master", "include:\n  - extra/*.yml\n  - " + (elsewhere / "abs.conf").string() +
                                "\n  - nothing/*.conf\n");
  WriteFile(dir / "master.d" / "a.conf", "timeout: 3\nloop_interval: 4\n");
  WriteFile(dir / "extra" / "2.yml", "timeout: 8\n");
  WriteFile(dir / "extra" / "1.yml", "timeout: 9\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.timeout_s == 8);        // include beats default_include; 2.yml after 1.yml
  CHECK(c.loop_interval_s == 4);  // only master.d sets it
  CHECK(c.brine.active_window_s == 42);
  CHECK(c.files_read == std::vector<fs::path>{dir / "master", dir / "master.d" / "a.conf",
                                              dir / "extra" / "1.yml", dir / "extra" / "2.yml",
                                              elsewhere / "abs.conf"});

  TempDir single;
  WriteFile(single / "master", "include: one.conf\n");
  WriteFile(single / "one.conf", "user: one\n");
  CHECK(LoadMasterConfig(single.path()).user == "one");
}

TEST_CASE("config: default_include can be moved or turned off", "[config]") {
  TempDir dir;
  WriteFile(dir / "master.d" / "a.conf", "user: from_master_d\n");
  WriteFile(dir / "conf.d" / "a.yaml", "user: from_conf_d\n");
  WriteFile(dir / "master", "default_include: conf.d/*.yaml\n");
  CHECK(LoadMasterConfig(dir.path()).user == "from_conf_d");
  WriteFile(dir / "master", "default_include: []\n");
  CHECK(LoadMasterConfig(dir.path()).user == "root");
  WriteFile(dir / "master", "default_include:\n");
  CHECK(LoadMasterConfig(dir.path()).user == "root");
  WriteFile(dir / "master", "default_include: 5\n");
  CHECK(LoadError(dir.path()) == (dir / "master").string() +
                                     ": default_include: expected a string or a list of strings, "
                                     "got 5");
}

TEST_CASE("config: an included file's own include is read relative to that file", "[config]") {
  TempDir dir;
  WriteFile(dir / "master.d" / "a.conf", "include: sub/*.conf\nuser: a\ntimeout: 1\n");
  WriteFile(dir / "master.d" / "sub" / "x.conf", "user: x\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.user == "x");
  CHECK(c.timeout_s == 1);
  CHECK(c.files_read ==
        std::vector<fs::path>{dir / "master.d" / "a.conf", dir / "master.d" / "sub" / "x.conf"});
}

TEST_CASE("config: an include loop is refused", "[config]") {
  TempDir dir;
  WriteFile(dir / "master.d" / "loop.conf", "include: loop.conf\n");
  CHECK_THAT(LoadError(dir.path()),
             Catch::Contains("loop.conf: include: includes nest more than 32"));
}

TEST_CASE("config: root_dir prefixes Salt's and brine's paths as Salt does", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "root_dir: /srv/root\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.root_dir == "/srv/root");
  CHECK(c.cachedir == "/srv/root/var/cache/salt/master");
  CHECK(c.sock_dir == "/srv/root/var/run/salt/master");
  CHECK(c.brine.database == "/srv/root/var/cache/salt/master/brine.sqlite");
  CHECK(c.brine.sock_dir == "/srv/root/var/run/salt/master");
  CHECK(c.brine.log_file == "/srv/root/var/log/salt/brine-master");

  WriteFile(dir / "master",
            "root_dir: /srv/root/\n"
            "cachedir: /srv/root/cache\n"  // already under root_dir: not doubled
            "sock_dir: run\n"              // relative: joined to root_dir
            "brine.database: /data/b.sqlite\n"
            "brine.log_file: /srv/root/log/brine\n");
  c = LoadMasterConfig(dir.path());
  CHECK(c.cachedir == "/srv/root/cache");
  CHECK(c.sock_dir == "/srv/root/run");
  CHECK(c.brine.database == "/srv/root/data/b.sqlite");
  CHECK(c.brine.log_file == "/srv/root/log/brine");
}

TEST_CASE("config: a sock_dir much longer than cachedir moves under cachedir, as in Salt",
          "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "cachedir: /c\nsock_dir: /a/very/long/socket/dir\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.sock_dir == "/c/.salt-unix");
  CHECK(c.brine.sock_dir == "/c/.salt-unix");
}

TEST_CASE("config: keep_jobs hours count only while keep_jobs_seconds is at its default",
          "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "keep_jobs: 2\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.keep_jobs_seconds == 7200);
  CHECK(c.brine.keep_events_seconds == 7200);
  REQUIRE(c.warnings.size() == 1);
  CHECK_THAT(c.warnings[0],
             Catch::StartsWith((dir / "master").string() + ": keep_jobs: deprecated"));

  WriteFile(dir / "master", "keep_jobs: 2\nkeep_jobs_seconds: 600\n");
  c = LoadMasterConfig(dir.path());
  CHECK(c.keep_jobs_seconds == 600);
  CHECK(c.warnings.empty());

  WriteFile(dir / "master", "keep_jobs: 24\nkeep_jobs_seconds: 86400\n");
  CHECK(LoadMasterConfig(dir.path()).keep_jobs_seconds == 86400);

  WriteFile(dir / "master", "keep_jobs: 0\n");
  CHECK(LoadMasterConfig(dir.path()).keep_jobs_seconds == 0);
}

TEST_CASE("config: the default id is the host's name followed by _master", "[config]") {
  TempDir dir;
  TempDir root;
  WriteFile(dir / "master", "root_dir: " + root.path().string() + "\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK_THAT(c.id, Catch::EndsWith("_master"));
  CHECK(c.id.size() > std::string("_master").size());

  // Salt reads the minion's cached id even for a master.
  WriteFile(root / "etc" / "salt" / "minion_id", "minion7\n");
  CHECK(LoadMasterConfig(dir.path()).id == "minion7_master");
  WriteFile(dir / "master", "root_dir: " + root.path().string() + "\nminion_id_caching: false\n");
  CHECK(LoadMasterConfig(dir.path()).id != "minion7_master");
  WriteFile(dir / "master", "root_dir: " + root.path().string() + "\nappend_domain: example.org\n");
  CHECK(LoadMasterConfig(dir.path()).id == "minion7.example.org_master");
  WriteFile(root / "etc" / "salt" / "minion_id", "localhost\n");
  CHECK(LoadMasterConfig(dir.path()).id != "localhost.example.org_master");

  WriteFile(dir / "master", "id: 123\n");
  CHECK(LoadMasterConfig(dir.path()).id == "123");
  WriteFile(dir / "master", "id: m1\nappend_domain: example.org\n");
  CHECK(LoadMasterConfig(dir.path()).id == "m1.example.org");
  WriteFile(dir / "master", "id: ''\n");
  CHECK_THAT(LoadMasterConfig(dir.path()).id, Catch::EndsWith("_master"));
  // Salt's str(None): an id key with no value is the id "None".
  WriteFile(dir / "master", "id:\n");
  CHECK(LoadMasterConfig(dir.path()).id == "None");
}

TEST_CASE("config: brine settings default from the Salt keys", "[config]") {
  TempDir dir;
  WriteFile(dir / "master",
            "cachedir: /c\nsock_dir: /s\nkeep_jobs_seconds: 600\nlog_level: Info\n"
            "tcp_master_pub_port: 6000\ntcp_master_pull_port: 6001\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.database == "/c/brine.sqlite");
  CHECK(c.brine.sock_dir == "/s");
  CHECK(c.brine.keep_events_seconds == 600);
  CHECK(c.brine.log_level == "info");
  CHECK(c.brine.tcp_pub_port == 6000);
  CHECK(c.brine.tcp_pull_port == 6001);
}

TEST_CASE("config: the nested brine form is read and the flat key wins", "[config]") {
  TempDir dir;
  WriteFile(dir / "master",
            "brine:\n  database: /nested.db\n  batch_max_events: 5\n  tcp_pub_port: 7000\n"
            "brine.database: /flat.db\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.database == "/flat.db");
  CHECK(c.brine.batch_max_events == 5);
  CHECK(c.brine.tcp_pub_port == 7000);

  WriteFile(dir / "master", "brine:\n#  database: /commented.db\n");
  CHECK(LoadMasterConfig(dir.path()).brine.database == "/var/cache/salt/master/brine.sqlite");
}

TEST_CASE("config: bad values name the file, the key and what was expected", "[config]") {
  struct Case {
    std::string yaml;
    std::string message;  // after "<file>: "
  };
  const std::vector<Case> cases = {
      {"brine.batch_max_events: lots",
       "brine.batch_max_events: expected a positive integer, got 'lots'"},
      {"brine.batch_max_events: 0", "brine.batch_max_events: expected a positive integer, got 0"},
      {"brine.flush_interval_ms: 1.5",
       "brine.flush_interval_ms: expected a positive integer, got 1.5"},
      {"brine: {flush_interval_ms: '100'}",
       "brine.flush_interval_ms: expected a positive integer, got '100'"},
      {"brine.max_frame_bytes: 18446744073709551615",
       "brine.max_frame_bytes: expected a positive integer no larger than 9223372036854775807, got "
       "18446744073709551615"},
      {"brine.max_queue_mb: 8796093022208",
       "brine.max_queue_mb: expected a positive integer no larger than 8796093022207, got "
       "8796093022208"},
      {"brine.tcp_pull_port: 0",
       "brine.tcp_pull_port: expected a port number from 1 to 65535, got 0"},
      {"brine.tcp_pub_port: 70000",
       "brine.tcp_pub_port: expected a port number from 1 to 65535, got 70000"},
      {"brine.tcp_pub_port: 4513",
       "brine.tcp_pub_port: expected a port other than the pull port 4513, got 4513"},
      {"brine.sync: fast", "brine.sync: expected 'normal' or 'full', got 'fast'"},
      {"brine.sock_dir: ''", "brine.sock_dir: expected a path, got ''"},
      {"brine.database: [a]", "brine.database: expected a path, got a list"},
      {"brine.log_level: verbose",
       "brine.log_level: expected a log level (all, garbage, trace, debug, profile, info, warning, "
       "error, critical or quiet), got 'verbose'"},
      {"brine.keep_events_seconds: -1",
       "brine.keep_events_seconds: expected a non-negative integer, got -1"},
      {"brine.keep_jobs_by_fun: [state.*]",
       "brine.keep_jobs_by_fun: expected a map of globs to seconds (non-negative integers), got a list"},
      {"brine.keep_events_by_tag: {salt/auth: an hour}",
       "brine.keep_events_by_tag: salt/auth: expected seconds (a non-negative integer), got 'an hour'"},
      {"brine.max_store_mb: -5", "brine.max_store_mb: expected a non-negative integer, got -5"},
      {"brine.overflow_mb: -1", "brine.overflow_mb: expected a non-negative integer, got -1"},
      {"brine.overflow_dir: ''", "brine.overflow_dir: expected a path, got ''"},
      {"brine: 5", "brine: expected a mapping of brine settings, got 5"},
      {"job_cache: 'yes'", "job_cache: expected true or false, got 'yes'"},
      {"unique_jid: 1", "unique_jid: expected true or false, got 1"},
      {"loop_interval: 0", "loop_interval: expected a positive integer, got 0"},
      {"loop_interval: 3000000000",
       "loop_interval: expected a positive integer no larger than 2147483647, got 3000000000"},
      {"timeout: ~", "timeout: expected a positive integer, got null"},
      {"keep_jobs_seconds: -1", "keep_jobs_seconds: expected a non-negative integer, got -1"},
      {"ipc_mode: udp", "ipc_mode: expected 'ipc' or 'tcp', got 'udp'"},
      {"log_level: loud",
       "log_level: expected a log level (all, garbage, trace, debug, profile, info, warning, "
       "error, "
       "critical or quiet), got 'loud'"},
      {"event_return_whitelist: {a: 1}",
       "event_return_whitelist: expected a list of strings, got a mapping"},
      {"event_return_blacklist: [salt/auth, 1]",
       "event_return_blacklist: expected a list of strings, got a list"},
      {"id: [a, b]", "id: expected a string, got a list"},
      {"cachedir: ''", "cachedir: expected a path, got ''"},
      {"user: 0", "user: expected a user name, got 0"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteFile(dir / "master", "timeout: 5\n");
    WriteFile(dir / "master.d" / "brine.conf", c.yaml + "\n");
    INFO(c.yaml);
    CHECK(LoadError(dir.path()) == (dir / "master.d" / "brine.conf").string() + ": " + c.message);
  }
}

TEST_CASE("config: an error names the file the bad key came from", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "brine:\n  sync: never\n");
  WriteFile(dir / "master.d" / "a.conf", "timeout: 5\n");
  CHECK(LoadError(dir.path()) ==
        (dir / "master").string() + ": brine.sync: expected 'normal' or 'full', got 'never'");
  WriteFile(dir / "master.d" / "b.conf", "brine: {sync: never, database: /x}\n");
  WriteFile(dir / "master.d" / "c.conf", "brine: {database: /y}\n");
  CHECK(LoadError(dir.path()) == (dir / "master.d" / "b.conf").string() +
                                     ": brine.sync: expected 'normal' or 'full', got 'never'");
}

TEST_CASE("config: a YAML syntax error names the file", "[config]") {
  TempDir dir;
  WriteFile(dir / "master.d" / "bad.conf", "timeout: 5\nbrine: [1, 2\n");
  CHECK_THAT(LoadError(dir.path()),
             Catch::StartsWith((dir / "master.d" / "bad.conf").string() + ": line "));
  WriteFile(dir / "master", "a: 1\n  b: 2\n");
  CHECK_THAT(LoadError(dir.path()),
             Catch::StartsWith((dir / "master").string() + ": line 2, column "));
  try {
    (void)LoadMasterConfigFromText("x: [", dir.path());
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith((dir / "master").string() + ": line 1, column "));
  }
}

TEST_CASE("config: a file that is not a mapping is refused, an empty one is no keys", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "- a\n- b\n");
  CHECK(LoadError(dir.path()) ==
        (dir / "master").string() + ": expected a mapping at the top level, got a list");
  WriteFile(dir / "master", "just words\n");
  CHECK(LoadError(dir.path()) ==
        (dir / "master").string() + ": expected a mapping at the top level, got 'just words'");
  WriteFile(dir / "master", "");
  CHECK(LoadMasterConfig(dir.path()).files_read == std::vector<fs::path>{dir / "master"});
  WriteFile(dir / "master", "# all commented out\n#user: salt\n");
  CHECK(LoadMasterConfig(dir.path()).user == "root");
  WriteFile(dir / "master", "a: 1\na: 2\n");
  CHECK(LoadError(dir.path()) ==
        (dir / "master").string() + ": line 1, column 1: found conflicting ID 'a'");
}

TEST_CASE("config: unknown keys are ignored and unknown brine keys are warned about", "[config]") {
  TempDir dir;
  WriteFile(dir / "master",
            "interface: 0.0.0.0\nmysql.host: db\nbrine.databse: /typo.db\nbrine: {flush_ms: 3}\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.database == "/var/cache/salt/master/brine.sqlite");
  CHECK(*c.raw.Find("mysql.host") == Value("db"));
  CHECK(c.warnings ==
        std::vector<std::string>{
            (dir / "master").string() + ": brine.databse: unknown brine setting, ignored",
            (dir / "master").string() + ": brine.flush_ms: unknown brine setting, ignored"});
}

TEST_CASE("config: whitelist and blacklist take one string, an empty string or null", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "event_return_whitelist: salt/job/*\nevent_return_blacklist: ''\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.event_return_whitelist == std::vector<std::string>{"salt/job/*"});
  CHECK(c.event_return_blacklist.empty());
  WriteFile(dir / "master", "event_return_whitelist:\n");
  CHECK(LoadMasterConfig(dir.path()).event_return_whitelist.empty());
}

TEST_CASE("config: an unreadable or directory master file is an error", "[config]") {
  TempDir dir;
  fs::create_directories(dir / "master");
  CHECK(LoadError(dir.path()) == (dir / "master").string() + ": is a directory, not a config file");
  fs::remove(dir / "master");
  WriteFile(dir / "master", "user: salt\n");
  if (geteuid() != 0) {
    REQUIRE(chmod((dir / "master").c_str(), 0) == 0);
    CHECK(LoadError(dir.path()) == (dir / "master").string() + ": cannot read: Permission denied");
  }
}

TEST_CASE("config: LoadMasterConfigFromText reads includes from the config dir", "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "user: from_disk\n");
  WriteFile(dir / "master.d" / "a.conf", "timeout: 9\n");
  MasterConfig c = LoadMasterConfigFromText("user: from_text\nloop_interval: 2\n", dir.path());
  CHECK(c.user == "from_text");
  CHECK(c.loop_interval_s == 2);
  CHECK(c.timeout_s == 9);
  CHECK(c.files_read == std::vector<fs::path>{dir / "master.d" / "a.conf"});
  try {
    (void)LoadMasterConfigFromText("brine.sync: 1\n", dir.path());
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          (dir / "master").string() + ": brine.sync: expected 'normal' or 'full', got 1");
  }
}

TEST_CASE("config: brine.database takes a postgresql URI as it is, and leaves its password rule to the store",
          "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "root_dir: /srv/root\nbrine.database: 'postgresql://salt@db1:5433/brine?sslmode=require'\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.database == "postgresql://salt@db1:5433/brine?sslmode=require");
  CHECK(c.brine.overflow_dir == "/srv/root/var/cache/salt/master");  // no folder in a URI: cachedir
  WriteFile(dir / "master", "brine.database: postgres:///brine?host=/run/postgresql\n");
  CHECK(LoadMasterConfig(dir.path()).brine.database == "postgres:///brine?host=/run/postgresql");
  // The store refuses it at every connection (hardening2_clock_test.cpp).
  WriteFile(dir / "master", "brine.database: 'postgresql://salt:hunter2@db1/brine'\n");
  CHECK(LoadMasterConfig(dir.path()).brine.database == "postgresql://salt:hunter2@db1/brine");
}

TEST_CASE("config: brine.read_database is unset by default and takes a path or a URI as brine.database does",
          "[config]") {
  TempDir dir;
  WriteFile(dir / "master", "root_dir: /srv/root\n");
  CHECK(!LoadMasterConfig(dir.path()).brine.read_database);
  WriteFile(dir / "master", "root_dir: /srv/root\nbrine.read_database: /data/copy.sqlite\n");
  CHECK(LoadMasterConfig(dir.path()).brine.read_database == fs::path("/srv/root/data/copy.sqlite"));
  WriteFile(dir / "master", "brine:\n  read_database: 'postgresql://brine@replica1/brine?sslmode=verify-full'\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.read_database == fs::path("postgresql://brine@replica1/brine?sslmode=verify-full"));
  CHECK(c.brine.database == "/var/cache/salt/master/brine.sqlite");  // writes stay where they were
}

TEST_CASE("config: brine.web_* keys have their documented defaults", "[config][web]") {
  TempDir dir;
  WriteFile(dir / "master", "root_dir: /srv/root\nsock_dir: /run/salt\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.web_bind == "127.0.0.1");
  CHECK(c.brine.web_port == 4519);
  CHECK(c.brine.web_hosts.empty());
  CHECK(c.brine.web_base_path == "/");
  CHECK(c.brine.web_token_file == fs::path("/srv/root/run/salt/brine_web.token"));
  CHECK(brine::config::WebPortFile(c.brine.web_token_file) == fs::path("/srv/root/run/salt/brine_web.token.port"));
  CHECK(c.brine.web_hide_functions == std::vector<std::string>{"saltutil.find_job", "saltutil.running",
                                                               "saltutil.is_running", "mine.update", "grains.items",
                                                               "test.ping"});
  CHECK(!c.brine.web_trust_remote_user);
  CHECK(c.warnings.empty());
}

TEST_CASE("config: brine.web_* keys are read flat or nested and typed strictly", "[config][web]") {
  TempDir dir;
  WriteFile(dir / "master",
            "root_dir: /srv/root\nbrine.web_bind: 0.0.0.0\nbrine.web_port: 0\n"
            "brine:\n  web_hosts: [salt.example.com, brine]\n  web_base_path: /brine\n"
            "  web_token_file: /etc/brine/web.token\n  web_hide_functions: test.ping\n"
            "  web_trust_remote_user: true\n");
  MasterConfig c = LoadMasterConfig(dir.path());
  CHECK(c.brine.web_bind == "0.0.0.0");
  CHECK(c.brine.web_port == 0);
  CHECK(c.brine.web_hosts == std::vector<std::string>{"salt.example.com", "brine"});
  CHECK(c.brine.web_base_path == "/brine/");
  CHECK(c.brine.web_token_file == fs::path("/srv/root/etc/brine/web.token"));
  CHECK(c.brine.web_hide_functions == std::vector<std::string>{"test.ping"});
  CHECK(c.brine.web_trust_remote_user);
  CHECK(c.warnings.empty());

  auto error_of = [&](const std::string& text) -> std::string {
    WriteFile(dir / "master", text);
    try {
      (void)LoadMasterConfig(dir.path());
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string file = (dir / "master").string();
  CHECK(error_of("brine.web_port: 65536\n") ==
        file + ": brine.web_port: expected a port number from 0 to 65535, got 65536");
  CHECK(error_of("brine.web_port: '8080'\n") ==
        file + ": brine.web_port: expected a port number from 0 to 65535, got '8080'");
  CHECK_THAT(error_of("brine.web_base_path: brine/\n"), Catch::Contains("expected a URL path starting with /"));
  CHECK_THAT(error_of("brine.web_base_path: '/a\"b/'\n"), Catch::Contains("expected a URL path starting with /"));
  CHECK_THAT(error_of("brine.web_trust_remote_user: 'yes'\n"), Catch::Contains("expected true or false"));
  CHECK_THAT(error_of("brine.web_hosts: [1]\n"), Catch::Contains("expected a list of strings"));
}
