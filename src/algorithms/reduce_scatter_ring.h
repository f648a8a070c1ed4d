// ReduceScatterRing: ring reduce-scatter (the first half of Patarasuk & Yuan's ring
// allreduce, JPDC 2009; Thakur, Rabenseifner & Gropp, IJHPCA 2005, sec. 4.3), shifted so
// that rank r ends owning its own block r = patterns::segment(count, P, r).
//
// Steps for P ranks and n bytes: P-1 steps; at step s (0..P-2) rank r sends its partial
// block (r - s - 1) mod P to r + 1 and receives block (r - s - 2) mod P from r - 1, which it
// reduces into its buffer; the block received at step s is the one sent at step s + 1, and
// the last one received is block r. Steps are locked (send and receive of a step complete
// before the next starts). Each rank sends every block but its own, (r - 1 - s) mod P for
// s = 0..P-2, in P-1 messages: (P-1)/P n bytes. With b = the largest block:
//   T = (P-1) alpha + (P-1) b beta + (P-1) b gamma  (= (P-1)/P n beta for equal blocks).
// Each block is reduced along one chain of ranks. P = 1 or n = 0 sends nothing.
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/exchange_schedule.h"

namespace concord {

class ReduceScatterRing : public ScheduledReduction<ReduceScatterAlgorithm, ReduceScatterRing> {
 public:
  /// `scratch` persists across calls; it grows to the largest block's bytes.
  ReduceScatterRing(Communicator& comm, ScratchBuffer& scratch);

  /// The exchange steps of `rank` of `ranks` for `count` elements of `element_size` bytes.
  static std::vector<ExchangeStep> steps(int rank, int ranks, size_t count, size_t element_size);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "ring";
  static constexpr const char* kDescription = "ring reduce-scatter, P-1 steps (bandwidth-optimal); rank r gets block r";
  /// Exact messages and bytes of one call (from steps()) and the critical path above.
  static Cost cost(const Problem& problem);
};

}  // namespace concord
