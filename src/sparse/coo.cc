#include "sparse/coo.h"

#include <cstring>

namespace concord::sparse {
namespace {

// Writes the m indices of a block at `out` in the wire width.
void pack_indices(const int64_t* indices, size_t m, size_t index_bytes, uint8_t* out) {
  if (index_bytes == sizeof(int64_t)) {
    if (m > 0) std::memcpy(out, indices, m * sizeof(int64_t));
    return;
  }
  for (size_t i = 0; i < m; ++i) {
    const auto narrow = static_cast<int32_t>(indices[i]);
    std::memcpy(out + i * sizeof(int32_t), &narrow, sizeof(int32_t));
  }
}

}  // namespace

void coo_pack(const int64_t* indices, const float* values, size_t m, size_t index_bytes, uint8_t* out) {
  pack_indices(indices, m, index_bytes, out);
  if (m > 0) std::memcpy(out + m * index_bytes, values, m * sizeof(float));
}

void coo_unpack(const uint8_t* in, size_t m, size_t index_bytes, int64_t* indices, float* values) {
  if (index_bytes == sizeof(int64_t)) {
    if (m > 0) std::memcpy(indices, in, m * sizeof(int64_t));
  } else {
    for (size_t i = 0; i < m; ++i) {
      int32_t narrow;
      std::memcpy(&narrow, in + i * sizeof(int32_t), sizeof(int32_t));
      indices[i] = narrow;
    }
  }
  if (m > 0) std::memcpy(values, in + m * index_bytes, m * sizeof(float));
}

}  // namespace concord::sparse
