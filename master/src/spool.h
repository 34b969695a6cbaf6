// The Salt returner plug-in's spool: frames it could not hand to brine-master
// within brine.send_timeout_ms, kept on disk until brine-master takes them.
//
// Location: <cachedir>/brine-spool/<pid>.frames, one file per Salt process
// (contrib/salt/returners/brine.py writes them; docs/salt.md).
//
// File grammar (all integers big-endian):
//   file    = *record
//   record  = magic length payload crc
//   magic   = "BRS1"                 4 bytes
//   length  = uint32                 bytes in payload
//   payload = length bytes           one frame, exactly as it would have been
//                                    sent: tag "\n\n" msgpack(data)
//   crc     = uint32                 CRC-32 (zlib's) of payload
// A writer appends whole records under flock(LOCK_EX) and fsyncs before
// unlocking. A writer killed mid-append leaves a torn last record; a later
// writer with the same pid may append after it. So a reader that meets bytes
// that are not a valid record keeps them aside as damage and resynchronises on
// the next magic: the complete records before and after are all read.
//
// The folder (docs/salt.md): <cachedir>/brine-spool, a real directory (never
// a symlink) of mode 0700 owned by the Salt master's `user` (root spools there
// too, for `user`). The plug-in opens it O_DIRECTORY | O_NOFOLLOW relative to
// the cachedir, checks owner and mode on the descriptor, and opens its file
// relative to that descriptor (O_NOFOLLOW; a new one O_CREAT | O_EXCL); the
// file must be a regular file of `user` with one link and mode 0600. Root
// hands the folder or a file to `user` only when it has just created it, by
// fchown on its own descriptor, and creates the folder only in a cachedir
// `user` owns. Anything else is refused and logged critical:
// whoever controls the cachedir cannot make root create or chown a file
// anywhere else. brine-master opens the folder the same way, requires it to
// be its own, and takes only its own regular files.
//
// Taking a file (brine-master, between batches): rename <pid>.frames to
// <pid>.frames.taken, flock it (waiting out an append in progress), then file
// it in batches (SpoolReader), then unlink it. A writer that opened the old
// name before the rename re-checks, once it holds the lock, that its
// descriptor is still the file at <pid>.frames, and reopens when it is not; so
// a taken file no longer grows. Each batch's transaction records the offset it
// reached under the file's identity (TakenSpoolFile::key: name, device,
// inode, size, mtime) in the store's spool_progress; a `.taken` file left by a crash is
// taken again at the next pass and resumed at its committed offset, so no
// record is filed twice or lost, and a new file under an old name starts at 0.
// A name the rename cannot make (`<name>.taken` over NAME_MAX) is left where
// it is and reported; the other files are taken.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brine::master {

struct SpoolContents {
  std::vector<std::string> frames;   // complete records' payloads, in file order
  std::vector<std::string> damaged;  // byte runs that were not complete records
};

// Parses a spool file's bytes held in memory (tests, the Python plug-in's
// twin). brine-master streams files with SpoolReader instead. Never throws.
[[nodiscard]] SpoolContents ParseSpool(std::string_view bytes);

// Appends one record for `frame` to `out` (used by tests and benchmarks).
void AppendSpoolRecord(std::string& out, std::string_view frame);

// CRC-32 as zlib computes it.
[[nodiscard]] std::uint32_t Crc32(std::string_view bytes);

// How much of a damaged run or of a record over the size limit a
// SpoolReader keeps (its length and CRC-32 are reported besides).
inline constexpr std::size_t kSpoolKeepBytes = 64 * 1024;

// One thing a SpoolReader found.
struct SpoolItem {
  enum class Kind {
    kFrame,     // a complete record: `bytes` is its payload
    kDamage,    // bytes that are not a complete record: `bytes` is their first kSpoolKeepBytes
    kOversize,  // a complete record over the size limit: `bytes` is its first kSpoolKeepBytes
  };
  Kind kind = Kind::kFrame;
  std::string bytes;
  std::uint64_t length = 0;  // of the payload (kFrame, kOversize) or of the run (kDamage)
  std::uint32_t crc = 0;     // kOversize: the payload's CRC-32
  std::uint64_t end = 0;     // the file offset just past it, where a resumed read starts
};

// Reads a spool file item by item with bounded memory: a window of 1 MiB, a
// record of at most `max_record_bytes` whole, and kSpoolKeepBytes of a
// damaged run or of a bigger record (whose checksum is still verified as it
// streams past). Runs of damage are merged up to the next complete record, as
// ParseSpool does.
class SpoolReader {
 public:
  // `fd` is open for reading and outlives the reader (not owned); `size` is
  // the file's size (a taken file does not grow); `offset` is 0 or an `end`
  // a reader gave for the same file.
  SpoolReader(int fd, std::uint64_t size, std::uint64_t offset, std::size_t max_record_bytes);

  // The next item, or nullopt at the end of the file. Throws
  // std::system_error on a read error (the reader is then unusable).
  [[nodiscard]] std::optional<SpoolItem> Next();

 private:
  std::string_view Peek(std::uint64_t at, std::size_t n);
  std::optional<SpoolItem> TryRecord(std::uint64_t at);
  std::uint64_t FindMagic(std::uint64_t from);
  void ReadAt(std::uint64_t at, std::size_t n, std::string& out);

  int fd_;
  std::uint64_t size_;
  std::uint64_t pos_;
  std::size_t max_record_bytes_;
  std::string window_;           // file bytes [window_at_, window_at_ + window_.size())
  std::uint64_t window_at_ = 0;
  std::string big_;              // a record larger than the window
  std::optional<SpoolItem> pending_;  // a record found right after a damaged run
};

// A spool file taken for reading: renamed to `.taken` and locked. Unlocks
// (closing) on destruction; Remove() unlinks it once its frames are committed.
class TakenSpoolFile {
 public:
  // Takes ownership of `fd` (open on `path`).
  TakenSpoolFile(std::filesystem::path path, int fd);
  TakenSpoolFile(TakenSpoolFile&& other) noexcept;
  TakenSpoolFile& operator=(TakenSpoolFile&&) = delete;
  TakenSpoolFile(const TakenSpoolFile&) = delete;
  ~TakenSpoolFile();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] int fd() const { return fd_; }
  // Its size when it was taken.
  [[nodiscard]] std::uint64_t size() const { return size_; }
  // Its identity, the key of its progress in the store: the name, device,
  // inode, size and modification time (ns) as text.
  [[nodiscard]] const std::string& key() const { return key_; }
  // The whole file (tests). Throws std::system_error on a read error.
  [[nodiscard]] std::string ReadAll() const;
  // Unlinks the file. Throws std::system_error when that fails.
  void Remove();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string key_;
};

// Takes every spool file in `dir`: first `.taken` files a crash left, then
// each `<name>.frames` (renamed to `<name>.frames.taken`). `dir` must be a
// real directory owned by this process's user (opened O_DIRECTORY |
// O_NOFOLLOW and checked on the descriptor); only regular files owned by that
// user are taken (opened O_NOFOLLOW | O_NONBLOCK relative to it and checked
// again on the descriptor); a FIFO, a device, a symlink or another user's file
// with such a name is left where it is. A file that cannot be renamed (a name
// too long for `.taken`) or opened is left where it is and a line saying so
// is added to `skipped`; the others are still taken. A missing `dir` is no
// files. Throws std::system_error when `dir` is not such a directory or
// cannot be listed.
[[nodiscard]] std::vector<TakenSpoolFile> TakeSpoolFiles(const std::filesystem::path& dir,
                                                         std::vector<std::string>& skipped);
// The same, dropping the lines about skipped files.
[[nodiscard]] std::vector<TakenSpoolFile> TakeSpoolFiles(const std::filesystem::path& dir);

}  // namespace brine::master
