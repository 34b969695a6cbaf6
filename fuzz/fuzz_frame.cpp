// libFuzzer target for wire::DecodeFrame: any bytes a process can push onto
// the bus. Besides ASan/UBSan findings it checks one property: a decoded event
// that EncodeFrame accepts encodes to a frame that decodes and re-encodes to
// the same bytes (what the master republishes and stores is stable).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "brine/wire/codec.h"

namespace {

// A small limit too, so the "over max_frame_bytes" path is reached.
constexpr std::size_t kSmallLimit = 4096;

void CheckStable(const brine::wire::DecodedEvent& event) {
  std::string once;
  try {
    once = brine::wire::EncodeFrame(event.tag, event.data, event.framing);
  } catch (const std::invalid_argument&) {
    return;  // EncodeFrame may refuse what it could not give back; documented
  }
  const auto again = brine::wire::DecodeFrame(once);
  const auto* decoded = std::get_if<brine::wire::DecodedEvent>(&again);
  if (decoded == nullptr) std::abort();  // EncodeFrame's output must decode
  if (decoded->tag != event.tag) std::abort();
  if (brine::wire::EncodeFrame(decoded->tag, decoded->data, decoded->framing) != once) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  const auto result = brine::wire::DecodeFrame(frame);
  if (const auto* event = std::get_if<brine::wire::DecodedEvent>(&result)) {
    if (event->tag.empty() || !event->data.is_map()) std::abort();
    CheckStable(*event);
  }
  const auto small = brine::wire::DecodeFrame(frame, {.max_frame_bytes = kSmallLimit});
  if (size > kSmallLimit && !std::holds_alternative<brine::wire::Undecodable>(small)) std::abort();
  (void)brine::wire::UnpackMsgpack(frame);
  return 0;
}
