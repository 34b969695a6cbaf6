// --dry-run: the frames go to a file instead of a bus, written to FILE.tmp and
// renamed onto FILE when closed, so FILE is never half written.
//
//   jsonl   one line per event: {"tag": <tag>, "data": <data>} in Python's
//           json.dumps form (the layout of tests/fixtures/*.jsonl)
//   frames  each frame as sent: a 4-byte big-endian length, then the bytes
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "sink.h"

namespace brine::sim {

enum class DryRunFormat { kJsonl, kFrames };

class FileSink final : public Sink {
 public:
  // Throws SinkError when FILE.tmp cannot be created.
  FileSink(std::filesystem::path path, DryRunFormat format);
  ~FileSink() override;

  void Send(std::string_view frame, const SimEvent& event) override;
  // Flushes and renames FILE.tmp onto FILE; throws SinkError on an I/O error.
  void Close() override;
  [[nodiscard]] std::string Describe() const override { return path_.string(); }

 private:
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  DryRunFormat format_;
  std::ofstream out_;
  bool closed_ = false;
};

}  // namespace brine::sim
