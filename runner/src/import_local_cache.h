// brine.import_local_cache: moving in from Salt's default job cache.
#pragma once

#include <filesystem>

#include "functions.h"

namespace brine::runner {

// Reads every job of a local_cache jobs tree (spec salt-jobs.md 4.1:
// <jobs>/<h[0:2]>/<h[2:]>/{jid, nocache, .load.p, .minions.p,
// .minions.<syndic>.p, endtime, <minion>/return.p, <minion>/out.p}, Salt's
// msgpack with its ext types, and the old bare-value return.p) into the store
// through the returner API, as the Salt master would have stored it:
// save_load with the merged minion lists, prep_jid's nocache mark, each
// return (first return wins), update_endtime. Commits every 200 jobs, so
// brine-master can go on ingesting meanwhile (both take the write lock in
// turn). Idempotent: a job already in the store with the same load, and a
// return already stored, add nothing. A file that cannot be read or decoded
// is skipped and reported, never fatal; a damaged .load.p skips its job.
// Nothing is followed or read that the tree's owner could aim elsewhere (root
// runs this over the service user's tree): a symlink (file or folder), a
// FIFO, a device, a file with a second hard link, a file above
// brine.max_frame_bytes (256 bytes for `jid` and `endtime`), and a jid that
// is not one line of printable text are skipped and listed under "skipped",
// never opened through or read whole (a jid, .load.p or folder skipped skips its job).
// Shows progress on stderr when it is a terminal. Returns {"jobs": new jobs,
// "jobs_present": jobs already there, "returns": returns stored,
// "returns_present": returns already there, "damaged": {path: why},
// "skipped": {path: why}, "seconds"}.
// Throws RuntimeFailure when `jobs_dir` is not a folder (or is a symlink) or
// the store cannot be opened for writing.
[[nodiscard]] Value ImportLocalCache(Context& ctx, const std::filesystem::path& jobs_dir);

}  // namespace brine::runner
