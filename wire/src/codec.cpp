// Salt event frames; the format and the old/new rule are in codec.h.
//
// Decoding uses the small msgpack reader below rather than msgpack::unpack:
//   - it builds brine::Value in one pass, with no msgpack::object zone in
//     between, so each string is copied once (the master decodes 60k+ events/s);
//   - every declared length is checked against the bytes actually left before
//     anything is allocated, so a map header claiming 2^32 entries in a 10-byte
//     frame fails at once; msgpack-c would preallocate from the header unless
//     an unpack_limit were tuned to each frame;
//   - nesting is an explicit counter passed down the recursion, which therefore
//     never goes deeper than kMaxNestingDepth frames (10,000 nested arrays stop
//     at level 1001 with a reason, not a stack overflow or an exception type);
//   - Salt's mappings (ext 78, non-string keys as Python str()) happen in the
//     same pass.
// Encoding is hand-written too: msgpack-c 4.x's packer writes a float with an
// integral value (4.0) as an int, which would turn Salt's floats into ints;
// the tests pin the bytes against the spec and msgpack-python's output.
#include "brine/wire/codec.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/utf8.h"

namespace brine::wire {
namespace {

constexpr std::size_t kOldTagBytes = 20;
constexpr std::string_view kTagEnd = "\n\n";
constexpr std::int8_t kSaltDatetimeExt = 78;  // salt.utils.msgpack packs datetime this way

constexpr const char* kTruncated = "truncated msgpack";
constexpr const char* kTooDeep = "msgpack nesting deeper than 1000 levels";
constexpr const char* kOverBudget = "decoded data over its budget (DecodeOptions)";
constexpr const char* kKeysTooLong = "map keys that are lists or maps are too long as text";
static_assert(kMaxNestingDepth == 1000, "keep kTooDeep in step");

bool IsMapHeader(std::uint8_t b) { return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf; }

// The dispatch tables below keep one msgpack case per line.
// clang-format off
// The msgpack family a first byte starts, for "data is not a map (got ...)".
const char* TypeName(std::uint8_t b) {
  if (b <= 0x7f || b >= 0xe0) return "int";
  if (b <= 0x8f) return "map";
  if (b <= 0x9f) return "array";
  if (b <= 0xbf) return "str";
  switch (b) {
    case 0xc0: return "nil";
    case 0xc1: return "never-used byte 0xc1";
    case 0xc2: case 0xc3: return "bool";
    case 0xc4: case 0xc5: case 0xc6: return "bin";
    case 0xca: case 0xcb: return "float";
    case 0xd9: case 0xda: case 0xdb: return "str";
    case 0xdc: case 0xdd: return "array";
    case 0xde: case 0xdf: return "map";
    default: break;
  }
  if (b >= 0xcc && b <= 0xd3) return "int";
  return "ext";  // 0xc7-0xc9, 0xd4-0xd8
}

// Bytes of the length field after a str/bin header byte (0 for fixstr, whose
// length is in the byte itself), or -1 when `b` starts no str or bin.
int StringLengthBytes(std::uint8_t b) {
  if (b >= 0xa0 && b <= 0xbf) return 0;
  switch (b) {
    case 0xc4: case 0xd9: return 1;
    case 0xc5: case 0xda: return 2;
    case 0xc6: case 0xdb: return 4;
    default: return -1;
  }
}
// clang-format on

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]));
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[n >> 18];
    out += kAlphabet[n >> 12 & 63];
    out += kAlphabet[n >> 6 & 63];
    out += kAlphabet[n & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    const std::uint32_t n = byte(i) << 16 | (left == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[n >> 18];
    out += kAlphabet[n >> 12 & 63];
    out += left == 2 ? kAlphabet[n >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

// Reads msgpack from a byte range into Values. Stops at the first problem and
// keeps its reason; what it had built so far is dropped.
class Reader {
 public:
  // `bytes` must outlive the Reader.
  explicit Reader(std::string_view bytes, std::size_t decoded_budget = SIZE_MAX)
      : p_(reinterpret_cast<const std::uint8_t*>(bytes.data())),
        end_(p_ + bytes.size()),
        reserve_budget_(bytes.size()),
        container_key_budget_(8 * bytes.size() + 1024),
        decoded_budget_(decoded_budget) {}

  // Reads all the bytes as exactly one value (at nesting level 1).
  bool ReadAll(Value& out) {
    if (!Read(out, 1)) return false;
    if (p_ != end_) return Fail("trailing bytes after msgpack data");
    return true;
  }

  [[nodiscard]] const char* error() const { return error_; }
  [[nodiscard]] bool trimmed() const { return trimmed_; }

 private:
  std::size_t Remaining() const { return static_cast<std::size_t>(end_ - p_); }

  bool Fail(const char* reason) {
    error_ = reason;
    return false;
  }

  bool Need(std::size_t n) { return n <= Remaining() || Fail(kTruncated); }

  // A big-endian unsigned of `n` bytes; the caller has checked Need(n).
  std::uint64_t BigEndian(int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | *p_++;
    return v;
  }

  // How many elements a container may reserve up front. A declared count is
  // only checked against the bytes left, and each container on the current
  // path could declare that many, so reservations share one budget of one
  // element per input byte: memory stays proportional to the frame, and honest
  // data (which needs a byte per element anyway) still gets exact reserves.
  std::size_t Reservation(std::size_t count) {
    const std::size_t n = std::min(count, reserve_budget_);
    reserve_budget_ -= n;
    return n;
  }

  // Counts `n` bytes of decoded tree against the budget (DecodeOptions).
  bool Charge(std::size_t n) {
    if (n > decoded_budget_) return Fail(kOverBudget);
    decoded_budget_ -= n;
    return true;
  }

  bool Read(Value& out, int depth) {
    if (!Need(1) || !Charge(sizeof(Value))) return false;
    const std::uint8_t b = *p_++;
    if (b <= 0x7f) return Set(out, Value(static_cast<std::int64_t>(b)));
    if (b >= 0xe0) return Set(out, Value(static_cast<std::int64_t>(static_cast<std::int8_t>(b))));
    if (b <= 0x8f) return ReadMap(b & 0x0fu, out, depth);
    if (b <= 0x9f) return ReadList(b & 0x0fu, out, depth);
    if (b <= 0xbf) return ReadString(b & 0x1fu, out);
    // clang-format off
    switch (b) {
      case 0xc0: return Set(out, Value());
      case 0xc1: return Fail("invalid msgpack byte 0xc1");
      case 0xc2: return Set(out, Value(false));
      case 0xc3: return Set(out, Value(true));
      // bin and str alike become bytes in a string (see codec.h).
      case 0xc4: case 0xd9: return Need(1) && ReadString(BigEndian(1), out);
      case 0xc5: case 0xda: return Need(2) && ReadString(BigEndian(2), out);
      case 0xc6: case 0xdb: return Need(4) && ReadString(BigEndian(4), out);
      case 0xc7: return Need(1) && ReadExt(BigEndian(1), out, depth);
      case 0xc8: return Need(2) && ReadExt(BigEndian(2), out, depth);
      case 0xc9: return Need(4) && ReadExt(BigEndian(4), out, depth);
      case 0xca:
        return Need(4) &&
               Set(out, Value(static_cast<double>(
                            std::bit_cast<float>(static_cast<std::uint32_t>(BigEndian(4))))));
      case 0xcb: return Need(8) && Set(out, Value(std::bit_cast<double>(BigEndian(8))));
      case 0xcc: return Need(1) && Set(out, Value(static_cast<std::int64_t>(BigEndian(1))));
      case 0xcd: return Need(2) && Set(out, Value(static_cast<std::int64_t>(BigEndian(2))));
      case 0xce: return Need(4) && Set(out, Value(static_cast<std::int64_t>(BigEndian(4))));
      // Value keeps uint64 only above INT64_MAX; smaller ones become int64.
      case 0xcf: return Need(8) && Set(out, Value(BigEndian(8)));
      case 0xd0:
        return Need(1) && Set(out, Value(static_cast<std::int64_t>(
                                       static_cast<std::int8_t>(BigEndian(1)))));
      case 0xd1:
        return Need(2) && Set(out, Value(static_cast<std::int64_t>(
                                       static_cast<std::int16_t>(BigEndian(2)))));
      case 0xd2:
        return Need(4) && Set(out, Value(static_cast<std::int64_t>(
                                       static_cast<std::int32_t>(BigEndian(4)))));
      case 0xd3: return Need(8) && Set(out, Value(static_cast<std::int64_t>(BigEndian(8))));
      case 0xd4: return ReadExt(1, out, depth);
      case 0xd5: return ReadExt(2, out, depth);
      case 0xd6: return ReadExt(4, out, depth);
      case 0xd7: return ReadExt(8, out, depth);
      case 0xd8: return ReadExt(16, out, depth);
      case 0xdc: return Need(2) && ReadList(BigEndian(2), out, depth);
      case 0xdd: return Need(4) && ReadList(BigEndian(4), out, depth);
      case 0xde: return Need(2) && ReadMap(BigEndian(2), out, depth);
      case 0xdf: return Need(4) && ReadMap(BigEndian(4), out, depth);
      default: break;
    }
    // clang-format on
    return Fail("invalid msgpack byte");  // unreachable: every byte is handled above
  }

  static bool Set(Value& out, Value v) {
    out = std::move(v);
    return true;
  }

  bool ReadString(std::size_t size, Value& out) {
    if (!Need(size) || !Charge(size)) return false;
    const std::string_view bytes(reinterpret_cast<const char*>(p_), size);
    p_ += size;
    if (bytes == kValueTrimmed) trimmed_ = true;
    out = Value(bytes);
    return true;
  }

  bool ReadExt(std::size_t size, Value& out, int depth) {
    if (!Need(size + 1)) return false;
    const auto type = static_cast<std::int8_t>(*p_++);
    const std::string_view payload(reinterpret_cast<const char*>(p_), size);
    p_ += size;
    if (type == kSaltDatetimeExt) {
      out = Value(payload);
      return true;
    }
    // The stand-in map is a container like any other for the depth limit.
    if (depth > kMaxNestingDepth) return Fail(kTooDeep);
    ValueMap map;
    map.reserve(2);
    map.emplace_back("__ext__", Value(static_cast<std::int64_t>(type)));
    map.emplace_back("data", Value(Base64(payload)));
    out = Value(std::move(map));
    return true;
  }

  bool ReadList(std::size_t count, Value& out, int depth) {
    if (depth > kMaxNestingDepth) return Fail(kTooDeep);
    if (count > Remaining()) return Fail(kTruncated);  // an element takes at least a byte
    ValueList list;
    list.reserve(Reservation(count));
    for (std::size_t i = 0; i < count; ++i) {
      if (!Read(list.emplace_back(), depth + 1)) return false;
    }
    out = Value(std::move(list));
    return true;
  }

  bool ReadMap(std::size_t count, Value& out, int depth) {
    if (depth > kMaxNestingDepth) return Fail(kTooDeep);
    if (count > Remaining() / 2) return Fail(kTruncated);  // an entry takes at least two bytes
    ValueMap map;
    map.reserve(Reservation(count));
    for (std::size_t i = 0; i < count; ++i) {
      if (!Charge(sizeof(ValueMap::value_type))) return false;
      auto& [key, value] = map.emplace_back();
      if (!ReadKey(key, depth + 1) || !Charge(key.size()) || !Read(value, depth + 1)) return false;
    }
    KeepLastOfEachKey(map);
    out = Value(std::move(map));
    return true;
  }

  // msgpack-python builds a dict: a key given twice keeps its first place
  // and its last value.
  static void KeepLastOfEachKey(ValueMap& map) {
    if (map.size() < 2) return;
    std::vector<bool> dropped;
    const auto drop = [&](std::size_t first, std::size_t later) {
      if (dropped.empty()) dropped.assign(map.size(), false);
      map[first].second = std::move(map[later].second);
      dropped[later] = true;
    };
    if (map.size() <= 16) {
      for (std::size_t j = 1; j < map.size(); ++j) {
        for (std::size_t i = 0; i < j; ++i) {
          if ((dropped.empty() || !dropped[i]) && map[i].first == map[j].first) {
            drop(i, j);
            break;
          }
        }
      }
    } else {
      std::unordered_map<std::string_view, std::size_t> first_of;
      first_of.reserve(map.size());
      for (std::size_t j = 0; j < map.size(); ++j) {
        const auto [it, fresh] = first_of.try_emplace(map[j].first, j);
        if (!fresh) drop(it->second, j);
      }
    }
    if (dropped.empty()) return;
    std::size_t kept = 0;
    for (std::size_t j = 0; j < map.size(); ++j) {
      if (dropped[j]) continue;
      if (kept != j) map[kept] = std::move(map[j]);
      ++kept;
    }
    map.resize(kept);
  }

  bool ReadKey(std::string& key, int depth) {
    if (!Need(1)) return false;
    const std::uint8_t b = *p_;
    const int length_bytes = StringLengthBytes(b);
    if (length_bytes < 0) return ReadOtherKey(key, depth);
    ++p_;
    if (!Need(static_cast<std::size_t>(length_bytes))) return false;
    const std::size_t size = length_bytes == 0 ? (b & 0x1fu) : BigEndian(length_bytes);
    if (!Need(size)) return false;
    key.assign(reinterpret_cast<const char*>(p_), size);
    p_ += size;
    return true;
  }

  // Python (msgpack with strict_map_key=False) keeps non-string keys as
  // ints, floats, None, ...; Salt then stores them through json.dumps, which
  // writes them as str() does. Containers cannot be JSON keys; their compact
  // JSON keeps the content.
  bool ReadOtherKey(std::string& key, int depth) {
    Value v;
    if (!Read(v, depth)) return false;
    // clang-format off
    switch (v.kind()) {
      case Value::Kind::kNull: key = "None"; break;
      case Value::Kind::kBool: key = v.as_bool() ? "True" : "False"; break;
      case Value::Kind::kInt: key = std::to_string(v.as_int()); break;
      case Value::Kind::kUint: key = std::to_string(v.as_uint()); break;
      case Value::Kind::kFloat: key = PythonFloatRepr(v.as_float()); break;
      case Value::Kind::kString: key = std::move(v.as_string()); break;  // ext 78
      case Value::Kind::kList:
      case Value::Kind::kMap: key = ToJson(v); break;
    }
    // clang-format on
    // JSON escapes the quotes of a key nested in a key, so text doubles with
    // each level: a 300-byte frame of maps keyed by maps would take gigabytes
    // and minutes (found by fuzz/fuzz_frame). Such keys share a budget of a few
    // bytes of text per input byte; Python itself cannot even hash them.
    if (v.is_list() || v.is_map()) {
      if (key.size() > container_key_budget_) return Fail(kKeysTooLong);
      container_key_budget_ -= key.size();
    }
    return true;
  }

  const std::uint8_t* p_;
  const std::uint8_t* const end_;
  std::size_t reserve_budget_;
  std::size_t container_key_budget_;  // bytes of text for list and map keys
  std::size_t decoded_budget_;        // bytes of decoded tree still allowed
  const char* error_ = kTruncated;
  bool trimmed_ = false;
};

// Why `tag` cannot be an event tag, or nullptr when it can.
const char* TagProblem(std::string_view tag) {
  if (tag.empty()) return "empty tag";
  if (tag.find('\0') != std::string_view::npos) return "tag contains NUL";
  if (!IsValidUtf8(tag)) return "tag is not valid UTF-8";
  return nullptr;
}

// The first three conditions of the old-style rule (codec.h); the fourth is
// that the bytes from kOldTagBytes on read as exactly one map.
bool MayBeOldStyle(std::string_view frame) {
  return frame.size() > kOldTagBytes &&
         frame.substr(0, kOldTagBytes).find('\n') == std::string_view::npos &&
         IsMapHeader(static_cast<std::uint8_t>(frame[kOldTagBytes]));
}

// The padded tag of an old-style frame: its first 20 bytes without the '|'s.
std::string_view OldStyleTag(std::string_view frame) {
  std::string_view tag = frame.substr(0, kOldTagBytes);
  while (!tag.empty() && tag.back() == '|') tag.remove_suffix(1);
  return tag;
}

bool IsOldStyle(std::string_view frame) {
  if (!MayBeOldStyle(frame) || TagProblem(OldStyleTag(frame)) != nullptr) return false;
  Value scratch;
  return Reader(frame.substr(kOldTagBytes)).ReadAll(scratch);
}

// Packs Values the way Salt's msgpack-python does: the smallest int form,
// float64 for every float, maps in their order.
class Encoder {
 public:
  // kNew packs strings as the str family (str8 included, use_bin_type=True);
  // kOld as old msgpack raw, which had no str8 (Salt before bin types).
  // `out` must outlive the Encoder.
  Encoder(std::string& out, Framing framing) : out_(out), framing_(framing) {}

  void Pack(const Value& v, int depth) {
    // clang-format off
    switch (v.kind()) {
      case Value::Kind::kNull: Byte(0xc0); break;
      case Value::Kind::kBool: Byte(v.as_bool() ? 0xc3 : 0xc2); break;
      case Value::Kind::kInt: PackInt(v.as_int()); break;
      case Value::Kind::kUint: PackUint(v.as_uint()); break;
      case Value::Kind::kFloat:
        Marked(0xcb, std::bit_cast<std::uint64_t>(v.as_float()), 8);
        break;
      case Value::Kind::kString: PackString(v.as_string()); break;
      case Value::Kind::kList:
        CheckDepth(depth);
        Header(v.as_list().size(), 0x90, 16, 0xdc, 0xdd);
        for (const Value& item : v.as_list()) Pack(item, depth + 1);
        break;
      case Value::Kind::kMap:
        CheckDepth(depth);
        Header(v.as_map().size(), 0x80, 16, 0xde, 0xdf);
        for (const auto& [key, value] : v.as_map()) {
          PackString(key);
          Pack(value, depth + 1);
        }
        break;
    }
    // clang-format on
  }

 private:
  static void CheckDepth(int depth) {
    if (depth > kMaxNestingDepth) {
      throw std::invalid_argument("EncodeFrame: data nested deeper than 1000 levels");
    }
  }

  void Byte(std::uint8_t b) { out_ += static_cast<char>(b); }

  // `marker` then the low `bytes` bytes of `v`, big-endian, in one append.
  void Marked(std::uint8_t marker, std::uint64_t v, int bytes) {
    char buf[9];
    buf[0] = static_cast<char>(marker);
    for (int i = 0; i < bytes; ++i) {
      buf[1 + i] = static_cast<char>(v >> ((bytes - 1 - i) * 8));
    }
    out_.append(buf, static_cast<std::size_t>(bytes) + 1);
  }

  void PackUint(std::uint64_t u) {
    if (u <= 0x7f) {
      Byte(static_cast<std::uint8_t>(u));
    } else if (u <= 0xff) {
      Marked(0xcc, u, 1);
    } else if (u <= 0xffff) {
      Marked(0xcd, u, 2);
    } else if (u <= 0xffffffff) {
      Marked(0xce, u, 4);
    } else {
      Marked(0xcf, u, 8);
    }
  }

  void PackInt(std::int64_t i) {
    if (i >= 0) return PackUint(static_cast<std::uint64_t>(i));
    const auto bits = static_cast<std::uint64_t>(i);
    if (i >= -32) {
      Byte(static_cast<std::uint8_t>(bits));
    } else if (i >= std::numeric_limits<std::int8_t>::min()) {
      Marked(0xd0, bits, 1);
    } else if (i >= std::numeric_limits<std::int16_t>::min()) {
      Marked(0xd1, bits, 2);
    } else if (i >= std::numeric_limits<std::int32_t>::min()) {
      Marked(0xd2, bits, 4);
    } else {
      Marked(0xd3, bits, 8);
    }
  }

  // A str/array/map header: the fix form below `fix_limit`, then 16- and
  // 32-bit lengths.
  void Header(std::size_t size, std::uint8_t fix, std::size_t fix_limit, std::uint8_t len16,
              std::uint8_t len32) {
    if (size < fix_limit) {
      Byte(static_cast<std::uint8_t>(fix | size));
    } else if (size <= 0xffff) {
      Marked(len16, size, 2);
    } else if (size <= 0xffffffff) {
      Marked(len32, size, 4);
    } else {
      throw std::invalid_argument("EncodeFrame: string, list or map longer than msgpack allows");
    }
  }

  void PackString(const std::string& s) {
    if (framing_ == Framing::kNew && s.size() >= 32 && s.size() <= 0xff) {
      Marked(0xd9, s.size(), 1);
    } else {
      Header(s.size(), 0xa0, 32, 0xda, 0xdb);
    }
    out_ += s;
  }

  std::string& out_;
  Framing framing_;
};

}  // namespace

std::size_t DecodedBudget(std::size_t frame_bytes, const DecodeOptions& options) {
  if (options.decoded_bytes_per_byte == 0) return SIZE_MAX;
  if (frame_bytes > (SIZE_MAX - options.decoded_bytes_floor) / options.decoded_bytes_per_byte) return SIZE_MAX;
  return options.decoded_bytes_floor + options.decoded_bytes_per_byte * frame_bytes;
}

std::variant<DecodedEvent, Undecodable> DecodeFrame(std::string_view frame,
                                                    const DecodeOptions& options) {
  if (frame.size() > options.max_frame_bytes) {
    return Undecodable{"frame of " + std::to_string(frame.size()) +
                       " bytes exceeds max_frame_bytes " + std::to_string(options.max_frame_bytes)};
  }
  DecodedEvent event;
  // Why the bytes after 20 failed as an old-style body, kept only to explain a
  // frame that turns out to have no "\n\n" either.
  const char* old_style_error = nullptr;
  const std::size_t budget = DecodedBudget(frame.size(), options);
  // A bad 20-byte tag over a good old-style body: a long new-style tag cut
  // inside a character (codec.h, the last rule), else the reason.
  const char* old_style_tag_problem = nullptr;
  if (MayBeOldStyle(frame)) {
    Reader reader(frame.substr(kOldTagBytes), budget);
    if (reader.ReadAll(event.data)) {
      const std::string_view tag = OldStyleTag(frame);
      old_style_tag_problem = TagProblem(tag);
      if (old_style_tag_problem == nullptr) {
        event.tag = tag;
        event.framing = Framing::kOld;
        event.trimmed = reader.trimmed();
        return event;
      }
    } else {
      old_style_error = reader.error();
    }
  }

  const std::size_t tag_end = frame.find(kTagEnd);
  if (tag_end == std::string_view::npos) {
    if (old_style_tag_problem != nullptr) return Undecodable{old_style_tag_problem};
    if (old_style_error != nullptr) {
      return Undecodable{std::string("no tag terminator; as an old-style frame: ") +
                         old_style_error};
    }
    return Undecodable{"no tag terminator"};
  }
  const std::string_view tag = frame.substr(0, tag_end);
  if (const char* problem = TagProblem(tag)) return Undecodable{problem};
  const std::string_view body = frame.substr(tag_end + kTagEnd.size());
  if (body.empty()) return Undecodable{"no data after the tag"};
  const auto first = static_cast<std::uint8_t>(body.front());
  // Salt refuses to send anything but a dict (9.2); checked before parsing.
  if (!IsMapHeader(first)) {
    return Undecodable{std::string("data is not a map (got ") + TypeName(first) + ")"};
  }
  Reader reader(body, budget);
  if (!reader.ReadAll(event.data)) return Undecodable{reader.error()};
  event.tag = tag;
  event.framing = Framing::kNew;
  event.trimmed = reader.trimmed();
  return event;
}

std::string EncodeFrame(std::string_view tag, const Value& data, Framing framing) {
  if (!data.is_map()) throw std::invalid_argument("EncodeFrame: data is not a map");
  if (const char* problem = TagProblem(tag)) {
    throw std::invalid_argument(std::string("EncodeFrame: ") + problem);
  }
  const bool padded = framing == Framing::kOld && tag.size() <= kOldTagBytes;
  if (padded) {
    // The decoder strips trailing '|' and refuses a "\n" in the first 20 bytes.
    if (tag.find('\n') != std::string_view::npos || tag.back() == '|') {
      throw std::invalid_argument("EncodeFrame: old-style padded tag contains \\n or ends with |");
    }
  } else if (tag.find(kTagEnd) != std::string_view::npos || tag.back() == '\n') {
    // The decoder splits at the first "\n\n".
    throw std::invalid_argument("EncodeFrame: tag contains \\n\\n or ends with \\n");
  }

  std::string out;
  out.reserve(std::max(tag.size(), kOldTagBytes) + kTagEnd.size() + 256);
  out.append(tag);
  if (padded) {
    out.append(kOldTagBytes - tag.size(), '|');
  } else {
    out.append(kTagEnd);
  }
  Encoder(out, framing).Pack(data, 1);
  // A long tag whose byte 20 is a UTF-8 continuation byte in 0x80-0x8f could,
  // if crafted, make the whole frame read as old style; refuse to emit it.
  if (!padded && IsOldStyle(out)) {
    throw std::invalid_argument("EncodeFrame: frame would read back as old style");
  }
  return out;
}

}  // namespace brine::wire

namespace brine::wire {

std::string PackMsgpack(const Value& value) {
  std::string out;
  Encoder(out, Framing::kNew).Pack(value, 1);
  return out;
}

std::optional<Value> UnpackMsgpack(std::string_view bytes) {
  Value out;
  Reader reader(bytes);
  if (!reader.ReadAll(out)) return std::nullopt;
  return out;
}

}  // namespace brine::wire
