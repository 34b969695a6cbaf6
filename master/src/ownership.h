// What brine-master creates before it drops root, and what it refuses to
// touch. Started as root, it creates the folders it needs (the store's, the
// log's, brine.sock_dir) and hands to the config's `user` only the folders it
// created itself; every file (log, store, WAL/SHM, sockets, lock) is then
// created after the switch to that user, so a symlink or hard link planted by
// that user can never make root open, create or chown a file elsewhere.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace brine::master {

// Creates the missing folders of `dir` one level at a time, 0700, and, when
// running as root, gives each folder it created (and only those) to uid:gid
// through its open descriptor. A folder it creates is reopened with
// O_NOFOLLOW, so a symlink swapped in meanwhile is refused. Existing folders
// (and symlinks among the existing components, like /var/run) are used as
// they are, never chowned or chmodded. Throws std::runtime_error naming the
// folder when one cannot be created or opened.
void CreateOwnedDirs(const std::filesystem::path& dir, uid_t uid, gid_t gid);

// For use after the switch to the service user: nullopt when this process can
// create files in `dir`; else a message naming the folder, `what` (e.g.
// "brine.database's folder") and `user`.
[[nodiscard]] std::optional<std::string> CheckWritableDir(const std::filesystem::path& dir, const std::string& what,
                                                          const std::string& user);

}  // namespace brine::master
