// libFuzzer target: the sparse allreduces' wire decoders (src/sparse/coo.h,
// src/sparse/coo_exchange.h): COO blocks received from other ranks (scatter-added into
// this rank's region, or unpacked) and the exchanged gradient lengths. Input: a selector
// byte (bit 0: int32 or int64 indices), int64 region base, uint16 whose low 12 bits are
// the region length (at most 4,095 elements: longer regions only add allocation time per
// execution), then the COO wire bytes (as many whole entries as fit; a trailing partial
// entry is ignored, as the receiver sizes buffers from counts it has checked).
// Out-of-region indices must throw concord::MismatchError; the lengths check must throw or
// accept, never crash.
#include <cstdint>
#include <cstring>
#include <vector>

#include "concord/errors.h"
#include "sparse/coo.h"
#include "sparse/coo_exchange.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace concord::sparse;
  constexpr size_t kHeader = 1 + 8 + 2;
  if (size < kHeader) return 0;
  const size_t index_bytes = data[0] & 1 ? 8 : 4;
  int64_t base;
  uint16_t length;
  std::memcpy(&base, data + 1, 8);
  std::memcpy(&length, data + 9, 2);
  length &= 0x0fff;
  const uint8_t* wire = data + kHeader;
  const auto count = static_cast<int64_t>((size - kHeader) / (index_bytes + sizeof(float)));
  std::vector<uint8_t> exact(wire, wire + coo_wire_bytes(count, index_bytes));  // ASan bounds
  std::vector<float> region(length, 0.0f);
  try {
    coo_scatter_add(exact.data(), count, index_bytes, base, length, region.data());
  } catch (const concord::MismatchError&) {
  }
  CooBlock block;
  coo_unpack(exact.data(), count, index_bytes, block);
  if (block.size() != count) __builtin_trap();
  // The same bytes as the lengths every rank announced (int64 each), checked against n =
  // the first one.
  std::vector<int64_t> lengths((size - kHeader) / 8);
  if (!lengths.empty()) {
    std::memcpy(lengths.data(), wire, lengths.size() * 8);
    try {
      check_lengths(lengths, lengths[0], "fuzz");
    } catch (const concord::Error&) {
    }
  }
  return 0;
}
