// <cachedir>/proc/<jid>: Salt's record of a runner call in progress, which
// jobs.master lists. brine-run writes one for its long calls (state.event,
// queue.process_runner) in Salt's format (msgpack of the runner data plus
// `pid`) and removes it when the call ends.
#pragma once

#include <filesystem>
#include <string>

#include "brine/core/value.h"

namespace brine::runner {

class ProcFile {
 public:
  // Writes the file (temp file, then rename); a failure to write is not an
  // error for the call (Salt only warns), so it is silently skipped.
  ProcFile(const std::filesystem::path& cachedir, const std::string& jid, const Value& data);
  ~ProcFile();
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

 private:
  std::filesystem::path path_;
};

// The runner calls in progress: every readable <cachedir>/proc/* whose pid is
// alive and whose command line names salt or brine-run. [] when none.
[[nodiscard]] Value RunningCalls(const std::filesystem::path& cachedir);

}  // namespace brine::runner
