#include "file_sink.h"

#include "brine/core/json.h"

namespace brine::sim {

FileSink::FileSink(std::filesystem::path path, DryRunFormat format)
    : path_(std::move(path)), tmp_(path_.string() + ".tmp"), format_(format) {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw SinkError("cannot create " + tmp_.string());
}

FileSink::~FileSink() {
  if (!closed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

void FileSink::Send(std::string_view frame, const SimEvent& event) {
  if (format_ == DryRunFormat::kFrames) {
    const auto n = static_cast<std::uint32_t>(frame.size());
    const char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                         static_cast<char>(n)};
    out_.write(len, 4);
    out_.write(frame.data(), static_cast<std::streamsize>(frame.size()));
  } else {
    const Value line = Value::Map({{"tag", event.tag}, {"data", event.data}});
    std::string text;
    WriteJson(line, JsonStyle::Python(-1), text);
    text += '\n';
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  if (!out_) throw SinkError("writing " + tmp_.string() + " failed");
}

void FileSink::Close() {
  closed_ = true;
  out_.close();
  if (!out_) throw SinkError("writing " + tmp_.string() + " failed");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw SinkError("cannot rename " + tmp_.string() + " to " + path_.string() + ": " + ec.message());
}

}  // namespace brine::sim
