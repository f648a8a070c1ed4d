// Pure rank arithmetic of Adasum's vector-halving distance-doubling schedule (Maleki et al.,
// "Scaling Distributed Training with Adaptive Summation", MLSys 2021, sec. 4), for a
// power-of-two number of ranks P = 2^L.
//
// Level k = 0..L-1 has distance d = 2^k and partner rank XOR d. Before level k a rank
// holds a segment of the vector that depends only on its rank bits below k, so partners
// hold the same segment; it is split at its middle and the rank with bit k clear keeps the
// lower half, its partner the upper half. After level k the 2d ranks that agree on every
// bit above k (a "group") together hold the whole vector, each a disjoint 1/(2d) of it.
// The allgather that follows walks the levels back (k = L-1..0), each rank sending its
// segment of level k and receiving its partner's, which together form its segment before
// level k.
#pragma once

#include <cstddef>

#include "patterns/ring.h"

namespace concord::patterns {

struct VectorHalving {
  int rank;
  int size;  ///< a power of two

  /// Number of levels, log2(size).
  constexpr int levels() const {
    int k = 0;
    while ((1 << k) < size) ++k;
    return k;
  }
  /// Partner at level k: rank XOR 2^k.
  constexpr int partner(int level) const { return rank ^ (1 << level); }
  /// True if this rank keeps the lower half at level k (its bit k is clear).
  constexpr bool keeps_lower(int level) const { return (rank & (1 << level)) == 0; }
  /// The segment of `count` elements this rank holds after `levels_done` levels
  /// (levels_done = 0: the whole vector).
  constexpr Segment held(size_t count, int levels_done) const {
    Segment s{0, count};
    for (int k = 0; k < levels_done; ++k) s = half(s, keeps_lower(k));
    return s;
  }
  /// The lower (first, floor(count/2) elements) or upper half of a segment.
  static constexpr Segment half(Segment s, bool lower) {
    const size_t low = s.count / 2;
    return lower ? Segment{s.offset, low} : Segment{s.offset + low, s.count - low};
  }
};

}  // namespace concord::patterns
