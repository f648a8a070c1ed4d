// Pure rank arithmetic of the recursive halving / recursive doubling family (no
// communication), shared by the algorithms (allreduce halving-doubling and recursive
// doubling, reduce-scatter halving, allgather recursive doubling), their tests and the
// simulator. Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
// Operations in MPICH", IJHPCA 2005; Rabenseifner, "Optimization of Collective Reduction
// Operations", ICCS 2004.
//
// Non-power-of-two fold (MPICH): pof2 = largest power of two <= P, extra = P - pof2. Among
// the first 2*extra ranks, each even rank sends its data to rank + 1 and sits out the
// power-of-two phase ("folds out"); each odd rank combines it ("folds in") and takes part.
// The pof2 participants are renumbered: virtual rank v = rank / 2 for rank < 2*extra, else
// rank - extra. Afterwards each odd rank < 2*extra sends the result back to rank - 1.
//
// The power-of-two phase works on pof2 *virtual blocks* of the buffer, in virtual-rank order:
//   recursive halving (reduce-scatter), rounds k = 0..log2(pof2)-1: distance
//     d = pof2 >> (k+1), partner v XOR d. The current range [lo, lo + 2d) is split; a rank
//     with bit d clear keeps the lower half and sends the upper one, the other the reverse.
//     After the last round virtual rank v holds virtual block v (natural order).
//   recursive doubling (allgather), rounds k = 0..log2(pof2)-1: distance d = 1 << k,
//     partner v XOR d. Before round k, v holds blocks [v & ~(d-1), +d); it sends them and
//     receives the partner's [(v^d) & ~(d-1), +d); afterwards it holds [v & ~(2d-1), +2d).
//   recursive doubling of the whole vector (small-message allreduce) uses the same
//     partners as the allgather, every round exchanging everything.
//
// Two block layouts map virtual blocks to elements:
//   even_blocks: count elements cut into pof2 near-equal segments (allreduce).
//   rank_blocks: count elements cut into P near-equal segments, one per real rank; virtual
//     block v is the union of the segments of the real ranks it stands for (2v and 2v+1
//     for v < extra, v + extra otherwise), so after the halving the odd rank of a folded
//     pair holds both its own block and its partner's (reduce-scatter, allgather).
#pragma once

#include <cstddef>

#include "patterns/ring.h"

namespace concord::patterns {

/// Largest power of two <= n (n >= 1).
constexpr int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/// log2 of a power of two.
constexpr int log2_pow2(int pof2) {
  int k = 0;
  while ((1 << k) < pof2) ++k;
  return k;
}

/// Half-open range [begin, end) of virtual blocks.
struct BlockRange {
  int begin;
  int end;
  constexpr int size() const { return end - begin; }
  constexpr bool operator==(const BlockRange&) const = default;
};

struct RecursiveDoubling {
  int rank;
  int size;

  constexpr int pof2() const { return floor_pow2(size); }
  /// Ranks that fold out (size - pof2).
  constexpr int extra() const { return size - pof2(); }
  /// Rounds of the power-of-two phase: log2(pof2).
  constexpr int rounds() const { return log2_pow2(pof2()); }

  /// Even rank < 2*extra: sends its data to rank + 1 and sits out the power-of-two phase.
  constexpr bool folds_out() const { return rank < 2 * extra() && rank % 2 == 0; }
  /// Odd rank < 2*extra: receives rank - 1's data and takes part for both.
  constexpr bool folds_in() const { return rank < 2 * extra() && rank % 2 == 1; }
  /// The other rank of this rank's fold pair, or -1 when it is not in one.
  constexpr int fold_partner() const { return folds_out() ? rank + 1 : folds_in() ? rank - 1 : -1; }

  /// Rank in the power-of-two phase, or -1 when this rank folds out.
  constexpr int virtual_rank() const {
    if (folds_out()) return -1;
    return rank < 2 * extra() ? rank / 2 : rank - extra();
  }
  /// The real rank that plays virtual rank v (0 <= v < pof2).
  constexpr int real_rank(int v) const { return v < extra() ? 2 * v + 1 : v + extra(); }
  /// First real rank whose block is part of virtual block v under rank_blocks; for
  /// v == pof2 returns size (so [first(v), first(v+1)) are v's real blocks).
  constexpr int first_real_block(int v) const { return v < extra() ? 2 * v : v + extra(); }

  // Recursive doubling (whole vector, or the allgather), round k: distance 1 << k.
  constexpr int doubling_distance(int round) const { return 1 << round; }
  constexpr int doubling_partner(int round) const { return real_rank(virtual_rank() ^ doubling_distance(round)); }
  /// Virtual blocks this rank holds before doubling round k, and sends in it.
  constexpr BlockRange doubling_send(int round) const {
    const int d = doubling_distance(round);
    const int lo = virtual_rank() & ~(d - 1);
    return {lo, lo + d};
  }
  /// Virtual blocks received in doubling round k (the partner's doubling_send).
  constexpr BlockRange doubling_recv(int round) const {
    const int d = doubling_distance(round);
    const int lo = (virtual_rank() ^ d) & ~(d - 1);
    return {lo, lo + d};
  }

  // Recursive halving (reduce-scatter), round k: distance pof2 >> (k + 1).
  constexpr int halving_distance(int round) const { return pof2() >> (round + 1); }
  constexpr int halving_partner(int round) const { return real_rank(virtual_rank() ^ halving_distance(round)); }
  /// Virtual blocks kept (and reduced with the partner's copy) in halving round k.
  constexpr BlockRange halving_keep(int round) const {
    const int d = halving_distance(round);
    const int lo = (virtual_rank() & ~(2 * d - 1)) | (virtual_rank() & d);
    return {lo, lo + d};
  }
  /// Virtual blocks sent to the partner in halving round k (the partner's halving_keep).
  constexpr BlockRange halving_send(int round) const {
    const int d = halving_distance(round);
    const int lo = (virtual_rank() & ~(2 * d - 1)) | (~virtual_rank() & d);
    return {lo, lo + d};
  }
};

/// Elements of virtual blocks `range` when `count` elements are cut into `pof2` near-equal
/// segments (patterns::segment).
constexpr Segment even_blocks(size_t count, int pof2, BlockRange range) {
  const size_t begin = segment(count, pof2, range.begin).offset;
  const size_t end = range.end == pof2 ? count : segment(count, pof2, range.end).offset;
  return {begin, end - begin};
}

/// Elements of virtual blocks `range` under the rank_blocks layout: `count` elements cut
/// into P = pattern.size segments, virtual block v covering real segments
/// [first_real_block(v), first_real_block(v + 1)).
constexpr Segment rank_blocks(size_t count, const RecursiveDoubling& pattern, BlockRange range) {
  const int first = pattern.first_real_block(range.begin);
  const int last = pattern.first_real_block(range.end);
  const size_t begin = segment(count, pattern.size, first).offset;
  const size_t end = last == pattern.size ? count : segment(count, pattern.size, last).offset;
  return {begin, end - begin};
}

}  // namespace concord::patterns
