// The COO wire format of sparse blocks (../shared/specs/oktopk.md, "Notation"): a block of
// m entries is m indices (int32 when the gradient has n < 2^31 entries, int64 otherwise)
// followed by m float32 values, so one entry is 8 bytes (2 words) with int32 indices and
// 12 bytes with int64 ones. Indices are absolute positions in the gradient.
#pragma once

#include <cstddef>
#include <cstdint>

namespace concord::sparse {

/// Bytes of one index on the wire for a gradient of `n` entries: 4 when n < 2^31, else 8.
constexpr size_t coo_index_bytes(int64_t n) { return n < (int64_t{1} << 31) ? 4 : 8; }

/// Bytes of a block of `m` entries with `index_bytes`-byte indices.
constexpr size_t coo_block_bytes(size_t m, size_t index_bytes) { return m * (index_bytes + sizeof(float)); }

/// Writes the block of entries (indices[i], values[i]) for i < m to `out`
/// (coo_block_bytes(m, index_bytes) bytes).
void coo_pack(const int64_t* indices, const float* values, size_t m, size_t index_bytes, uint8_t* out);

/// Reads a block of `m` entries from `in` into indices[0..m) and values[0..m).
void coo_unpack(const uint8_t* in, size_t m, size_t index_bytes, int64_t* indices, float* values);

}  // namespace concord::sparse
