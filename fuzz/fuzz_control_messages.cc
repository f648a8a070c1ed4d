// libFuzzer target: the control-plane decoders (src/control/message.cc), which read the
// request lists every rank sends to the coordinator and the response lists it broadcasts.
// Input: one selector byte (bit 0: 0 = request list, 1 = response list), then the message.
// Any input must either decode or throw concord::Error (never crash, over-read or allocate
// unboundedly); a decoded list must re-encode to bytes that decode and re-encode to the
// same bytes (NaN-safe, unlike comparing the structs).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "concord/errors.h"
#include "control/message.h"

namespace {

template <typename Decode>
void round_trip(const std::vector<uint8_t>& bytes, Decode decode) {
  const auto once = concord::encode(decode(bytes));
  const auto twice = concord::encode(decode(once));
  if (once != twice) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<uint8_t> bytes(data + 1, data + size);
  try {
    if (data[0] & 1) round_trip(bytes, [](const std::vector<uint8_t>& b) { return concord::decode_response_list(b); });
    else round_trip(bytes, [](const std::vector<uint8_t>& b) { return concord::decode_request_list(b); });
  } catch (const concord::Error&) {
  }
  return 0;
}
