// brine-master's configuration, read from the Salt master's own config files.
//
// `brine-master -c CONFIG_DIR` (default /etc/salt) reads what `salt-master -c
// CONFIG_DIR` reads, the way salt.config.master_config reads it:
//
//   1. CONFIG_DIR/master, if it exists (a missing file means all defaults).
//   2. The files matched by its `default_include` (default "master.d/*.conf"),
//      then by its `include` (default none). Each is a string or a list of
//      strings; each string a glob, `~` expanded, relative to CONFIG_DIR; the
//      matches of each glob in sorted order, globs in list order. A glob that
//      matches nothing is fine. Only the master file's `default_include` and
//      `include` count; an included file's own `include` is read too, relative
//      to that file, and its keys replace that file's keys.
//   3. Merging, exactly as Salt does it:
//        - the files of one include set are merged into each other in order
//          with salt.utils.dictupdate.update(..., merge_lists=True): a later
//          file's key wins, except that two maps merge key by key (recursively)
//          and two lists are concatenated (the later list's items that the
//          earlier one already has are skipped);
//        - the default_include set's result, then the include set's result,
//          replace the master file's keys top-level key by top-level key
//          (a `brine:` map from master.d replaces the master file's `brine:`).
//   4. Defaults for every key not set; unknown keys are ignored (but kept in `raw`).
//
// Salt keys read, with Salt's defaults:
//   id            as given (a number or bool is turned into text the way Python's
//                 str() does, so `id: 123` is "123"; `id:` with no value is "None",
//                 a Salt quirk kept). When unset or empty: the minion id cached in
//                 <root_dir>/etc/salt/minion_id if there is one (as Salt does, unless
//                 `minion_id_caching: false`), else the host's FQDN (getaddrinfo's
//                 canonical name for gethostname(), or gethostname()), followed by
//                 "_master"; a generated (not cached) name is first lowercased when
//                 `minion_id_lowercase` is true and loses its domain per
//                 `minion_id_remove_domain` (true: everything from the first dot; a
//                 string: that domain). `append_domain`, when set, is appended with a
//                 dot before "_master" (unless the id already ends with it or with
//                 "."; never to an IPv4 id). `id_function` is not supported.
//   user          "root"
//   root_dir      "/"; stored made absolute (os.path.abspath)
//   sock_dir      "/var/run/salt/master"
//   cachedir      "/var/cache/salt/master"
//   ipc_mode      "ipc" or "tcp"
//   keep_jobs_seconds  86400, and the deprecated keep_jobs (hours, 24): the
//                 effective value is keep_jobs*3600 when keep_jobs_seconds is exactly
//                 86400 and keep_jobs is not 24, else keep_jobs_seconds (0 = keep forever)
//   loop_interval 60          timeout 5
//   presence_events false: whether the Salt master fires salt/presence/present and
//                 salt/presence/change every loop_interval (manage.up and its kin read them)
//   job_cache true   runner_returns true   job_cache_store_endtime false   unique_jid false
//   event_return_whitelist / event_return_blacklist: lists of globs, default empty;
//                 a single string is taken as a one-element list (Salt would iterate
//                 its characters), an empty string or null as the empty list
//   log_level     "warning"; one of all garbage trace debug profile info warning
//                 error critical quiet, any case, stored lowercase
//   tcp_master_pub_port 4512 / tcp_master_pull_port 4513: only as the defaults of
//                 brine.tcp_pub_port / brine.tcp_pull_port
//   master_job_cache "local_cache"; "brine" means the Salt plug-in is this master's
//                 job cache, and only its acknowledged writes and spool fill brine's
//                 job cache (docs/salt.md, "Which mode a master is in")
// root_dir is applied as Salt's prepend_root_dir applies it: every path below
// (sock_dir, cachedir and all brine.* paths, whether set or defaulted) is put
// under abspath(root_dir), unless it already starts with it; relative paths
// are joined to it. Salt's own quirk that a sock_dir more than 10 characters
// longer than cachedir is replaced by <cachedir>/.salt-unix is kept (before
// root_dir), so brine finds the sockets where Salt put them.
//
// Salt's `log_file`, `event_return_queue`, `event_return_queue_max_seconds` and
// `max_event_size` belong to the Salt master and are not read: brine logs to
// brine.log_file, batches by brine.batch_max_events / brine.flush_interval_ms,
// and bounds frames by brine.max_frame_bytes.
//
// brine's own keys, written flat like Salt's `mysql.host` (`brine.database:
// /path`) or nested (`brine: {database: /path}`); when a file set gives both,
// the flat key wins. Errors name the key as `brine.<name>` either way.
//   brine.database            <cachedir>/brine.sqlite; a path (SQLite), or a
//                             postgresql:// URI in libpq's syntax, taken as it is
//                             (no root_dir); a URI with a password is refused
//                             by the store when it connects (store.h,
//                             CheckServerDatabase), not here
//   brine.read_database       unset; the same forms: where brine-run reads the
//                             job cache and archive from (a PostgreSQL replica),
//                             while queue.* and every writer use brine.database
//   brine.bus                 "attach" (default), "bind" or "none": how brine-master meets
//                             the master's event bus. attach: read a running Salt master's
//                             own bus (2016.3 and later) at <sock_dir>/master_event_pub.ipc,
//                             or 127.0.0.1:tcp_master_pub_port in ipc_mode tcp
//                             (SaltBusFor in bus_endpoints.h); bind: be the 2014 ZeroMQ bus
//                             in brine.sock_dir (a master up to 2015.8, brine-sim, the tests);
//                             none: no bus, only the Salt plug-in feeds brine
//   brine.bus_framing         unset (the framing brine-master saw on the publisher), "plain"
//                             or "prefixed": the form brine-run's event.send writes to an
//                             attached master's puller (Salt 3008.2 and later: prefixed)
//   brine.sock_dir            the effective sock_dir
//   brine.tcp_pull_port       tcp_master_pull_port (4513), 1-65535
//   brine.tcp_pub_port        tcp_master_pub_port (4512), 1-65535, not the pull port
//   brine.tcp_cache_port      4520, 1-65535, neither bus port nor any port a Salt master
//                             binds (publish_port, ret_port, tcp_pub_port, tcp_pull_port,
//                             tcp_master_pub_port, tcp_master_pull_port,
//                             tcp_master_publish_pull, tcp_master_workers: as set, else
//                             4505, 4506, 4510-4515): the plug-in's acknowledged job-cache
//                             socket in ipc_mode tcp
//   brine.cache_key_file      <brine.sock_dir>/brine_cache.key: the key both ends of a
//                             job-cache connection prove they hold in ipc_mode tcp
//                             (32 random octets, 0600; brine-master makes it)
//   brine.log_file            /var/log/salt/brine-master
//   brine.log_level           log_level (same names)
//   brine.batch_max_events    10000          brine.flush_interval_ms   100
//   brine.sync                "normal" or "full"
//   brine.max_frame_bytes     67108864 (64 MiB)
//   brine.max_queue_mb        32 (at most 2^43 - 1, so bytes fit 64 bits)
//   brine.keep_events_seconds the effective keep_jobs_seconds (0 = keep forever)
//   brine.active_window_s     300            brine.send_timeout_ms     2000 (at most 86400000)
//   brine.presence_window_s   max(300, 2 x loop_interval): manage.up/down/present/not_present
//                             count a minion up when its newest sign of life (or the newest
//                             presence event) arrived within this many seconds
//   brine.queue_timeout_s     known but not read here: the Salt queue backend's
//                             limit on one brine-run call (default 60)
//   brine.metrics_file        <cachedir>/brine-master.prom: brine-master's metrics in
//                             Prometheus's text format, rewritten (atomically) every second;
//                             brine.health and brine.stats read it too
//   brine.lag_warning_s       10: brine-master warns when frames wait longer than this
//   brine.max_clock_skew_s    300 (at most 100 years): an arrival time further ahead of
//                             the clock than this is stored as the clock's time, and counted
//   brine.keep_jobs_by_fun    {glob: seconds}: jobs whose load's fun matches a glob (fnmatch;
//                             the first that matches, in the file's order) are kept that long
//                             instead of keep_jobs_seconds (0 = forever)
//   brine.keep_events_by_tag  {glob: seconds}: the same for archived events by tag, instead of
//                             brine.keep_events_seconds
//   brine.max_store_mb        0 (no cap): above it brine-master prunes the oldest jobs and events
//                             first, whatever their class (at most 2^43 - 1)
//   brine.overflow_mb         256 (0 = none): disk for bus frames read while the queue
//                             (max_queue_mb) is full, so they wait in a file instead of
//                             in ZeroMQ's memory (at most 2^43 - 1)
//   brine.overflow_dir        brine.database's folder (cachedir for a server database): where
//                             that file lives, unlinked from the moment it is created
//   brine.web_bind            127.0.0.1: the address brine-web listens on (a non-loopback
//                             address is allowed; brine-web warns at start)
//   brine.web_port            4519 (kDefaultWebPort), 0-65535; 0 = a free port the kernel
//                             picks, recorded in WebPortFile
//   brine.web_hosts           []: names allowed in the Host header beside loopback addresses
//   brine.web_base_path       "/": the URL prefix (for a reverse proxy under /brine/); always
//                             stored with a trailing "/"; no ?, #, quotes, <, > or backslash
//   brine.web_token_file      <brine.sock_dir>/brine_web.token: the login secret (0600)
//   brine.web_hide_functions  saltutil.find_job, saltutil.running, saltutil.is_running,
//                             mine.update, grains.items, test.ping: hidden from /jobs by default
//   brine.web_trust_remote_user false: X-Remote-User from a loopback peer names the user
//   brine.web_sql_timeout_s   5 (1-3600): the time budget of a query on brine-web's /sql
//   brine.web_sql_row_limit   1000 (1-1000000): rows a query on /sql shows at most
//   brine.web_metrics_file    <cachedir>/brine-web.prom: brine-web's metrics in Prometheus's
//                             text format, rewritten every second (docs/web.md)
// Other brine.* keys are ignored with a warning in `warnings`.
//
// Values are checked strictly, by YAML type (see yaml.h: a quoted "60" is a
// string, not an integer): booleans must be YAML booleans, integers YAML
// integers in range (intervals, sizes, counts and timeouts positive;
// keep_* non-negative; ports 1-65535), paths non-empty strings, enums one of
// their listed words. Salt itself would often accept a wrong type and fail
// later; brine refuses to start instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/config/config_error.h"
#include "brine/core/database.h"
#include "brine/core/value.h"

namespace brine::config {

inline constexpr std::string_view kDefaultConfigDir = "/etc/salt";
// brine.web_port's default: outside the ports a Salt master binds (4505, 4506,
// 4510-4515), beside brine's own (4512, 4513, 4520), not salt-api's 8000, and
// listed for no service in /etc/services.
inline constexpr int kDefaultWebPort = 4519;

// Where brine-web records the port it listens on (one line, the decimal port,
// written atomically after the bind), so `brine-run brine.web_url` names it
// even when brine.web_port is 0: the token file's path with ".port" appended.
[[nodiscard]] inline std::filesystem::path WebPortFile(const std::filesystem::path& token_file) {
  return std::filesystem::path(token_file.native() + ".port");
}

// Every field has Salt's default, so MasterConfig{} is what an empty
// /etc/salt/master gives (root_dir "/"), apart from `id`, which is left empty.
struct MasterConfig {
  enum class IpcMode { kIpc, kTcp };
  // brine.bus (above).
  enum class BusMode { kAttach, kBind, kNone };
  // brine.bus_framing (above); kSeen: the framing recorded by brine-master.
  enum class BusFraming { kSeen, kPlain, kPrefixed };

  std::filesystem::path config_dir{kDefaultConfigDir};
  std::string id;
  std::string user = "root";
  std::filesystem::path root_dir = "/";
  std::filesystem::path sock_dir = "/var/run/salt/master";
  std::filesystem::path cachedir = "/var/cache/salt/master";
  IpcMode ipc_mode = IpcMode::kIpc;
  // Salt's own event bus ports in ipc_mode tcp (what an attached brine-master reads).
  int tcp_master_pub_port = 4512;
  int tcp_master_pull_port = 4513;
  // Globs to seconds, in the file's order (retention by class).
  using GlobSeconds = std::vector<std::pair<std::string, std::int64_t>>;
  std::int64_t keep_jobs_seconds = 86400;  // effective, after the keep_jobs rule
  int loop_interval_s = 60;
  bool job_cache = true;
  bool runner_returns = true;
  bool job_cache_store_endtime = false;
  bool unique_jid = false;
  std::vector<std::string> event_return_whitelist;
  std::vector<std::string> event_return_blacklist;
  std::string log_level = "warning";
  int timeout_s = 5;
  bool presence_events = false;
  std::string master_job_cache = "local_cache";
  // True when the Salt plug-in is this master's job cache (master_job_cache: brine).
  [[nodiscard]] bool PluginIsJobCache() const { return master_job_cache == "brine"; }

  struct Brine {
    using Sync = SyncMode;  // brine/core/database.h: store::OpenOptions::sync takes it as it is

    std::filesystem::path database = "/var/cache/salt/master/brine.sqlite";
    // brine-run's reads, when set (a replica); writes always go to `database`.
    std::optional<std::filesystem::path> read_database;
    BusMode bus = BusMode::kAttach;
    BusFraming bus_framing = BusFraming::kSeen;
    std::filesystem::path sock_dir = "/var/run/salt/master";
    std::filesystem::path log_file = "/var/log/salt/brine-master";
    int tcp_pull_port = 4513;
    int tcp_pub_port = 4512;
    int tcp_cache_port = 4520;
    std::filesystem::path cache_key_file = "/var/run/salt/master/brine_cache.key";
    std::string log_level = "warning";
    std::int64_t batch_max_events = 10000;
    std::int64_t flush_interval_ms = 100;
    Sync sync = Sync::kNormal;
    std::int64_t max_frame_bytes = 64 * 1024 * 1024;
    std::int64_t max_queue_mb = 32;
    std::int64_t keep_events_seconds = 86400;
    std::int64_t active_window_s = 300;
    std::int64_t presence_window_s = 300;
    std::int64_t send_timeout_ms = 2000;
    std::filesystem::path metrics_file = "/var/cache/salt/master/brine-master.prom";
    std::int64_t lag_warning_s = 10;
    std::int64_t max_clock_skew_s = 300;
    GlobSeconds keep_jobs_by_fun;
    GlobSeconds keep_events_by_tag;
    std::int64_t max_store_mb = 0;
    std::int64_t overflow_mb = 256;
    std::filesystem::path overflow_dir = "/var/cache/salt/master";
    // brine-web (web/, docs/web.md).
    std::string web_bind = "127.0.0.1";
    int web_port = kDefaultWebPort;
    std::vector<std::string> web_hosts;
    std::string web_base_path = "/";
    std::filesystem::path web_token_file = "/var/run/salt/master/brine_web.token";
    std::vector<std::string> web_hide_functions = {"saltutil.find_job", "saltutil.running", "saltutil.is_running",
                                                   "mine.update",       "grains.items",     "test.ping"};
    bool web_trust_remote_user = false;
    std::int64_t web_sql_timeout_s = 5;
    std::int64_t web_sql_row_limit = 1000;
    std::filesystem::path web_metrics_file = "/var/cache/salt/master/brine-web.prom";
  } brine;

  // The merged file contents (master file and includes, in Salt's order and
  // with Salt's merge rules) before defaults, typing or root_dir: every key,
  // known or not, in first-seen order. An empty map when no file was read.
  Value raw = Value::EmptyMap();
  // The files read, in the order read (the master file first, when it exists).
  std::vector<std::filesystem::path> files_read;
  // Things the operator should hear about but that do not stop brine, one
  // sentence each, naming the file and key: the deprecated keep_jobs in use, an
  // unknown brine.* key. brine-master logs them at warning level.
  std::vector<std::string> warnings;
};

// Reads CONFIG_DIR/master and its includes as described above.
// Returns the typed config. Throws ConfigError, its message naming the file
// (and the key, for a bad value), when: a file cannot be read (a missing
// master file is not an error; an unreadable one is, where Salt would quietly
// use its defaults), is a directory, is not YAML, holds more than one document,
// or is not a mapping at the top level; `include`/`default_include` is not a
// string or a list of strings; includes nest more than 32 deep (a loop); or a
// value has the wrong type or is out of range. Salt logs and skips a broken
// included file; brine refuses it instead.
[[nodiscard]] MasterConfig LoadMasterConfig(const std::filesystem::path& config_dir);

// As LoadMasterConfig, with `master_text` standing in for the contents of
// CONFIG_DIR/master (named so in errors; not listed in files_read). Includes are
// still read from disk, relative to `config_dir`. For tests and tools.
[[nodiscard]] MasterConfig LoadMasterConfigFromText(std::string_view master_text,
                                                    const std::filesystem::path& config_dir);

}  // namespace brine::config
