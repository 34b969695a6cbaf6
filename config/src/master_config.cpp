// Reading the Salt master config: salt.config.master_config / include_config /
// apply_master_config (salt/config/__init__.py), reduced to the keys brine
// uses, plus strict typing of those keys.
#include "brine/config/master_config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "brine/config/yaml.h"
#include "brine/core/json.h"
#include "master_id.h"
#include "salt_paths.h"

namespace brine::config {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxIncludeDepth = 32;
constexpr std::string_view kDefaultInclude = "master.d/*.conf";
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMaxClockSkewS = 100LL * 366 * 86400;

// The ports a Salt master binds, with Salt's defaults (salt/config/__init__.py):
// brine.tcp_cache_port may be none of them.
constexpr std::array<std::pair<std::string_view, int>, 8> kSaltPorts = {{{"publish_port", 4505},
                                                                         {"ret_port", 4506},
                                                                         {"tcp_pub_port", 4510},
                                                                         {"tcp_pull_port", 4511},
                                                                         {"tcp_master_pub_port", 4512},
                                                                         {"tcp_master_pull_port", 4513},
                                                                         {"tcp_master_publish_pull", 4514},
                                                                         {"tcp_master_workers", 4515}}};

constexpr std::array<std::string_view, 39> kBrineKeys = {
    "bus", "bus_framing", "database",         "read_database",     "sock_dir",          "tcp_pull_port",
    "tcp_pub_port",     "log_file",          "log_level",
    "batch_max_events", "flush_interval_ms", "sync",
    "max_frame_bytes",  "max_queue_mb",      "keep_events_seconds",
    "active_window_s",  "send_timeout_ms",   "tcp_cache_port",
    "metrics_file",     "lag_warning_s",     "keep_jobs_by_fun",
    "keep_events_by_tag", "max_store_mb",   "overflow_mb",       "overflow_dir",
    "cache_key_file",   "max_clock_skew_s",  "presence_window_s",
    // brine-web's (web/).
    "web_bind", "web_port", "web_hosts", "web_base_path", "web_token_file", "web_hide_functions",
    "web_trust_remote_user",
    "web_sql_timeout_s", "web_sql_row_limit", "web_metrics_file",
    // Read by the Salt queue backend (contrib/salt/queues/brine.py) only.
    "queue_timeout_s"};

// salt/_logging/impl.py LOG_LEVELS; Salt looks names up lowercased.
constexpr std::array<std::string_view, 10> kLogLevels = {
    "all", "garbage", "trace", "debug", "profile", "info", "warning", "error", "critical", "quiet"};

// Which file each key of a merged config came from, so an error can name it.
// Keys: {top-level key, ""} and, for a map value, {top-level key, its key}.
using OriginKey = std::pair<std::string, std::string>;
using Origins = std::map<OriginKey, fs::path>;

struct Layer {
  Value values = Value::EmptyMap();
  Origins origins;
};

// How a value looks in an error message.
std::string Describe(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull:
      return "null";
    case Value::Kind::kBool:
      return v.as_bool() ? "true" : "false";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kUint:
      return std::to_string(v.as_uint());
    case Value::Kind::kFloat:
      return PythonFloatRepr(v.as_float());
    case Value::Kind::kString: {
      constexpr std::size_t kMaxShown = 80;
      const std::string& s = v.as_string();
      if (s.size() <= kMaxShown) return "'" + s + "'";
      return "'" + s.substr(0, kMaxShown) + "...'";
    }
    case Value::Kind::kList:
      return "a list";
    case Value::Kind::kMap:
      return "a mapping";
  }
  return "?";
}

// Python's str() of a scalar, as Salt applies it to a non-string `id`.
std::optional<std::string> PythonStr(const Value& v) {
  if (v.is_string()) return v.as_string();
  return PythonScalarStr(v);
}

// os.path.dirname and os.path.join(a, b), on strings.
std::string PyDirname(const std::string& p) {
  std::size_t slash = p.rfind('/');
  std::string head = slash == std::string::npos ? "" : p.substr(0, slash + 1);
  if (!head.empty() && head.find_first_not_of('/') != std::string::npos) {
    head.erase(head.find_last_not_of('/') + 1);
  }
  return head;
}

std::string PyJoin(const std::string& a, const std::string& b) {
  if (b.starts_with('/') || a.empty()) return b;
  return a.ends_with('/') ? a + b : a + "/" + b;
}

// len() of a Python str holding UTF-8 text: bytes that start a character.
std::size_t CodePoints(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

const fs::path& OriginOf(const Origins& origins, const std::string& key, const std::string& sub,
                         const fs::path& fallback) {
  if (auto it = origins.find({key, sub}); it != origins.end()) return it->second;
  if (auto it = origins.find({key, ""}); it != origins.end()) return it->second;
  return fallback;
}

void RecordOrigins(Layer& layer, const fs::path& file) {
  for (const auto& [key, value] : layer.values.as_map()) {
    layer.origins[{key, ""}] = file;
    if (value.is_map()) {
      for (const auto& entry : value.as_map()) layer.origins[{key, entry.first}] = file;
    }
  }
}

// dest's origins for `key` become src's.
void ReplaceOrigins(Origins& dest, const Origins& src, const std::string& key) {
  auto first = dest.lower_bound({key, ""});
  auto last = first;
  while (last != dest.end() && last->first.first == key) ++last;
  dest.erase(first, last);
  for (auto it = src.lower_bound({key, ""}); it != src.end() && it->first.first == key; ++it) {
    dest.insert(*it);
  }
}

// salt.utils.dictupdate.update(dest, upd, recursive_update=True, merge_lists=True)
// for two lists: upd's items not already in dest (as dest was) are appended.
void MergeLists(Value& dest, const Value& upd) {
  const ValueList before = dest.as_list();
  for (const Value& item : upd.as_list()) {
    if (std::find(before.begin(), before.end(), item) == before.end())
      dest.as_list().push_back(item);
  }
}

// The same update for two maps, below the top level.
void MergeMaps(Value& dest, const Value& upd) {
  for (const auto& [key, value] : upd.as_map()) {
    Value* existing = dest.Find(key);
    if (existing != nullptr && existing->is_map() && value.is_map()) {
      MergeMaps(*existing, value);
    } else if (existing != nullptr && existing->is_list() && value.is_list()) {
      MergeLists(*existing, value);
    } else {
      dest.Set(key, value);
    }
  }
}

// The same update at the top level of one include set, keeping origins.
void MergeLayer(Layer& dest, const Layer& upd) {
  for (const auto& [key, value] : upd.values.as_map()) {
    Value* existing = dest.values.Find(key);
    if (existing != nullptr && existing->is_map() && value.is_map()) {
      MergeMaps(*existing, value);
      dest.origins[{key, ""}] = OriginOf(upd.origins, key, "", {});
      for (const auto& entry : value.as_map()) {
        dest.origins[{key, entry.first}] = OriginOf(upd.origins, key, entry.first, {});
      }
    } else if (existing != nullptr && existing->is_list() && value.is_list()) {
      MergeLists(*existing, value);
      dest.origins[{key, ""}] = OriginOf(upd.origins, key, "", {});
    } else {
      dest.values.Set(key, value);
      ReplaceOrigins(dest.origins, upd.origins, key);
    }
  }
}

// Python's dict.update: upd's top-level keys replace dest's.
void UpdateLayer(Layer& dest, const Layer& upd) {
  for (const auto& [key, value] : upd.values.as_map()) {
    dest.values.Set(key, value);
    ReplaceOrigins(dest.origins, upd.origins, key);
  }
}

// salt.config._read_conf_file on text already read.
Layer ParseConfig(std::string_view text, const fs::path& file) {
  Value values;
  try {
    values = ParseYaml(text);
  } catch (const YamlError& e) {
    throw ConfigError(file.string() + ": " + e.what());
  }
  // Salt: `safe_load(f) or {}`, so an empty file (or any false value) is no keys.
  if (!values.Truthy()) values = Value::EmptyMap();
  if (!values.is_map()) {
    throw ConfigError(file.string() + ": expected a mapping at the top level, got " +
                      Describe(values));
  }
  // Salt turns a non-string id into str(id) file by file ("allow using numeric ids").
  if (Value* id = values.Find("id"); id != nullptr && !id->is_string()) {
    if (std::optional<std::string> text_id = PythonStr(*id)) *id = Value(*text_id);
  }
  Layer layer{std::move(values), {}};
  RecordOrigins(layer, file);
  return layer;
}

std::string ReadFile(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw ConfigError(file.string() + ": is a directory, not a config file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(file.string() + ": cannot read: " + std::strerror(errno));
  return text.str();
}

class Loader {
 public:
  explicit Loader(std::vector<fs::path>& files_read) : files_read_(files_read) {}

  Layer LoadFile(const fs::path& file) {
    Layer layer = ParseConfig(ReadFile(file), file);
    files_read_.push_back(file);
    return layer;
  }

  // salt.config.include_config(include, orig_path): `include` came from key
  // `key` of `orig_path`.
  Layer Include(const Value& include, const fs::path& orig_path, std::string_view key, int depth) {
    Layer configuration;
    if (!include.Truthy()) return configuration;
    std::vector<std::string> patterns;
    auto fail = [&] {
      throw ConfigError(orig_path.string() + ": " + std::string(key) +
                        ": expected a string or a list of strings, got " + Describe(include));
    };
    if (include.is_string()) {
      patterns.push_back(include.as_string());
    } else if (include.is_list()) {
      for (const Value& item : include.as_list()) {
        if (!item.is_string()) fail();
        patterns.push_back(item.as_string());
      }
    } else {
      fail();
    }
    for (const std::string& pattern : patterns) {
      std::string path = internal::ExpandUser(pattern);
      if (!path.starts_with('/')) path = PyJoin(PyDirname(orig_path.string()), path);
      for (const std::string& match : internal::GlobSorted(path)) {
        Layer opts = LoadFile(match);
        if (const Value* nested = opts.values.Find("include");
            nested != nullptr && nested->Truthy()) {
          if (depth + 1 > kMaxIncludeDepth) {
            throw ConfigError(match + ": include: includes nest more than " +
                              std::to_string(kMaxIncludeDepth) +
                              " deep (does a file include itself?)");
          }
          Layer included = Include(*nested, match, "include", depth + 1);
          UpdateLayer(opts, included);
        }
        MergeLayer(configuration, opts);
      }
    }
    return configuration;
  }

 private:
  std::vector<fs::path>& files_read_;  // owned by the caller, outlives the Loader
};

// One key's value as found in the merged config, and where it came from.
struct Found {
  const Value* value = nullptr;
  fs::path file;
  std::string key;  // as errors name it: "cachedir", "brine.database"
};

// Strict typed reads of the merged config. Each returns nullopt when the key
// is absent and throws ConfigError("<file>: <key>: expected ..., got ...")
// when it is present but unusable.

class Typer {
 public:
  Typer(const Layer& merged, const fs::path& master_path)
      : merged_(merged), master_path_(master_path) {}

  [[nodiscard]] Found Salt(const std::string& key) const {
    return {merged_.values.Find(key), OriginOf(merged_.origins, key, "", master_path_), key};
  }

  // brine.<name>: the flat key wins over the nested `brine:` map.
  [[nodiscard]] Found Brine(const std::string& name) const {
    std::string flat = "brine." + name;
    if (const Value* v = merged_.values.Find(flat)) {
      return {v, OriginOf(merged_.origins, flat, "", master_path_), flat};
    }
    if (const Value* nested = merged_.values.Find("brine"); nested != nullptr && nested->is_map()) {
      if (const Value* v = nested->Find(name)) {
        return {v, OriginOf(merged_.origins, "brine", name, master_path_), flat};
      }
    }
    return {nullptr, {}, flat};
  }

  [[noreturn]] static void Fail(const Found& found, std::string_view expected) {
    throw ConfigError(found.file.string() + ": " + found.key + ": expected " +
                      std::string(expected) + ", got " + Describe(*found.value));
  }

  static std::optional<bool> Bool(const Found& f) {
    if (f.value == nullptr) return std::nullopt;
    if (!f.value->is_bool()) Fail(f, "true or false");
    return f.value->as_bool();
  }

  // An integer in [min, max]; `what` names the kind ("a positive integer").
  static std::optional<std::int64_t> Int(const Found& f, std::int64_t min, std::int64_t max,
                                         std::string_view what) {
    if (f.value == nullptr) return std::nullopt;
    if (!f.value->is_int()) Fail(f, what);
    if (f.value->kind() == Value::Kind::kUint || f.value->as_int() > max) {
      Fail(f, std::string(what) + " no larger than " + std::to_string(max));
    }
    if (f.value->as_int() < min) Fail(f, what);
    return f.value->as_int();
  }
  static std::optional<std::int64_t> Positive(const Found& f, std::int64_t max = kInt64Max) {
    return Int(f, 1, max, "a positive integer");
  }
  static std::optional<std::int64_t> NonNegative(const Found& f, std::int64_t max = kInt64Max) {
    return Int(f, 0, max, "a non-negative integer");
  }
  static std::optional<int> Port(const Found& f) {
    if (f.value == nullptr) return std::nullopt;
    if (!f.value->is_int() || f.value->kind() == Value::Kind::kUint || f.value->as_int() < 1 ||
        f.value->as_int() > 65535) {
      Fail(f, "a port number from 1 to 65535");
    }
    return static_cast<int>(f.value->as_int());
  }

  static std::optional<std::string> Text(const Found& f, std::string_view what) {
    if (f.value == nullptr) return std::nullopt;
    if (!f.value->is_string() || f.value->as_string().empty()) Fail(f, what);
    return f.value->as_string();
  }
  static std::optional<std::string> Path(const Found& f) { return Text(f, "a path"); }

  // One of `choices`, compared exactly.
  template <std::size_t N>
  static std::optional<std::string> Choice(const Found& f,
                                           const std::array<std::string_view, N>& choices,
                                           std::string_view what) {
    if (f.value == nullptr) return std::nullopt;
    if (!f.value->is_string() ||
        std::find(choices.begin(), choices.end(), f.value->as_string()) == choices.end()) {
      Fail(f, what);
    }
    return f.value->as_string();
  }

  static std::optional<std::string> LogLevel(const Found& f) {
    if (f.value == nullptr) return std::nullopt;
    std::string lower;
    if (f.value->is_string()) {
      lower = f.value->as_string();
      std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
      });
    }
    if (std::find(kLogLevels.begin(), kLogLevels.end(), lower) == kLogLevels.end()) {
      Fail(f,
           "a log level (all, garbage, trace, debug, profile, info, warning, error, critical or "
           "quiet)");
    }
    return lower;
  }

  // A map of globs to seconds (non-negative integers), in the file's order;
  // null is empty.
  static std::optional<MasterConfig::GlobSeconds> GlobSeconds(const Found& f) {
    if (f.value == nullptr) return std::nullopt;
    MasterConfig::GlobSeconds out;
    if (f.value->is_null()) return out;
    constexpr std::string_view kWhat = "a map of globs to seconds (non-negative integers)";
    if (!f.value->is_map()) Fail(f, kWhat);
    for (const auto& [glob, seconds] : f.value->as_map()) {
      if (glob.empty()) Fail(f, kWhat);
      if (!seconds.is_int() || seconds.kind() == Value::Kind::kUint || seconds.as_int() < 0) {
        Fail({&seconds, f.file, f.key + ": " + glob}, "seconds (a non-negative integer)");
      }
      out.emplace_back(glob, seconds.as_int());
    }
    return out;
  }

  // A list of strings; a single string is a one-element list; "" and null are empty.
  static std::optional<std::vector<std::string>> StringList(const Found& f) {
    if (f.value == nullptr) return std::nullopt;
    std::vector<std::string> out;
    if (f.value->is_null()) return out;
    if (f.value->is_string()) {
      if (!f.value->as_string().empty()) out.push_back(f.value->as_string());
      return out;
    }
    if (!f.value->is_list()) Fail(f, "a list of strings");
    for (const Value& item : f.value->as_list()) {
      if (!item.is_string()) Fail(f, "a list of strings");
      out.push_back(item.as_string());
    }
    return out;
  }

  // Unknown brine.* keys, flat or nested, one warning each.
  void WarnUnknownBrineKeys(std::vector<std::string>& warnings) const {
    auto known = [](std::string_view name) {
      return std::find(kBrineKeys.begin(), kBrineKeys.end(), name) != kBrineKeys.end();
    };
    for (const auto& [key, value] : merged_.values.as_map()) {
      if (key.starts_with("brine.") && !known(std::string_view(key).substr(6))) {
        warnings.push_back(OriginOf(merged_.origins, key, "", master_path_).string() + ": " + key +
                           ": unknown brine setting, ignored");
      }
    }
    if (const Value* nested = merged_.values.Find("brine"); nested != nullptr && nested->is_map()) {
      for (const auto& entry : nested->as_map()) {
        if (!known(entry.first)) {
          warnings.push_back(
              OriginOf(merged_.origins, "brine", entry.first, master_path_).string() + ": brine." +
              entry.first + ": unknown brine setting, ignored");
        }
      }
    }
  }

 private:
  const Layer& merged_;          // outlives the Typer (both live in Apply)
  const fs::path& master_path_;  // likewise
};

std::string AsciiLower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// apply_master_config's id rules (salt.config.get_id for a master).
std::string MasterId(const Typer& t, const std::string& root_dir_option) {
  std::string id;
  Found given = t.Salt("id");
  if (given.value != nullptr) {
    std::optional<std::string> text = PythonStr(*given.value);
    if (!text) Typer::Fail(given, "a string");
    id = *text;
  }
  bool using_ip_for_id = false;
  bool append_master = false;
  if (id.empty()) {
    bool use_cache = Typer::Bool(t.Salt("minion_id_caching")).value_or(true);
    internal::GeneratedId generated = internal::GenerateMasterId(root_dir_option, use_cache);
    id = generated.id;
    if (!generated.from_cache) {
      if (Typer::Bool(t.Salt("minion_id_lowercase")).value_or(false)) id = AsciiLower(id);
      Found remove = t.Salt("minion_id_remove_domain");
      if (remove.value != nullptr && remove.value->Truthy()) {
        if (remove.value->is_bool()) {
          id = id.substr(0, id.find('.'));
        } else if (remove.value->is_string()) {
          std::string suffix = "." + AsciiLower(remove.value->as_string());
          if (AsciiLower(id).ends_with(suffix)) id.resize(id.size() - suffix.size());
        } else {
          Typer::Fail(remove, "true, false or a domain name");
        }
      }
      using_ip_for_id = internal::IsIpv4(id);
    }
    append_master = true;
  }
  Found domain = t.Salt("append_domain");
  if (domain.value != nullptr && !using_ip_for_id) {
    if (!domain.value->is_string()) Typer::Fail(domain, "a domain name");
    const std::string& d = domain.value->as_string();
    if (!id.ends_with(d) && !id.ends_with('.')) id += "." + d;
  }
  if (append_master) id += "_master";
  return id;
}

// brine-web's keys (master_config.h lists them with their defaults).
void ReadWebKeys(const Typer& t, const std::string& root_dir, MasterConfig::Brine& b) {
  b.web_bind = Typer::Text(t.Brine("web_bind"), "an address").value_or(b.web_bind);
  Found port = t.Brine("web_port");
  if (port.value != nullptr) {
    if (!port.value->is_int() || port.value->kind() == Value::Kind::kUint || port.value->as_int() < 0 ||
        port.value->as_int() > 65535) {
      Typer::Fail(port, "a port number from 0 to 65535");
    }
    b.web_port = static_cast<int>(port.value->as_int());
  }
  b.web_hosts = Typer::StringList(t.Brine("web_hosts")).value_or(std::vector<std::string>{});
  Found base = t.Brine("web_base_path");
  if (auto path = Typer::Text(base, "a URL path starting with /")) {
    if (path->front() != '/' || path->find_first_of("?#\"<>'\\") != std::string::npos) {
      Typer::Fail(base, "a URL path starting with /");
    }
    if (path->back() != '/') path->push_back('/');
    b.web_base_path = *path;
  }
  std::optional<std::string> token_file = Typer::Path(t.Brine("web_token_file"));
  b.web_token_file = token_file ? fs::path(internal::PrependRootDir(root_dir, *token_file))
                                : b.sock_dir / "brine_web.token";
  if (auto hide = Typer::StringList(t.Brine("web_hide_functions"))) b.web_hide_functions = *hide;
  b.web_trust_remote_user = Typer::Bool(t.Brine("web_trust_remote_user")).value_or(false);
}

// brine-web's keys of its live pages: the SQL console's budget and the metrics file.
void ReadWebLiveKeys(const Typer& t, const std::string& root_dir, const fs::path& cachedir, MasterConfig::Brine& b) {
  b.web_sql_timeout_s = Typer::Positive(t.Brine("web_sql_timeout_s"), 3600).value_or(b.web_sql_timeout_s);
  b.web_sql_row_limit = Typer::Positive(t.Brine("web_sql_row_limit"), 1000000).value_or(b.web_sql_row_limit);
  std::optional<std::string> metrics = Typer::Path(t.Brine("web_metrics_file"));
  b.web_metrics_file = metrics ? fs::path(internal::PrependRootDir(root_dir, *metrics))
                               : fs::path(PyJoin(cachedir.string(), "brine-web.prom"));
}

MasterConfig Apply(const Layer& merged, const fs::path& config_dir, const fs::path& master_path,
                   std::vector<fs::path> files_read) {
  const Typer t(merged, master_path);
  MasterConfig c;
  c.config_dir = config_dir;
  c.raw = merged.values;
  c.files_read = std::move(files_read);

  // `brine:` with every setting under it commented out is null, i.e. none.
  Found brine_map = t.Salt("brine");
  if (brine_map.value != nullptr && !brine_map.value->is_map() && !brine_map.value->is_null()) {
    Typer::Fail(brine_map, "a mapping of brine settings");
  }

  const std::string root_dir = Typer::Path(t.Salt("root_dir")).value_or("/");
  c.root_dir = internal::AbsPath(root_dir);
  c.id = MasterId(t, root_dir);
  c.user = Typer::Text(t.Salt("user"), "a user name").value_or("root");

  std::string cachedir = Typer::Path(t.Salt("cachedir")).value_or("/var/cache/salt/master");
  std::string sock_dir = Typer::Path(t.Salt("sock_dir")).value_or("/var/run/salt/master");
  // SALT quirk kept (apply_master_config): a sock_dir more than 10 characters
  // longer than cachedir is replaced, before root_dir is applied, because unix
  // socket paths are short. brine must look where Salt put the sockets.
  if (CodePoints(sock_dir) > CodePoints(cachedir) + 10) sock_dir = PyJoin(cachedir, ".salt-unix");
  c.cachedir = internal::PrependRootDir(root_dir, cachedir);
  c.sock_dir = internal::PrependRootDir(root_dir, sock_dir);

  constexpr std::array<std::string_view, 2> kIpcModes = {"ipc", "tcp"};
  if (std::optional<std::string> mode =
          Typer::Choice(t.Salt("ipc_mode"), kIpcModes, "'ipc' or 'tcp'")) {
    c.ipc_mode = *mode == "tcp" ? MasterConfig::IpcMode::kTcp : MasterConfig::IpcMode::kIpc;
  }

  // salt.utils.job.get_keep_jobs_seconds: the old hours key only counts while
  // the seconds key is at its default.
  Found keep_jobs_found = t.Salt("keep_jobs");
  const std::int64_t keep_jobs_seconds =
      Typer::NonNegative(t.Salt("keep_jobs_seconds")).value_or(86400);
  const std::int64_t keep_jobs_hours =
      Typer::NonNegative(keep_jobs_found, kInt64Max / 3600).value_or(24);
  if (keep_jobs_seconds == 86400 && keep_jobs_hours != 24) {
    c.keep_jobs_seconds = keep_jobs_hours * 3600;
    c.warnings.push_back(keep_jobs_found.file.string() +
                         ": keep_jobs: deprecated since Salt 3006, use keep_jobs_seconds; using " +
                         std::to_string(keep_jobs_hours) +
                         " hours = " + std::to_string(c.keep_jobs_seconds) + " seconds");
  } else {
    c.keep_jobs_seconds = keep_jobs_seconds;
  }

  c.loop_interval_s =
      static_cast<int>(Typer::Positive(t.Salt("loop_interval"), INT_MAX).value_or(60));
  c.job_cache = Typer::Bool(t.Salt("job_cache")).value_or(true);
  c.runner_returns = Typer::Bool(t.Salt("runner_returns")).value_or(true);
  c.job_cache_store_endtime = Typer::Bool(t.Salt("job_cache_store_endtime")).value_or(false);
  c.unique_jid = Typer::Bool(t.Salt("unique_jid")).value_or(false);
  c.event_return_whitelist =
      Typer::StringList(t.Salt("event_return_whitelist")).value_or(std::vector<std::string>{});
  c.event_return_blacklist =
      Typer::StringList(t.Salt("event_return_blacklist")).value_or(std::vector<std::string>{});
  c.log_level = Typer::LogLevel(t.Salt("log_level")).value_or("warning");
  c.timeout_s = static_cast<int>(Typer::Positive(t.Salt("timeout"), INT_MAX).value_or(5));
  c.presence_events = Typer::Bool(t.Salt("presence_events")).value_or(false);
  c.master_job_cache = Typer::Text(t.Salt("master_job_cache"), "a returner name").value_or("local_cache");

  MasterConfig::Brine& b = c.brine;
  // A path with root_dir applied, or a PostgreSQL URI (libpq's syntax) as it
  // is. The rule that a URI holds no password is the store's, which parses it
  // as libpq does (store.h, CheckServerDatabase) and applies it at every
  // connection: config/ does not read URIs.
  auto database_of = [&](const Found& key) -> std::optional<std::string> {
    std::optional<std::string> database = Typer::Path(key);
    if (!database || !IsServerDatabaseUri(*database)) {
      return database ? std::optional(internal::PrependRootDir(root_dir, *database)) : std::nullopt;
    }
    return database;
  };
  b.database = database_of(t.Brine("database")).value_or(PyJoin(c.cachedir.string(), "brine.sqlite"));
  if (auto read = database_of(t.Brine("read_database"))) b.read_database = *read;
  std::optional<std::string> brine_sock_dir = Typer::Path(t.Brine("sock_dir"));
  b.sock_dir =
      brine_sock_dir ? fs::path(internal::PrependRootDir(root_dir, *brine_sock_dir)) : c.sock_dir;
  b.log_file = internal::PrependRootDir(
      root_dir, Typer::Path(t.Brine("log_file")).value_or("/var/log/salt/brine-master"));
  std::optional<std::string> cache_key_file = Typer::Path(t.Brine("cache_key_file"));
  b.cache_key_file = cache_key_file ? fs::path(internal::PrependRootDir(root_dir, *cache_key_file))
                                    : b.sock_dir / "brine_cache.key";

  // The bus ports default to Salt's own (spec 9.1), as brine.sock_dir does.
  Found salt_pull = t.Salt("tcp_master_pull_port");
  Found salt_pub = t.Salt("tcp_master_pub_port");
  Found pull = t.Brine("tcp_pull_port");
  Found pub = t.Brine("tcp_pub_port");
  b.tcp_pull_port = Typer::Port(pull).value_or(Typer::Port(salt_pull).value_or(4513));
  b.tcp_pub_port = Typer::Port(pub).value_or(Typer::Port(salt_pub).value_or(4512));
  c.tcp_master_pull_port = Typer::Port(salt_pull).value_or(4513);
  c.tcp_master_pub_port = Typer::Port(salt_pub).value_or(4512);
  constexpr std::array<std::string_view, 3> kBusModes = {"attach", "bind", "none"};
  if (std::optional<std::string> bus = Typer::Choice(t.Brine("bus"), kBusModes, "'attach', 'bind' or 'none'")) {
    b.bus = *bus == "bind"   ? MasterConfig::BusMode::kBind
            : *bus == "none" ? MasterConfig::BusMode::kNone
                             : MasterConfig::BusMode::kAttach;
  }
  constexpr std::array<std::string_view, 2> kBusFramings = {"plain", "prefixed"};
  if (std::optional<std::string> framing =
          Typer::Choice(t.Brine("bus_framing"), kBusFramings, "'plain' or 'prefixed'")) {
    b.bus_framing = *framing == "prefixed" ? MasterConfig::BusFraming::kPrefixed : MasterConfig::BusFraming::kPlain;
  }
  if (b.tcp_pub_port == b.tcp_pull_port) {
    const Found& culprit = pub.value != nullptr ? pub : pull.value != nullptr ? pull : salt_pub;
    Typer::Fail(culprit, "a port other than the pull port " + std::to_string(b.tcp_pull_port));
  }
  Found cache_port = t.Brine("tcp_cache_port");
  b.tcp_cache_port = Typer::Port(cache_port).value_or(b.tcp_cache_port);
  if (b.tcp_cache_port == b.tcp_pull_port || b.tcp_cache_port == b.tcp_pub_port) {
    Typer::Fail(cache_port.value != nullptr ? cache_port : pull,
                "a port other than the bus ports " + std::to_string(b.tcp_pull_port) + " and " +
                    std::to_string(b.tcp_pub_port));
  }
  // Never a port a Salt master binds (in ipc_mode tcp it binds them all): the
  // plug-in would talk to Salt, and brine-master could never listen.
  for (const auto& [key, salt_default] : kSaltPorts) {
    const Found salt = t.Salt(std::string(key));
    int port = salt_default;
    // Salt's own keys are Salt's to check: an integer (or digits) counts.
    if (salt.value != nullptr && salt.value->is_int() && salt.value->kind() == Value::Kind::kInt &&
        salt.value->as_int() >= 1 && salt.value->as_int() <= 65535) {
      port = static_cast<int>(salt.value->as_int());
    } else if (salt.value != nullptr && salt.value->is_string() && !salt.value->as_string().empty() &&
               salt.value->as_string().size() <= 5 &&
               salt.value->as_string().find_first_not_of("0123456789") == std::string::npos) {
      port = std::stoi(salt.value->as_string());
    }
    if (b.tcp_cache_port != port) continue;
    const std::string where = cache_port.value != nullptr ? cache_port.file.string() + ": brine.tcp_cache_port"
                                                           : "brine.tcp_cache_port (default)";
    throw ConfigError(where + ": " + std::to_string(port) + " is the Salt master's " + std::string(key) +
                      (salt.value != nullptr ? " (set in " + salt.file.string() + ")" : " (Salt's default)") +
                      ", which a Salt master binds; brine's acknowledged job-cache socket needs a port of its own "
                      "(the default is " + std::to_string(MasterConfig::Brine{}.tcp_cache_port) + ")");
  }

  b.log_level = Typer::LogLevel(t.Brine("log_level")).value_or(c.log_level);
  b.batch_max_events = Typer::Positive(t.Brine("batch_max_events")).value_or(b.batch_max_events);
  b.flush_interval_ms = Typer::Positive(t.Brine("flush_interval_ms")).value_or(b.flush_interval_ms);
  constexpr std::array<std::string_view, 2> kSyncModes = {"normal", "full"};
  if (std::optional<std::string> sync =
          Typer::Choice(t.Brine("sync"), kSyncModes, "'normal' or 'full'")) {
    b.sync =
        *sync == "full" ? MasterConfig::Brine::Sync::kFull : MasterConfig::Brine::Sync::kNormal;
  }
  b.max_frame_bytes = Typer::Positive(t.Brine("max_frame_bytes")).value_or(b.max_frame_bytes);
  // Consumers multiply by 2^20; keep the product in range.
  b.max_queue_mb =
      Typer::Positive(t.Brine("max_queue_mb"), kInt64Max >> 20).value_or(b.max_queue_mb);
  b.keep_events_seconds =
      Typer::NonNegative(t.Brine("keep_events_seconds")).value_or(c.keep_jobs_seconds);
  b.active_window_s = Typer::Positive(t.Brine("active_window_s")).value_or(b.active_window_s);
  // Salt fires presence events every loop_interval: a window of two of them
  // sees the newest whatever the interval. At most 100 years, so it fits
  // int64 microseconds.
  b.presence_window_s = Typer::Positive(t.Brine("presence_window_s"), kMaxClockSkewS)
                            .value_or(std::max<std::int64_t>(300, 2 * static_cast<std::int64_t>(c.loop_interval_s)));
  // At most a day: brine-master's timeouts are multiples of it in nanoseconds.
  b.send_timeout_ms = Typer::Positive(t.Brine("send_timeout_ms"), 86400000).value_or(b.send_timeout_ms);
  std::optional<std::string> metrics_file = Typer::Path(t.Brine("metrics_file"));
  b.metrics_file = metrics_file ? fs::path(internal::PrependRootDir(root_dir, *metrics_file))
                                : fs::path(PyJoin(c.cachedir.string(), "brine-master.prom"));
  b.lag_warning_s = Typer::Positive(t.Brine("lag_warning_s")).value_or(b.lag_warning_s);
  // At most about 100 years: now + the skew must fit in int64 microseconds.
  b.max_clock_skew_s = Typer::Positive(t.Brine("max_clock_skew_s"), kMaxClockSkewS).value_or(b.max_clock_skew_s);
  b.keep_jobs_by_fun = Typer::GlobSeconds(t.Brine("keep_jobs_by_fun")).value_or(MasterConfig::GlobSeconds{});
  b.keep_events_by_tag = Typer::GlobSeconds(t.Brine("keep_events_by_tag")).value_or(MasterConfig::GlobSeconds{});
  b.max_store_mb = Typer::NonNegative(t.Brine("max_store_mb"), kInt64Max >> 20).value_or(0);
  b.overflow_mb = Typer::NonNegative(t.Brine("overflow_mb"), kInt64Max >> 20).value_or(b.overflow_mb);
  // Beside the store when it is a file (a folder brine-master already makes
  // and checks); a server database has none here, so Salt's cachedir.
  std::optional<std::string> overflow_dir = Typer::Path(t.Brine("overflow_dir"));
  b.overflow_dir = overflow_dir ? fs::path(internal::PrependRootDir(root_dir, *overflow_dir))
                   : IsServerDatabaseUri(b.database.native()) ? c.cachedir
                                                         : b.database.parent_path();

  ReadWebKeys(t, root_dir, b);
  ReadWebLiveKeys(t, root_dir, c.cachedir, b);
  t.WarnUnknownBrineKeys(c.warnings);
  return c;
}

// salt.config.master_config.
MasterConfig Load(const fs::path& config_dir, const std::string_view* master_text) {
  std::vector<fs::path> files_read;
  Loader loader(files_read);
  const fs::path master_path = config_dir / "master";
  Layer overrides;
  if (master_text != nullptr) {
    overrides = ParseConfig(*master_text, master_path);
  } else {
    std::error_code ec;
    fs::file_status status = fs::status(master_path, ec);
    if (status.type() != fs::file_type::not_found) {
      if (ec) throw ConfigError(master_path.string() + ": cannot read: " + ec.message());
      overrides = loader.LoadFile(master_path);
    }
  }
  const Value* default_include = overrides.values.Find("default_include");
  const Value* include = overrides.values.Find("include");
  // Both are read from the master file before either set is merged in.
  const Value default_include_value =
      default_include != nullptr ? *default_include : Value(kDefaultInclude);
  const Value include_value = include != nullptr ? *include : Value::EmptyList();
  Layer defaults_set = loader.Include(default_include_value, master_path, "default_include", 0);
  UpdateLayer(overrides, defaults_set);
  Layer include_set = loader.Include(include_value, master_path, "include", 0);
  UpdateLayer(overrides, include_set);
  return Apply(overrides, config_dir, master_path, std::move(files_read));
}

}  // namespace

MasterConfig LoadMasterConfig(const std::filesystem::path& config_dir) {
  return Load(config_dir, nullptr);
}

MasterConfig LoadMasterConfigFromText(std::string_view master_text,
                                      const std::filesystem::path& config_dir) {
  return Load(config_dir, &master_text);
}

}  // namespace brine::config
