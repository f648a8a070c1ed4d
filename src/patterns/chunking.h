// Pure arithmetic of pipelining: how `count` elements are cut into chunks of at most
// `chunk_bytes` bytes (whole elements, at least one element per chunk), as the pipelined
// tree, double tree and chain algorithms send them. Chunks are nearly equal (segment()).
#pragma once

#include <algorithm>
#include <cstddef>

#include "patterns/ring.h"

namespace concord::patterns {

struct ChunkPlan {
  size_t count = 0;         ///< elements in all
  size_t element_size = 1;  ///< bytes per element
  int chunks = 0;           ///< number of chunks; 0 exactly when count is 0

  /// Cuts `count` elements of `element_size` bytes into ceil(count / m) chunks, where
  /// m = max(1, chunk_bytes / element_size) elements.
  static constexpr ChunkPlan make(size_t count, size_t element_size, size_t chunk_bytes) {
    const size_t per_chunk = std::max<size_t>(1, chunk_bytes / std::max<size_t>(element_size, 1));
    return {count, element_size, static_cast<int>((count + per_chunk - 1) / per_chunk)};
  }
  /// Chunk `index` in elements.
  constexpr Segment chunk(int index) const { return segment(count, chunks, index); }
  constexpr size_t offset_bytes(int index) const { return chunk(index).offset * element_size; }
  constexpr size_t bytes(int index) const { return chunk(index).count * element_size; }
  /// Bytes of the largest chunk (the first one); 0 when there is none.
  constexpr size_t largest_bytes() const { return chunks == 0 ? 0 : bytes(0); }
};

}  // namespace concord::patterns
