// AllreduceRecursiveDoubling: the whole vector is exchanged with a partner at doubling
// distances and reduced, log2 rounds; the small-message allreduce of MPICH (Thakur,
// Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH",
// IJHPCA 2005, sec. 4.4), with MPICH's fold for a world size that is not a power of two.
//
// Steps for P ranks and n bytes (pof2 = largest power of two <= P, L = log2 pof2,
// patterns/recursive_doubling.h):
//   fold (P != pof2): each even rank r < 2(P - pof2) sends its n bytes to r + 1, which
//     reduces them into its buffer; r sits out until the last step.
//   L rounds: at distance 1, 2, ..., pof2/2 partners swap their whole n-byte vectors and
//     both compute op(lower virtual rank's vector, higher's), so they hold identical bits.
//   unfold (P != pof2): each odd rank r < 2(P - pof2) sends the n-byte result to r - 1.
// A participant sends L messages of n bytes (a fold pair's odd rank one more, its even
// rank one). Critical path, f = 1 if P != pof2 else 0:
//   T = (L + 2f) alpha + (L + 2f) n beta + (L + f) n gamma.
// Bit-identical on every rank: partners combine in one canonical operand order, so the
// value each pair holds after a round is the same on both (for any op, NaNs included).
// P = 1 or n = 0 sends nothing.
// Per-range completion (take_final_ranges): the whole buffer, once this rank's last
// receiving step (last round, or a folded rank's unfold) has ended: before kDone on the
// ranks that still send the unfold.
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/exchange_schedule.h"

namespace concord {

class AllreduceRecursiveDoubling : public ScheduledReduction<AllreduceAlgorithm, AllreduceRecursiveDoubling> {
 public:
  /// `scratch` persists across calls; it grows to n bytes.
  AllreduceRecursiveDoubling(Communicator& comm, ScratchBuffer& scratch);
  /// On the memory `kernels` work on (their scratch grows to n bytes), over `comm`, which
  /// must take pointers of that memory (the device rows, algorithms/allreduce_device.h).
  /// Both must outlive this object.
  AllreduceRecursiveDoubling(Communicator& comm, Kernels& kernels);

  /// The exchange steps of `rank` of `ranks` for `count` elements of `element_size` bytes.
  static std::vector<ExchangeStep> steps(int rank, int ranks, size_t count, size_t element_size);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "recursive_doubling";
  static constexpr const char* kDescription =
      "whole vector exchanged and reduced log2 P rounds, for small messages (fold when P is not a power of "
      "two)";
  /// Exact messages and bytes of one call (from steps()) and the critical path above.
  static Cost cost(const Problem& problem);
  /// Kernel launches (L + f whole-vector reductions) and message steps (L + 2 f) on its
  /// critical path (schedule_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

}  // namespace concord
