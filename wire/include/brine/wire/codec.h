// The Salt event wire codec: one event frame <-> (tag, data).
//
// Wire format (spec salt-jobs.md 9.2). Bytes, no length prefix: a frame is
// whatever one transport message carries (a ZeroMQ frame, or the `body` of a
// post-2016 IPC stream message, 9.3).
//
//   frame      = new_frame | old_frame
//   new_frame  = tag TAGEND body               ; Salt 2014.1 and later
//   old_frame  = short_tag pad body            ; ZeroMQ era (<= 2015.x), 20 + body bytes
//              | tag TAGEND body               ; ... whose tags of > 20 bytes are new style
//   TAGEND     = "\n\n"
//   tag        = 1*byte                        ; valid UTF-8, no NUL; split at the FIRST TAGEND
//   short_tag  = 1*20byte                      ; no "\n"
//   pad        = *"|"                          ; len(short_tag) + len(pad) == 20
//   body       = msgpack(map)                  ; exactly one msgpack map, nothing after it
//
// New style packs with bin types (str -> str family incl. str8 0xd9, bytes ->
// bin); old style packed without them (str -> raw: fixraw, 0xda, 0xdb).
//
// Telling the two apart. Salt's old receiver calls a frame old style when byte
// 20 is >= 0x80, which misreads a new-style frame with a short tag whenever
// byte 20 of its msgpack body is >= 0x80 (every `salt/auth` event). This codec
// uses the unambiguous rule of 9.2 instead: a frame is old style only when ALL
// of these hold:
//   - it has at least 21 bytes;
//   - its first 20 bytes contain no "\n";
//   - byte 20 is a msgpack map header (0x80-0x8f, 0xde, 0xdf);
//   - bytes 20..end decode as exactly one msgpack map with nothing left over;
//   - the first 20 bytes with trailing '|' stripped are a valid tag (UTF-8, no
//     NUL).
// Then tag = the first 20 bytes with trailing '|' stripped. Otherwise the frame
// is new style and is split at the first "\n\n". (A new-style tag of 19 bytes
// or fewer puts a "\n" inside the first 20 bytes; for longer tags byte 20 is a
// tag byte, which is a map header (0x80-0x8f) only as a UTF-8 continuation
// byte, so a valid tag's first 20 bytes then end inside a character and fail
// the last condition: the rule never misreads a valid new-style frame. The
// last condition is brine's addition to spec 9.2's first four.)
//
// Decoded data (every received byte is kept; a return is never lost for its
// content):
//   msgpack str, bin      -> string holding the bytes as-is (even invalid UTF-8;
//                            brine::ToJson writes such bytes as \udcXX)
//   int                   -> int64, or uint64 for values above INT64_MAX
//   float32, float64      -> double
//   nil, bool, array, map -> null, bool, list, map (map order kept; a key given
//                            twice keeps its first place and its last value,
//                            as msgpack-python's dict does)
//   ext 78 (Salt datetime)-> string: its payload (ASCII `20240101T12:00:00.123456`)
//   any other ext         -> map {"__ext__": <type code, int>, "data": <base64 of payload>}
//   map key, not a string -> Python's str() of it: 1 -> "1", 1.5 -> "1.5",
//                            true -> "True", nil -> "None"; bin keys are their
//                            bytes; ext keys the string above; array/map keys
//                            (unhashable or tuples in Python) their compact JSON.
// Nesting: the body map is level 1; a container at level 1001 is refused, so
// decoded data always fits brine::ParseJson's limit (kMaxJsonDepth) when stored.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "brine/core/value.h"

namespace brine::wire {

// Deepest container nesting DecodeFrame accepts (the body map counts as 1).
inline constexpr int kMaxNestingDepth = 1000;

// Salt's max_event_size trim marker (spec 9.2).
inline constexpr std::string_view kValueTrimmed = "VALUE_TRIMMED";

enum class Framing {
  kNew,  // tag "\n\n" msgpack
  kOld,  // ZeroMQ era: tags <= 20 bytes '|'-padded to 20, no "\n\n"; longer tags as kNew
};

struct DecodedEvent {
  std::string tag;  // valid UTF-8, non-empty, no NUL; old-style padding removed
  Value data;       // always a map
  Framing framing = Framing::kNew;
  // Some string value anywhere in `data` (not a key) equals kValueTrimmed: Salt
  // replaced an oversized value before sending, so the event is incomplete.
  bool trimmed = false;
};

// Why a frame could not be decoded: one line for logs and the quarantine, e.g.
// "no tag terminator", "empty tag", "tag contains NUL", "tag is not valid UTF-8",
// "data is not a map (got array)", "truncated msgpack", "trailing bytes after
// msgpack data", "msgpack nesting deeper than 1000 levels",
// "frame of N bytes exceeds max_frame_bytes M".
struct Undecodable {
  std::string reason;
};

struct DecodeOptions {
  // Frames longer than this are refused before any parsing.
  std::size_t max_frame_bytes = std::size_t{64} << 20;
  // The decoded tree may take at most floor + per_byte x the frame's bytes
  // (counted as sizeof(Value) a value, the pair a map entry, and the bytes of
  // strings and keys); past it the frame is Undecodable ("decoded data over
  // its budget"). A frame of tiny items (a 60 MB list of nils) would
  // otherwise take ~50x its size. per_byte 0: no budget.
  std::size_t decoded_bytes_floor = std::size_t{64} << 20;
  std::size_t decoded_bytes_per_byte = 16;
};

// The budget DecodeFrame gives a frame of `frame_bytes` (SIZE_MAX: none).
[[nodiscard]] std::size_t DecodedBudget(std::size_t frame_bytes, const DecodeOptions& options);

// Decodes one frame of either framing (rule above). Returns the DecodedEvent,
// or Undecodable with the reason when the frame is malformed: too long, no
// "\n\n" in a frame that is not old style, a bad tag, a body that is not exactly
// one msgpack map, truncated or over-nested msgpack. Never reads outside
// `frame`; whatever lengths the msgpack declares, allocates at most about one
// map entry per byte of `frame`, and nests at most kMaxNestingDepth calls deep.
// Throws only std::bad_alloc.
[[nodiscard]] std::variant<DecodedEvent, Undecodable> DecodeFrame(
    std::string_view frame, const DecodeOptions& options = {});

// Encodes `tag` and `data` as one frame. kNew: tag "\n\n" msgpack with the
// str family (incl. str8) for strings, as Salt 2014.1+ packs. kOld: a tag of at
// most 20 bytes is right-padded with '|' to 20 bytes and followed directly by
// the msgpack; a longer tag by "\n\n"; strings are packed as old raw (no str8),
// as Salt did before bin types. Maps keep their order; integers use the
// smallest msgpack form; floats are float64.
// Returns the frame; DecodeFrame of it gives back `tag` and `data`.
// Throws std::invalid_argument when it could not: `data` is not a map or is
// nested deeper than kMaxNestingDepth; the tag is empty, contains NUL, is not
// valid UTF-8, contains "\n\n" or ends with "\n"; a padded old-style tag
// contains "\n" or ends with '|'; a string, list or map is longer than
// 2^32 - 1 (msgpack's limit).
[[nodiscard]] std::string EncodeFrame(std::string_view tag, const Value& data, Framing framing);

// One value as plain msgpack, packed as EncodeFrame's kNew packs data (for
// files Salt keeps in msgpack, such as <cachedir>/proc/<jid>). Throws
// std::invalid_argument as EncodeFrame does for over-deep or over-long values.
[[nodiscard]] std::string PackMsgpack(const Value& value);

// Reads exactly one msgpack value from `bytes` with DecodeFrame's rules;
// nullopt when the bytes are not one well-formed value.
[[nodiscard]] std::optional<Value> UnpackMsgpack(std::string_view bytes);

}  // namespace brine::wire
