// AllgatherRecursiveDoubling: recursive-doubling allgather of variable-size blocks
// (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 2005, sec. 4.1), with MPICH's fold for a world size that is not a power of
// two (so it never declines; the cost model prefers the ring there for large messages).
//
// Steps for P ranks and n output bytes (pof2 = largest power of two <= P, L = log2 pof2,
// patterns/recursive_doubling.h, rank_blocks layout: virtual block v is the blocks of the
// real ranks it stands for, 2v and 2v+1 for a folded pair, else v + P - pof2):
//   fold (P != pof2): each even rank r < 2(P - pof2) sends its block to r + 1.
//   L doubling rounds: at distance 1, 2, ..., pof2/2 partners swap all the virtual blocks
//     they hold (n/pof2, ..., n/2 bytes for equal blocks), in place.
//   unfold (P != pof2): each odd rank r < 2(P - pof2) sends the whole n-byte output to r - 1.
// A participant sends L messages, (pof2-1)/pof2 n bytes for equal virtual blocks.
// Critical path with B = the largest virtual block, b = the largest block and
// f = 1 if P != pof2 else 0:
//   T = (L + 2f) alpha + ((pof2-1) B + f (b + n)) beta,
// on a power of two log P alpha + (P-1)/P n beta. P = 1 or n = 0 sends nothing.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/exchange_schedule.h"
#include "transport/communicator.h"

namespace concord {

class AllgatherRecursiveDoubling : public AllgatherAlgorithm {
 public:
  /// Needs no scratch: every message lands in place.
  AllgatherRecursiveDoubling(Communicator& comm, ScratchBuffer& scratch);

  /// Starts the allgather into `output`, which holds P blocks back to back in rank order,
  /// block r being `block_bytes[r]` bytes; this rank's own block must already be in place.
  /// Every rank must pass the same block_bytes. `output` must stay valid until kDone.
  /// Throws InternalError when block_bytes does not have P entries.
  void start(void* output, const std::vector<size_t>& block_bytes) override;
  Progress progress() override;

  /// The exchange steps of `rank` of P = block_bytes.size() ranks.
  static std::vector<ExchangeStep> steps(int rank, const std::vector<size_t>& block_bytes);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "recursive_doubling";
  static constexpr const char* kDescription =
      "recursive-doubling allgather of variable-size blocks, log2 P rounds (fold when P is not a power of "
      "two)";
  /// Cost for `problem.count` output bytes cut into P near-equal blocks (patterns::segment):
  /// exact messages and bytes (from steps()) and the critical path above.
  static Cost cost(const Problem& problem);

 private:
  Communicator& comm_;
  ExchangeSchedule schedule_;
};

}  // namespace concord
