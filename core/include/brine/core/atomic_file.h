// A file written whole under a private temp name beside its destination, then
// renamed into place: the one way brine writes a file another account may be
// able to reach (the metrics file, brine.export, brine.backup).
//
// Why: a predictable temp name (`<file>.<pid>.tmp`) in a folder other
// accounts can write is a symlink they plant, and a write through it
// overwrites whatever it points at (issue 25, items 5, 9 and 10). Here the temp
// is created O_CREAT|O_EXCL|O_NOFOLLOW under a random name, mode 0600 until
// the caller's mode is set on the open descriptor, and the rename replaces a
// name (a link planted at the destination meanwhile is replaced, never
// followed).
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace brine {

// A file could not be created, written, synced or renamed; the message names
// the path and the system's reason.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AtomicFile {
 public:
  // Whether Commit may replace a file already at the destination.
  enum class Replace { kExisting, kNever };
  // Whether Commit fsyncs the file and the folder (kNone: the rename is still
  // atomic on a running system, but a power loss may lose the new content;
  // for a file rewritten every second whose writer must not stall on a busy disk).
  enum class Sync { kFsync, kNone };
  // Where the temp file lives. kBeside: `<folder>/.<name>.<random>.tmp`.
  // kPrivateFolder: `<folder>/.<name>.<random>/<name>`, in a folder made 0700
  // by mkdtemp, for a writer that opens the temp by name and puts files of its
  // own beside it (SQLite's `-journal`, `-wal`): nobody else can plant those.
  enum class Staging { kBeside, kPrivateFolder };
  struct Options {
    unsigned mode = 0600;  // the file's mode, exactly (the umask does not apply)
    Replace replace = Replace::kExisting;
    Sync sync = Sync::kFsync;
    Staging staging = Staging::kBeside;
  };

  // Creates the temp file for `destination`. Throws FileError when the
  // destination is a symlink (dangling or not), when it exists and
  // options.replace is kNever ("<path> exists"), or when the temp cannot be
  // created (the folder is missing or not writable).
  AtomicFile(std::filesystem::path destination, Options options);
  // Removes the temp file (and its private folder) unless committed; never throws.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The temp file's path, for a writer that must open it by name.
  [[nodiscard]] const std::filesystem::path& temp_path() const { return temp_; }
  [[nodiscard]] const std::filesystem::path& destination() const { return destination_; }

  // Appends bytes (buffered). Throws FileError on a failed write.
  void Write(std::string_view bytes);

  // Writes what is buffered, fsyncs (Sync::kFsync), and renames the temp onto
  // the destination (with Replace::kNever, only if the destination is still
  // free), then fsyncs the folder. Throws FileError, and the temp is removed.
  void Commit();

 private:
  void Flush();
  void Discard() noexcept;

  std::filesystem::path destination_;
  Options options_;
  std::filesystem::path private_dir_;  // empty for Staging::kBeside
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
  std::string buffer_;
};

}  // namespace brine
