// Pure rank arithmetic of a binomial tree rooted at `root` on `size` ranks, as used by
// broadcast: ranks are renumbered v = (rank - root) mod size; the parent of v is v with its
// lowest set bit cleared; the children of v are v + 2^k for every 2^k below v's lowest set
// bit (all 2^k < size for the root), while v + 2^k < size. ceil(log2 size) rounds.
#pragma once

#include <vector>

#include "patterns/ring.h"

namespace concord::patterns {

struct BinomialTree {
  int rank;
  int size;
  int root;

  constexpr int virtual_rank() const { return mod(rank - root, size); }
  constexpr int real_rank(int v) const { return mod(v + root, size); }

  /// Parent rank, or -1 for the root.
  constexpr int parent() const {
    const int v = virtual_rank();
    return v == 0 ? -1 : real_rank(v & (v - 1));
  }

  /// Children in the order a broadcast should serve them: highest bit (the child that
  /// heads the most tree levels) first.
  std::vector<int> children() const {
    const int v = virtual_rank();
    int limit = 1;
    while (limit < size) limit <<= 1;
    if (v != 0) limit = v & -v;
    std::vector<int> result;
    for (int bit = limit >> 1; bit >= 1; bit >>= 1)
      if (v + bit < size) result.push_back(real_rank(v + bit));
    return result;
  }
};

}  // namespace concord::patterns
