// The modern bus stream; the grammar heads salt_stream.h.
#include "brine/wire/salt_stream.h"

#include <stdexcept>

namespace brine::wire {
namespace {

constexpr std::size_t kPrefixBytes = 4;

bool IsMapHeader(std::uint8_t b) { return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf; }

std::uint64_t BigEndian(const std::uint8_t* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

enum class Scan { kDone, kNeedMore, kBad };

// Reads whole msgpack values from p[pos..n) while `pending` says values are
// due; a container adds its items to `pending`. Stops before an item whose
// header or payload is not all there (kNeedMore, pos at that item), and at a
// byte no msgpack value starts with (kBad). An item's size is checked against
// `limit` (the bytes the message may have) before it is waited for.
Scan MeasureValues(const std::uint8_t* p, std::size_t n, std::size_t limit, std::size_t& pos,
                   std::uint64_t& pending) {
  while (pending > 0) {
    if (pending > limit - std::min(limit, pos) + 1) return Scan::kBad;  // each value takes a byte at least
    if (pos >= n) return Scan::kNeedMore;
    const std::uint8_t b = p[pos];
    std::size_t header = 1;
    std::uint64_t payload = 0;
    std::uint64_t items = 0;
    int len_bytes = 0;  // a length field after the marker
    int ext_type = 0;   // ext: one type byte after the length
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
    } else if (b <= 0x8f) {
      items = 2ull * (b & 0x0f);
    } else if (b <= 0x9f) {
      items = b & 0x0f;
    } else if (b <= 0xbf) {
      payload = b & 0x1f;
    } else {
      switch (b) {
        case 0xc4: case 0xd9: len_bytes = 1; break;
        case 0xc5: case 0xda: len_bytes = 2; break;
        case 0xc6: case 0xdb: len_bytes = 4; break;
        case 0xc7: len_bytes = 1; ext_type = 1; break;
        case 0xc8: len_bytes = 2; ext_type = 1; break;
        case 0xc9: len_bytes = 4; ext_type = 1; break;
        case 0xca: payload = 4; break;
        case 0xcb: payload = 8; break;
        case 0xcc: case 0xd0: payload = 1; break;
        case 0xcd: case 0xd1: payload = 2; break;
        case 0xce: case 0xd2: payload = 4; break;
        case 0xcf: case 0xd3: payload = 8; break;
        case 0xd4: payload = 2; break;
        case 0xd5: payload = 3; break;
        case 0xd6: payload = 5; break;
        case 0xd7: payload = 9; break;
        case 0xd8: payload = 17; break;
        case 0xdc: case 0xdd: case 0xde: case 0xdf: {
          const int w = (b == 0xdc || b == 0xde) ? 2 : 4;
          if (pos + 1 + w > n) return Scan::kNeedMore;
          items = BigEndian(p + pos + 1, w) * (b >= 0xde ? 2 : 1);
          header += w;
          break;
        }
        default: return Scan::kBad;  // 0xc1
      }
    }
    if (len_bytes > 0) {
      if (pos + 1 + len_bytes > n) return Scan::kNeedMore;
      payload = BigEndian(p + pos + 1, len_bytes) + ext_type;
      header += len_bytes;
    }
    if (pos + header + payload > limit) return Scan::kBad;
    if (pos + header + payload > n) return Scan::kNeedMore;
    pos += header + payload;
    pending = pending - 1 + items;
  }
  return Scan::kDone;
}

// One whole value at p[0..n): its size, or 0 when it is not one.
std::size_t ValueSize(const std::uint8_t* p, std::size_t n) {
  std::size_t pos = 0;
  std::uint64_t pending = 1;
  return MeasureValues(p, n, n, pos, pending) == Scan::kDone ? pos : 0;
}

// A str or bin at p[0..n): sets `out` to its bytes and returns the bytes the
// value takes, or 0 when it is another type.
std::size_t ReadBytes(const std::uint8_t* p, std::size_t n, std::string_view& out) {
  if (n == 0) return 0;
  const std::uint8_t b = p[0];
  std::size_t header = 1;
  std::uint64_t size = 0;
  if (b >= 0xa0 && b <= 0xbf) {
    size = b & 0x1f;
  } else if (b == 0xc4 || b == 0xd9 || b == 0xc5 || b == 0xda || b == 0xc6 || b == 0xdb) {
    const int w = (b == 0xc4 || b == 0xd9) ? 1 : (b == 0xc5 || b == 0xda) ? 2 : 4;
    if (n < 1u + w) return 0;
    size = BigEndian(p + 1, w);
    header += w;
  } else {
    return 0;
  }
  if (header + size > n) return 0;
  out = std::string_view(reinterpret_cast<const char*>(p) + header, size);
  return header + size;
}

// The body of a whole message, or the reason it has none.
bool BodyOf(std::string_view message, std::string_view& body, std::string& reason) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(message.data());
  const std::size_t n = message.size();
  if (n == 0 || !IsMapHeader(p[0])) {
    reason = "bus message is not a msgpack map";
    return false;
  }
  std::size_t pos = 1;
  std::uint64_t count = p[0] & 0x0f;
  if (p[0] == 0xde || p[0] == 0xdf) {
    const int w = p[0] == 0xde ? 2 : 4;
    if (n < 1u + w) {
      reason = "truncated bus message";
      return false;
    }
    count = BigEndian(p + 1, w);
    pos += w;
  }
  bool found = false;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string_view key;
    std::size_t used = ReadBytes(p + pos, n - pos, key);
    if (used == 0) {
      used = ValueSize(p + pos, n - pos);
      key = {};
    }
    if (used == 0) {
      reason = "truncated bus message";
      return false;
    }
    pos += used;
    if (key == "body") {
      used = ReadBytes(p + pos, n - pos, body);
      if (used == 0) {
        reason = "bus message's body is not str or bin";
        return false;
      }
      found = true;
    } else {
      used = ValueSize(p + pos, n - pos);
      if (used == 0) {
        reason = "truncated bus message";
        return false;
      }
    }
    pos += used;
  }
  if (pos != n) {
    reason = "trailing bytes after the bus message";
    return false;
  }
  if (!found) {
    reason = "bus message without a body";
    return false;
  }
  return true;
}

void PackString(std::string& out, std::string_view s, StreamString type) {
  const std::size_t n = s.size();
  if (type == StreamString::kStr && n < 32) {
    out.push_back(static_cast<char>(0xa0 | n));
  } else {
    const bool bin = type == StreamString::kBin;
    int w = n < 256 ? 1 : n < 65536 ? 2 : 4;
    out.push_back(static_cast<char>(bin ? (w == 1 ? 0xc4 : w == 2 ? 0xc5 : 0xc6) : (w == 1 ? 0xd9 : w == 2 ? 0xda : 0xdb)));
    for (int i = w - 1; i >= 0; --i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  }
  out.append(s);
}

}  // namespace

std::string_view FramingName(StreamFraming framing) {
  return framing == StreamFraming::kPrefixed ? "prefixed" : "plain";
}

std::optional<StreamFraming> ParseFramingName(std::string_view name) {
  if (name == "plain") return StreamFraming::kPlain;
  if (name == "prefixed") return StreamFraming::kPrefixed;
  return std::nullopt;
}

std::string EncodeStreamFrame(std::string_view body, const StreamForm& form) {
  if (body.size() > 0xfffffff0u) throw std::invalid_argument("bus message body over 4 GiB");
  std::string out;
  out.reserve(body.size() + 20);
  if (form.framing == StreamFraming::kPrefixed) out.append(kPrefixBytes, '\0');
  out.push_back(static_cast<char>(0x82));
  const auto head = [&] {
    PackString(out, "head", form.keys);
    out.push_back(static_cast<char>(0x80));
  };
  const auto put_body = [&] {
    PackString(out, "body", form.keys);
    PackString(out, body, form.body);
  };
  if (form.order == StreamKeyOrder::kHeadFirst) {
    head();
    put_body();
  } else {
    put_body();
    head();
  }
  if (form.framing == StreamFraming::kPrefixed) {
    const std::size_t n = out.size() - kPrefixBytes;
    for (std::size_t i = 0; i < kPrefixBytes; ++i) out[i] = static_cast<char>((n >> (8 * (3 - i))) & 0xff);
  }
  return out;
}

void StreamDecoder::Append(std::string_view bytes) {
  // Compact now and then: what was returned is dropped from the front.
  if (start_ > 0 && (start_ == buffer_.size() || start_ >= (std::size_t{1} << 16))) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes);
}

void StreamDecoder::Reset() {
  buffer_.clear();
  start_ = 0;
  scan_pos_ = 0;
  scan_pending_ = 0;
  broken_ = false;
}

void StreamDecoder::Consume(std::size_t n) {
  start_ += n;
  scan_pos_ = 0;
  scan_pending_ = 0;
}

std::size_t StreamDecoder::ScanPlain(std::string& error) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(buffer_.data()) + start_;
  const std::size_t n = buffer_.size() - start_;
  if (scan_pending_ == 0) {
    scan_pos_ = 0;
    scan_pending_ = 1;
  }
  switch (MeasureValues(p, n, max_frame_bytes_, scan_pos_, scan_pending_)) {
    case Scan::kDone: return scan_pos_;
    case Scan::kNeedMore: return 0;
    case Scan::kBad:
      error = n >= max_frame_bytes_ || scan_pos_ >= max_frame_bytes_
                  ? "bare bus message over max_frame_bytes " + std::to_string(max_frame_bytes_)
                  : "bare bus message is not msgpack";
      return 0;
  }
  return 0;
}

std::optional<StreamDecoder::Item> StreamDecoder::Next() {
  if (broken_) return std::nullopt;
  const std::size_t n = buffer_.size() - start_;
  if (n == 0) return std::nullopt;
  const auto* p = reinterpret_cast<const std::uint8_t*>(buffer_.data()) + start_;
  Item item;
  const auto broken = [&](StreamFraming framing, std::string reason) {
    broken_ = true;
    item.kind = Item::Kind::kBroken;
    item.framing = framing;
    item.bytes.assign(buffer_, start_, std::min(n, max_frame_bytes_));
    item.reason = std::move(reason);
    return item;
  };
  std::string_view message;
  std::size_t frame_bytes = 0;
  if (IsMapHeader(p[0])) {
    item.framing = StreamFraming::kPlain;
    std::string error;
    frame_bytes = ScanPlain(error);
    if (!error.empty()) return broken(StreamFraming::kPlain, error);
    if (frame_bytes == 0) return std::nullopt;
    message = std::string_view(buffer_).substr(start_, frame_bytes);
  } else if (p[0] < 0x80) {
    item.framing = StreamFraming::kPrefixed;
    if (n < kPrefixBytes) return std::nullopt;
    const std::uint64_t length = BigEndian(p, kPrefixBytes);
    if (length > max_frame_bytes_) {
      return broken(StreamFraming::kPrefixed, "bus message length " + std::to_string(length) +
                                                   " over max_frame_bytes " + std::to_string(max_frame_bytes_));
    }
    if (n < kPrefixBytes + length) return std::nullopt;
    frame_bytes = kPrefixBytes + length;
    message = std::string_view(buffer_).substr(start_ + kPrefixBytes, length);
  } else {
    return broken(StreamFraming::kPlain, "bus stream byte 0x" + [&] {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string{kHex[p[0] >> 4], kHex[p[0] & 15]};
    }() + " starts neither a bare msgpack map nor a length prefix");
  }
  std::string_view body;
  if (BodyOf(message, body, item.reason)) {
    item.bytes.assign(body);
  } else {
    item.kind = Item::Kind::kUndecodable;
    item.bytes.assign(message);
  }
  Consume(frame_bytes);
  return item;
}

}  // namespace brine::wire
