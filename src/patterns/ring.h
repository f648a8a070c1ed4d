// Pure rank arithmetic of the ring (no communication): neighbours, the segment each rank
// sends and receives at each step of a ring reduce-scatter and a ring allgather, and how a
// buffer is cut into segments. Shared by the algorithms and their unit tests.
//
// Ring allreduce (Patarasuk & Yuan, 2009) on P ranks and n elements:
//   reduce-scatter, steps s = 0..P-2: send segment (r - s) mod P to r+1, receive segment
//     (r - s - 1) mod P from r-1 and reduce it; afterwards rank r owns segment (r + 1) mod P
//     fully reduced.
//   allgather, steps s = 0..P-2: send segment (r + 1 - s) mod P, receive (r - s) mod P.
//   2(P-1) steps; each rank sends and receives 2 (P-1)/P * n elements.
#pragma once

#include <cstddef>
#include <cstdint>

namespace concord::patterns {

/// Non-negative remainder of a modulo b (b > 0).
constexpr int mod(int64_t a, int b) { return static_cast<int>(((a % b) + b) % b); }

struct Ring {
  int rank;
  int size;

  constexpr int right() const { return mod(rank + 1, size); }
  constexpr int left() const { return mod(rank - 1, size); }
  /// Number of steps of each phase: size - 1.
  constexpr int steps() const { return size - 1; }

  constexpr int reduce_scatter_send(int step) const { return mod(rank - step, size); }
  constexpr int reduce_scatter_recv(int step) const { return mod(rank - step - 1, size); }
  /// Segment this rank holds fully reduced after the reduce-scatter.
  constexpr int owned_segment() const { return mod(rank + 1, size); }
  constexpr int allgather_send(int step) const { return mod(rank + 1 - step, size); }
  constexpr int allgather_recv(int step) const { return mod(rank - step, size); }

  /// A plain ring allgather, where rank r starts with block r: at step s (0..P-2) send
  /// block (r - s) mod P to the right and receive block (r - s - 1) mod P from the left.
  constexpr int gather_send(int step) const { return mod(rank - step, size); }
  constexpr int gather_recv(int step) const { return mod(rank - step - 1, size); }
};

/// [offset, offset + count) of segment `index` when `total` elements are cut into `parts`
/// nearly equal segments (the first total % parts segments get one element more).
struct Segment {
  size_t offset;
  size_t count;
};
constexpr Segment segment(size_t total, int parts, int index) {
  const size_t base = total / parts;
  const size_t extra = total % parts;
  const size_t i = static_cast<size_t>(index);
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

}  // namespace concord::patterns
