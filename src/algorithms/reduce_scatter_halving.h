// ReduceScatterHalving: recursive-halving reduce-scatter (Thakur, Rabenseifner & Gropp,
// "Optimization of Collective Communication Operations in MPICH", IJHPCA 2005, sec. 4.2),
// with MPICH's fold for a world size that is not a power of two; rank r ends owning block
// r = patterns::segment(count, P, r).
//
// Steps for P ranks and n bytes (pof2 = largest power of two <= P, L = log2 pof2,
// patterns/recursive_doubling.h, rank_blocks layout: virtual block v is the blocks of the
// real ranks it stands for, 2v and 2v+1 for a folded pair, else v + P - pof2):
//   fold (P != pof2): each even rank r < 2(P - pof2) sends all n bytes to r + 1, which
//     reduces them into its buffer; r sits out until the last step.
//   L halving rounds: at distance pof2/2, ..., 1 each participant sends the half of its
//     current virtual blocks it does not keep and reduces the partner's copy of the other
//     half; virtual rank v ends with virtual block v reduced.
//   unfold (P != pof2): each odd rank r < 2(P - pof2) sends block r - 1 to r - 1.
// A participant sends L messages, (pof2-1)/pof2 n bytes for equal virtual blocks.
// Critical path with B = the largest virtual block, b = the largest block and
// f = 1 if P != pof2 else 0:
//   T = (L + 2f) alpha + ((pof2-1) B + f (n + b)) beta + ((pof2-1) B + f n) gamma,
// on a power of two log P alpha + (P-1)/P n beta + (P-1)/P n gamma.
// Every element is reduced by one chain of ranks. P = 1 or n = 0 sends nothing.
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/exchange_schedule.h"

namespace concord {

class ReduceScatterHalving : public ScheduledReduction<ReduceScatterAlgorithm, ReduceScatterHalving> {
 public:
  /// `scratch` persists across calls; it grows to n/2 bytes (n when P is not a power of two).
  ReduceScatterHalving(Communicator& comm, ScratchBuffer& scratch);

  /// The exchange steps of `rank` of `ranks` for `count` elements of `element_size` bytes.
  static std::vector<ExchangeStep> steps(int rank, int ranks, size_t count, size_t element_size);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "halving";
  static constexpr const char* kDescription =
      "recursive-halving reduce-scatter, log2 P rounds (fold when P is not a power of two)";
  /// Exact messages and bytes of one call (from steps()) and the critical path above.
  static Cost cost(const Problem& problem);
};

}  // namespace concord
