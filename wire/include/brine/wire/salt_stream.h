// A modern Salt master's event bus stream (2016.3 and later: 3006, 3007,
// 3008): the bytes on <sock_dir>/master_event_pub.ipc and _pull.ipc, a plain
// stream socket (../shared/spec/salt-modern-bus.md).
//
//   stream   = *frame                      ; back to back, no delimiter
//   frame    = plain | prefixed            ; told apart frame by frame, first byte
//   plain    = message                     ; first byte a map header 0x80-0x8f, 0xde, 0xdf
//   prefixed = length message              ; first byte < 0x80 (0x00 below 16 MiB)
//   length   = 4 bytes, big-endian, the bytes of `message`
//   message  = msgpack map of exactly the keys "head" and "body", in any
//              order, keys str or bin
//   head     = any msgpack value (an empty map on the bus), skipped
//   body     = str or bin: an event frame of codec.h (tag "\n\n" msgpack(data))
//
// The body is handed on as its bytes; codec.h's DecodeFrame reads it (ext 78
// and 79 kept as codec.h says).
//
// A message that is not such a map is "undecodable": in the prefixed form
// its length says where the next frame starts, so the decoder skips it and
// goes on; in the plain form there is no boundary to find and the decoder
// stops (the reader reconnects). A length or message over max_frame_bytes,
// or a first byte that is neither form, also stops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace brine::wire {

enum class StreamFraming { kPlain, kPrefixed };

// "plain" or "prefixed".
[[nodiscard]] std::string_view FramingName(StreamFraming framing);
// The inverse; nullopt for any other text.
[[nodiscard]] std::optional<StreamFraming> ParseFramingName(std::string_view name);

// How a writer packs the map, as the Salt versions do (the stand-in of the
// tests uses every form; event.send uses the default, Salt 3006+'s).
enum class StreamString { kStr, kBin };
enum class StreamKeyOrder { kHeadFirst, kBodyFirst };
struct StreamForm {
  StreamFraming framing = StreamFraming::kPlain;
  StreamString keys = StreamString::kStr;
  StreamString body = StreamString::kBin;
  StreamKeyOrder order = StreamKeyOrder::kHeadFirst;
};

// One frame carrying `body` (an event frame of codec.h). Throws
// std::invalid_argument when the body is over 2^32 - 6 bytes.
[[nodiscard]] std::string EncodeStreamFrame(std::string_view body, const StreamForm& form = {});

// Splits a stream read in arbitrary pieces into frames. One owner, one thread.
class StreamDecoder {
 public:
  explicit StreamDecoder(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Adds bytes read from the socket.
  void Append(std::string_view bytes);

  struct Item {
    enum class Kind {
      kBody,        // `bytes` is the body
      kUndecodable, // `bytes` is the raw message (at most max_frame_bytes); `reason`
                    // says why; the decoder goes on with the next frame
      kBroken,      // the stream cannot be followed further; `bytes` is what was
                    // buffered (at most max_frame_bytes); the caller drops the
                    // connection; the decoder must be Reset
    };
    Kind kind = Kind::kBody;
    StreamFraming framing = StreamFraming::kPlain;
    std::string bytes;
    std::string reason;
  };

  // The next whole frame, or nullopt when more bytes are needed (or after
  // kBroken, until Reset). Throws only std::bad_alloc.
  [[nodiscard]] std::optional<Item> Next();

  // Forgets everything buffered (a new connection).
  void Reset();

  // Bytes buffered and not yet returned.
  [[nodiscard]] std::size_t buffered() const { return buffer_.size() - start_; }

 private:
  // Where a plain message ends: its length once buffered, 0 while more bytes
  // are needed; sets `error` when it cannot be one msgpack value within
  // max_frame_bytes. Resumable: scan_* remember how far it got.
  std::size_t ScanPlain(std::string& error);
  void Consume(std::size_t n);

  std::size_t max_frame_bytes_;  // set once, at construction
  std::string buffer_;
  std::size_t start_ = 0;      // the first byte not yet returned
  std::size_t scan_pos_ = 0;   // the plain scan's position, relative to start_
  std::uint64_t scan_pending_ = 0;  // values still to read at scan_pos_; 0: not started
  bool broken_ = false;
};

}  // namespace brine::wire
