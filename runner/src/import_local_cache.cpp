#include "import_local_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "brine/wire/codec.h"

namespace brine::runner {
namespace {

namespace fs = std::filesystem;

constexpr int kJobsPerBatch = 200;
// The `jid` and `endtime` files hold one short line.
constexpr std::int64_t kMaxLineBytes = 256;

// Root runs this import (docs/day-two.md) over a tree the Salt master's
// service user owns, so every name in it may be a trap that user set: a link
// to a root-only file, a FIFO that blocks a read for ever, a link to
// /dev/zero that never ends (issue 25, item 2). So folders and files are
// opened relative to their parent's descriptor with O_NOFOLLOW, files with
// O_NONBLOCK, and only a regular file of bounded size with one link is read.

// An open descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// What an entry is, without following a link (S_IFLNK for a link), 0 when missing.
mode_t KindAt(int dirfd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return st.st_mode & S_IFMT;
}

const char* KindName(mode_t kind) {
  switch (kind) {
    case S_IFLNK: return "a symlink";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFDIR: return "a folder";
    default: return "not a regular file";
  }
}

// The folder `name` in `dirfd`, never through a link; an empty Fd with `why`.
Fd OpenFolderAt(int dirfd, const std::string& name, std::string& why) {
  const int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const mode_t kind = KindAt(dirfd, name);
    why = kind == S_IFLNK ? "a symlink, not followed" : std::string("cannot be opened: ") + std::strerror(err);
  }
  return Fd(fd);
}

// The names in an open folder (not . and ..), sorted.
std::vector<std::string> Names(int dirfd) {
  std::vector<std::string> out;
  // A descriptor of its own: fdopendir takes it, and its offset is not dirfd's.
  const int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

struct FileRead {
  enum class Status { kRead, kMissing, kRefused, kUnreadable } status = Status::kMissing;
  std::string bytes;  // kRead
  std::string why;    // kRefused, kUnreadable
};

// The bytes of the regular file `name` in `dirfd`, if it is one, has one
// link, and holds at most `cap` bytes.
FileRead ReadFileAt(int dirfd, const std::string& name, std::int64_t cap) {
  FileRead r;
  const Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.ok()) {
    const int err = errno;
    if (err == ENOENT) return r;
    const mode_t kind = KindAt(dirfd, name);
    if (err == ELOOP || kind == S_IFLNK) {
      r.status = FileRead::Status::kRefused;
      r.why = "a symlink, not followed";
    } else if (err == ENXIO || (kind != 0 && kind != S_IFREG)) {
      r.status = FileRead::Status::kRefused;
      r.why = std::string(KindName(kind)) + ", not a regular file";
    } else {
      r.status = FileRead::Status::kUnreadable;
      r.why = std::string("cannot be read: ") + std::strerror(err);
    }
    return r;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    r.status = FileRead::Status::kUnreadable;
    r.why = std::string("cannot be read: ") + std::strerror(errno);
    return r;
  }
  r.status = FileRead::Status::kRefused;
  if (!S_ISREG(st.st_mode)) {
    r.why = std::string(KindName(st.st_mode & S_IFMT)) + ", not a regular file";
    return r;
  }
  // Salt never links a cache file twice; a second link is someone else's
  // file brought in where protected_hardlinks does not stop it.
  if (st.st_nlink > 1) {
    r.why = "a file with " + std::to_string(st.st_nlink) + " hard links, not read";
    return r;
  }
  if (st.st_size > cap) {
    r.why = std::to_string(st.st_size) + " bytes, above the limit of " + std::to_string(cap);
    return r;
  }
  // The size read may have grown since fstat: never more than cap + 1 bytes.
  r.bytes.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t got = 0;
  for (;;) {
    if (got == r.bytes.size()) {
      if (static_cast<std::int64_t>(got) > cap) break;
      r.bytes.resize(std::min<std::size_t>(static_cast<std::size_t>(cap) + 1, got * 2 + 4096));
    }
    const ssize_t n = ::read(fd.get(), r.bytes.data() + got, r.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.status = FileRead::Status::kUnreadable;
      r.why = std::string("cannot be read: ") + std::strerror(errno);
      r.bytes.clear();
      return r;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (static_cast<std::int64_t>(got) > cap) {
    r.why = "grew above the limit of " + std::to_string(cap) + " bytes while read";
    r.bytes.clear();
    return r;
  }
  r.bytes.resize(got);
  r.status = FileRead::Status::kRead;
  return r;
}

// One short line of printable ASCII (a jid, an endtime), its line end dropped.
bool IsShortLine(std::string& text, bool spaces) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty() || text.size() > static_cast<std::size_t>(kMaxLineBytes)) return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return (c > ' ' && c < 0x7f) || (spaces && c == ' '); });
}

struct Import {
  Context& ctx;
  store::Store& store;
  std::int64_t max_file_bytes;  // brine.max_frame_bytes: a bigger return never came through the bus either
  Value damaged = Value::EmptyMap();
  Value skipped = Value::EmptyMap();
  long long jobs = 0, jobs_present = 0, returns = 0, returns_present = 0;

  // A file's bytes, or nullopt after recording why not (nothing for a missing file).
  std::optional<std::string> Read(int dirfd, const fs::path& p, std::int64_t cap) {
    FileRead r = ReadFileAt(dirfd, p.filename().string(), cap);
    switch (r.status) {
      case FileRead::Status::kRead: return std::move(r.bytes);
      case FileRead::Status::kMissing: break;
      case FileRead::Status::kRefused: skipped.Set(p.string(), r.why); break;
      case FileRead::Status::kUnreadable: damaged.Set(p.string(), r.why); break;
    }
    return std::nullopt;
  }

  // A msgpack file's value, or nullopt after recording why not.
  std::optional<Value> ReadPacked(int dirfd, const fs::path& p) {
    const auto bytes = Read(dirfd, p, max_file_bytes);
    if (!bytes) return std::nullopt;
    auto v = wire::UnpackMsgpack(*bytes);
    if (!v) damaged.Set(p.string(), "not one msgpack value (" + std::to_string(bytes->size()) + " bytes)");
    return v;
  }

  void Job(int dirfd, const fs::path& dir) {
    if (KindAt(dirfd, ".load.p") == 0) {
      damaged.Set((dir / ".load.p").string(), "missing");
      return;
    }
    std::optional<Value> load = ReadPacked(dirfd, dir / ".load.p");
    if (!load) return;
    if (load->is_null()) *load = Value::EmptyMap();  // Salt's get_load: None is {}
    if (!load->is_map()) {
      damaged.Set((dir / ".load.p").string(), "not a map");
      return;
    }
    std::string jid;
    if (auto text = Read(dirfd, dir / "jid", kMaxLineBytes)) {
      jid = std::move(*text);
      if (!IsShortLine(jid, false)) {
        skipped.Set((dir / "jid").string(), "not a job id (printable text of at most " +
                                                std::to_string(kMaxLineBytes) + " bytes); the job is skipped");
        return;
      }
    } else if (skipped.Find((dir / "jid").string()) != nullptr) {
      return;  // a jid file that is a link or a FIFO: the whole folder is suspect
    }
    if (jid.empty()) {
      if (const std::string* j = load->FindString("jid")) {
        jid = *j;
        if (!IsShortLine(jid, false)) {
          skipped.Set((dir / ".load.p").string(), "its jid is not a job id; the job is skipped");
          return;
        }
      }
    }
    if (jid.empty()) {
      damaged.Set((dir / "jid").string(), "no jid file and no jid in the load");
      return;
    }
    // The minion lists, merged as get_load merges them.
    std::set<std::string> minions;
    const std::vector<std::string> names = Names(dirfd);
    for (const std::string& name : names) {
      if (!(name == ".minions.p" || (name.rfind(".minions.", 0) == 0 && name.size() > 11 &&
                                     name.compare(name.size() - 2, 2, ".p") == 0))) {
        continue;
      }
      const auto list = ReadPacked(dirfd, dir / name);
      if (!list) continue;
      if (!list->is_list()) {
        damaged.Set((dir / name).string(), "not a list");
        continue;
      }
      for (const Value& m : list->as_list()) {
        if (m.is_string()) minions.insert(m.as_string());
      }
    }
    const bool present = !store.GetLoad(jid).as_map().empty();
    const bool nocache = KindAt(dirfd, "nocache") != 0;
    if (nocache) (void)store.PrepJid(store::Store::Caching::kNoCache, jid);
    store.SaveLoad(jid, *load, minions.empty() ? std::nullopt
                                               : std::optional(std::vector<std::string>(minions.begin(), minions.end())));
    if (present) {
      ++jobs_present;
    } else {
      ++jobs;
    }
    if (auto end = Read(dirfd, dir / "endtime", kMaxLineBytes)) {
      if (IsShortLine(*end, true)) {
        store.UpdateEndtime(jid, *end);
      } else if (!end->empty()) {  // an empty file is no endtime, as before
        skipped.Set((dir / "endtime").string(), "not a time (printable text of at most " +
                                                    std::to_string(kMaxLineBytes) + " bytes)");
      }
    }
    if (nocache) return;
    for (const std::string& minion : names) {
      // get_jid: entries starting with '.' are not minions; only dirs with a return.p.
      if (minion.empty() || minion[0] == '.') continue;
      const mode_t kind = KindAt(dirfd, minion);
      if (kind == S_IFLNK) {
        skipped.Set((dir / minion).string(), "a symlink, not followed");
        continue;
      }
      if (kind != S_IFDIR) continue;
      std::string why;
      const Fd minion_dir = OpenFolderAt(dirfd, minion, why);
      if (!minion_dir.ok()) {
        skipped.Set((dir / minion).string(), why);
        continue;
      }
      if (KindAt(minion_dir.get(), "return.p") == 0) continue;
      auto r = ReadPacked(minion_dir.get(), dir / minion / "return.p");
      if (!r) continue;
      // The very old format held the bare value.
      if (!r->is_map() || r->Find("return") == nullptr) *r = Value::Map({{"return", std::move(*r)}});
      Value ret = Value::Map({{"jid", jid}, {"id", minion}});
      for (auto& [k, v] : r->as_map()) ret.Set(k, std::move(v));
      if (KindAt(minion_dir.get(), "out.p") != 0) {
        if (auto out = ReadPacked(minion_dir.get(), dir / minion / "out.p")) ret.Set("out", std::move(*out));
      }
      const auto outcome = store.Returner(ret);
      if (outcome.kind == store::ReturnOutcome::Kind::kStored) {
        ++returns;
      } else {
        ++returns_present;
      }
    }
  }
};

}  // namespace

Value ImportLocalCache(Context& ctx, const std::filesystem::path& jobs_dir) {
  // The folder named is opened without following a last link too: in the
  // default <cachedir>/jobs, that name is the service user's to change.
  const Fd root(::open(jobs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.ok()) {
    struct stat st {};
    if (::lstat(jobs_dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      throw RuntimeFailure(jobs_dir.string() + ": a symlink; give the folder itself (it is not followed)");
    }
    throw RuntimeFailure(jobs_dir.string() + ": not a folder (a local_cache jobs tree)");
  }
  std::unique_ptr<store::Store> store = OpenWritableStore(ctx.config());
  const auto started = std::chrono::steady_clock::now();
  Import imp{ctx, *store, ctx.config().brine.max_frame_bytes};
  // Jid folders (<h[0:2]>, <h[2:]>) in sorted order, so a run is the same every time.
  std::vector<std::pair<std::string, std::string>> dirs;
  for (const std::string& top : Names(root.get())) {
    const mode_t kind = KindAt(root.get(), top);
    if (kind == S_IFLNK) imp.skipped.Set((jobs_dir / top).string(), "a symlink, not followed");
    if (kind != S_IFDIR) continue;
    std::string why;
    const Fd top_dir = OpenFolderAt(root.get(), top, why);
    if (!top_dir.ok()) {
      imp.skipped.Set((jobs_dir / top).string(), why);
      continue;
    }
    for (const std::string& job : Names(top_dir.get())) {
      const mode_t job_kind = KindAt(top_dir.get(), job);
      if (job_kind == S_IFLNK) imp.skipped.Set((jobs_dir / top / job).string(), "a symlink, not followed");
      if (job_kind == S_IFDIR) dirs.emplace_back(top, job);
    }
  }
  ctx.Debug("importing " + std::to_string(dirs.size()) + " job folders from " + jobs_dir.string());
  const bool tty = ::isatty(2) == 1;
  for (std::size_t i = 0; i < dirs.size(); i += kJobsPerBatch) {
    store::Batch batch = BeginBatchPatiently(*store);
    for (std::size_t j = i; j < std::min(dirs.size(), i + kJobsPerBatch); ++j) {
      const fs::path path = jobs_dir / dirs[j].first / dirs[j].second;
      try {
        // Each folder is opened again through its parent's descriptor: one
        // swapped for a link since the listing is refused here.
        std::string why;
        const Fd top_dir = OpenFolderAt(root.get(), dirs[j].first, why);
        const Fd job_dir = top_dir.ok() ? OpenFolderAt(top_dir.get(), dirs[j].second, why) : Fd();
        if (!job_dir.ok()) {
          imp.skipped.Set(top_dir.ok() ? path.string() : (jobs_dir / dirs[j].first).string(), why);
          continue;
        }
        imp.Job(job_dir.get(), path);
      } catch (const store::WriteFailedError&) {
        throw;
      } catch (const store::BusyError&) {
        throw;
      } catch (const std::exception& e) {
        imp.damaged.Set(path.string(), e.what());
      }
    }
    batch.Commit();
    if (tty) {
      ctx.Progress(std::to_string(std::min(dirs.size(), i + kJobsPerBatch)) + "/" + std::to_string(dirs.size()) +
                   " job folders, " + std::to_string(imp.returns) + " returns, " +
                   std::to_string(imp.damaged.as_map().size()) + " damaged files, " +
                   std::to_string(imp.skipped.as_map().size()) + " skipped");
    }
  }
  if (tty && !dirs.empty()) ctx.Progress("");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Value out = Value::EmptyMap();
  out.Set("jobs", imp.jobs);
  out.Set("jobs_present", imp.jobs_present);
  out.Set("returns", imp.returns);
  out.Set("returns_present", imp.returns_present);
  out.Set("damaged", std::move(imp.damaged));
  out.Set("skipped", std::move(imp.skipped));
  out.Set("seconds", std::round(seconds * 1000) / 1000);
  return out;
}

}  // namespace brine::runner
