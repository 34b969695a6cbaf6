// One writer per SQLite store. Two brine-masters on one brine.database would
// interleave their batches, collide on event ids and stall each other on the
// write lock; several masters sharing a store is a job for a client-server
// backend. So brine-master holds an exclusive flock on "<database>.lock" for
// its whole life, and a second one is refused at start naming the holder.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace brine::master {

// Thrown when another live process holds the store; brine-master exits 2.
class StoreHeld : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreLock {
 public:
  // Opens (creating 0600, never through a symlink, only a regular file)
  // "<database>.lock", takes an exclusive non-blocking flock and writes
  // "pid <pid> id <master_id>\n" into it. Throws StoreHeld naming the lock
  // file and what the holder wrote when another process holds it, and
  // std::runtime_error when the file cannot be opened. The kernel drops the
  // lock when the process dies (kill -9 included), so a stale file never
  // blocks a restart.
  StoreLock(const std::filesystem::path& database, const std::string& master_id);
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  ~StoreLock();

  [[nodiscard]] static std::filesystem::path PathFor(const std::filesystem::path& database);

 private:
  int fd_ = -1;
};

}  // namespace brine::master
