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
// Taking a file (brine-master, between batches): rename <pid>.frames to
// <pid>.frames.taken, flock it (waiting out an append in progress), read it,
// commit its frames, then unlink it. A writer that opened the old name before
// the rename re-checks, once it holds the lock, that its descriptor is still
// the file at <pid>.frames, and reopens when it is not. A `.taken` file left by
// a crash is read again at the next pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace brine::master {

struct SpoolContents {
  std::vector<std::string> frames;   // complete records' payloads, in file order
  std::vector<std::string> damaged;  // byte runs that were not complete records
};

// Parses a spool file's bytes. Never throws.
[[nodiscard]] SpoolContents ParseSpool(std::string_view bytes);

// Appends one record for `frame` to `out` (used by tests and benchmarks).
void AppendSpoolRecord(std::string& out, std::string_view frame);

// CRC-32 as zlib computes it.
[[nodiscard]] std::uint32_t Crc32(std::string_view bytes);

// A spool file taken for reading: renamed to `.taken` and locked. Unlocks
// (closing) on destruction; Remove() unlinks it once its frames are committed.
class TakenSpoolFile {
 public:
  TakenSpoolFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  TakenSpoolFile(TakenSpoolFile&& other) noexcept;
  TakenSpoolFile& operator=(TakenSpoolFile&&) = delete;
  TakenSpoolFile(const TakenSpoolFile&) = delete;
  ~TakenSpoolFile();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // The whole file. Throws std::system_error on a read error.
  [[nodiscard]] std::string ReadAll() const;
  // Unlinks the file. Throws std::system_error when that fails.
  void Remove();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// Takes every spool file in `dir`: first `.taken` files a crash left, then
// each `<name>.frames` (renamed to `<name>.frames.taken`). Only regular files
// owned by this process's user are taken (opened O_NOFOLLOW | O_NONBLOCK and
// checked again on the descriptor); a FIFO, a device, a symlink or another
// user's file with such a name is left where it is. A missing `dir` is
// no files. Throws std::system_error when `dir` cannot be listed or a file
// cannot be renamed or opened.
[[nodiscard]] std::vector<TakenSpoolFile> TakeSpoolFiles(const std::filesystem::path& dir);

}  // namespace brine::master
