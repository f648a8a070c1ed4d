// COO (coordinate) blocks of a sparse float32 vector and their wire format
// (Li & Hoefler, PPoPP 2022; docs/algorithms.md): a block of `count` entries is sent
// as `count` indices followed by `count` float32 values, indices int32 when the dense length
// n < 2^31 and int64 otherwise. So one entry costs 8 bytes (2 words) on the wire for every
// gradient below 2^31 elements, 12 bytes beyond.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/enforce.h"

namespace concord::sparse {

/// A sparse float32 vector in COO form: indices[e] holds values[e]; both have size().
/// The algorithms keep indices ascending unless a function says otherwise.
struct CooBlock {
  std::vector<int64_t> indices;
  std::vector<float> values;

  int64_t size() const { return static_cast<int64_t>(indices.size()); }
  void clear() {
    indices.clear();
    values.clear();
  }
  void push_back(int64_t index, float value) {
    indices.push_back(index);
    values.push_back(value);
  }
};

/// Bytes of one COO index on the wire for a dense vector of `n` elements: 4 (int32) when
/// n < 2^31, else 8 (int64).
inline size_t coo_index_bytes(int64_t n) { return n < (int64_t{1} << 31) ? 4 : 8; }

/// Bytes on the wire of `count` COO entries with `index_bytes`-byte indices.
inline size_t coo_wire_bytes(int64_t count, size_t index_bytes) {
  return static_cast<size_t>(count) * (index_bytes + sizeof(float));
}

/// Writes entries [first, first + count) of `block` to `out` in the wire format
/// (coo_wire_bytes(count, index_bytes) bytes: the indices, then the values).
inline void coo_pack(const CooBlock& block, int64_t first, int64_t count, size_t index_bytes, uint8_t* out) {
  if (count == 0) return;  // `out` may be null
  if (index_bytes == 4) {
    for (int64_t e = 0; e < count; ++e) {
      const auto index = static_cast<int32_t>(block.indices[first + e]);
      std::memcpy(out + e * 4, &index, 4);
    }
  } else {
    std::memcpy(out, block.indices.data() + first, static_cast<size_t>(count) * 8);
  }
  std::memcpy(out + count * index_bytes, block.values.data() + first, static_cast<size_t>(count) * sizeof(float));
}

/// Appends the `count` entries in wire format at `in` to `block`.
inline void coo_unpack(const uint8_t* in, int64_t count, size_t index_bytes, CooBlock& block) {
  if (count == 0) return;  // `in` and the empty vectors' data() may be null: no memcpy
  const size_t old = block.indices.size();
  block.indices.resize(old + count);
  block.values.resize(old + count);
  if (index_bytes == 4) {
    for (int64_t e = 0; e < count; ++e) {
      int32_t index;
      std::memcpy(&index, in + e * 4, 4);
      block.indices[old + e] = index;
    }
  } else {
    std::memcpy(block.indices.data() + old, in, static_cast<size_t>(count) * 8);
  }
  std::memcpy(block.values.data() + old, in + count * index_bytes, static_cast<size_t>(count) * sizeof(float));
}

/// Scatter-add of `count` entries in wire format at `wire` (from another rank) into the
/// dense region `dense` covering indices [base, base + length): dense[index - base] +=
/// value, in entry order. Throws MismatchError for an index outside the region (ranks cut
/// the vector differently); the entries before it have been added.
inline void coo_scatter_add(const uint8_t* wire, int64_t count, size_t index_bytes, int64_t base, int64_t length,
                            float* dense) {
  const uint8_t* values = wire + count * index_bytes;
  for (int64_t e = 0; e < count; ++e) {
    int64_t index;
    if (index_bytes == 4) {
      int32_t narrow;
      std::memcpy(&narrow, wire + e * 4, 4);
      index = narrow;
    } else {
      std::memcpy(&index, wire + e * 8, 8);
    }
    CONCORD_ENFORCE(
        index >= base && static_cast<uint64_t>(index) - static_cast<uint64_t>(base) < static_cast<uint64_t>(length),
        MismatchError, "sparse block entry ", e, " has index ", index, " outside this rank's region of ", length,
        " entries from index ", base, ": ranks disagree on n or on the regions");
    float value;
    std::memcpy(&value, values + e * sizeof(float), sizeof(float));
    dense[index - base] += value;
  }
}

}  // namespace concord::sparse
