#include "proc_file.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "brine/wire/codec.h"

namespace brine::runner {

ProcFile::ProcFile(const std::filesystem::path& cachedir, const std::string& jid, const Value& data) {
  std::error_code ec;
  const auto dir = cachedir / "proc";
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  Value record = data;
  record.Set("pid", static_cast<long long>(::getpid()));
  const auto tmp = dir / ("." + jid + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << wire::PackMsgpack(record);
    if (!out) return;
  }
  std::filesystem::rename(tmp, dir / jid, ec);
  if (!ec) path_ = dir / jid;
}

ProcFile::~ProcFile() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

Value RunningCalls(const std::filesystem::path& cachedir) {
  Value out = Value::EmptyList();
  std::error_code ec;
  const auto dir = cachedir / "proc";
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().filename().string().front() != '.') files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto record = wire::UnpackMsgpack(ss.str());
    if (!record || !record->is_map()) continue;
    const Value* pid = record->Find("pid");
    if (pid == nullptr || pid->kind() != Value::Kind::kInt) continue;
    const auto p = static_cast<pid_t>(pid->as_int());
    if (::kill(p, 0) != 0 && errno != EPERM) continue;
    std::ifstream cmd("/proc/" + std::to_string(p) + "/cmdline", std::ios::binary);
    std::stringstream cs;
    cs << cmd.rdbuf();
    const std::string cmdline = cs.str();
    if (cmdline.find("salt") == std::string::npos && cmdline.find("brine-run") == std::string::npos) continue;
    out.as_list().push_back(std::move(*record));
  }
  return out;
}

}  // namespace brine::runner
