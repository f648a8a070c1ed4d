// Pure rank arithmetic of pairwise exchange (all-to-all in P-1 steps; Thakur, Rabenseifner
// & Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA 2005):
// at step s = 1..P-1 rank r sends to (r + s) mod P and receives from (r - s) mod P; when P
// is a power of two both partners are r XOR s, so every step is a set of disjoint pairs.
// Over the P-1 steps each rank sends to and receives from every other rank exactly once.
#pragma once

#include "patterns/ring.h"

namespace concord::patterns {

struct PairwiseExchange {
  int rank;
  int size;

  constexpr int steps() const { return size - 1; }
  constexpr bool power_of_two() const { return (size & (size - 1)) == 0; }
  /// Rank this rank sends to at `step` (1 <= step <= size-1).
  constexpr int send_to(int step) const { return power_of_two() ? rank ^ step : mod(rank + step, size); }
  /// Rank this rank receives from at `step`.
  constexpr int receive_from(int step) const { return power_of_two() ? rank ^ step : mod(rank - step, size); }
};

}  // namespace concord::patterns
