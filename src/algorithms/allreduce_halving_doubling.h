// AllreduceHalvingDoubling: Rabenseifner's allreduce, a recursive-halving reduce-scatter
// followed by a recursive-doubling allgather (Rabenseifner, "Optimization of Collective
// Reduction Operations", ICCS 2004; Thakur, Rabenseifner & Gropp, IJHPCA 2005, sec. 4.4),
// with MPICH's fold for a world size that is not a power of two.
//
// Steps for P ranks and n bytes (pof2 = largest power of two <= P, L = log2 pof2, the
// buffer cut into pof2 near-equal blocks, patterns/recursive_doubling.h):
//   fold (P != pof2): each even rank r < 2(P - pof2) sends all n bytes to r + 1, which
//     reduces them into its buffer; r sits out until the last step.
//   L halving rounds: at distance pof2/2, pof2/4, ..., 1 each participant sends the half
//     of its current range it does not keep (n/2, n/4, ..., n/pof2 bytes) and reduces the
//     partner's copy of the other half; virtual rank v ends owning block v.
//   L doubling rounds: at distance 1, 2, ..., pof2/2 partners swap what they own
//     (n/pof2, ..., n/2 bytes), in place.
//   unfold (P != pof2): each odd rank r < 2(P - pof2) sends the n-byte result to r - 1.
// Every range of more than CONCORD_RING_CHUNK_BYTES goes in pieces of that size, each
// reduced as it lands (ExchangeSchedule): the received half stays in cache and the
// scratch is two pieces; shared memory at 64 MiB, 2 ranks: 15.3-16.4 ms against 20.6-23.2 ms as
// whole ranges (concord-bench, measured when the pieces were introduced).
// Each participant sends 2 (pof2-1)/pof2 n bytes in 2L ranges; a fold pair's odd rank n
// more in 1 more, its even rank n in 1. Critical path with b = the largest block:
//   T = (2L + 2f + e) alpha + (2 (pof2-1) b + 2 f n) beta + ((pof2-1) b + f n) gamma,
// e = the messages the pieces add to the busiest rank's ranges (0 when every range fits
// in one piece),
// f = 1 if P != pof2 else 0; on a power of two 2 log P alpha + 2 (P-1)/P n beta +
// (P-1)/P n gamma. Every element is reduced by one chain (its block's owner) and then
// copied, so all ranks end bit-identical. P = 1 or n = 0 sends nothing.
// Per-range completion (take_final_ranges): a rank's own block is final after the last
// halving round, each block received in a doubling round when that round ends, a
// folded-out rank's whole buffer when it comes back; for P > 1 they cover the buffer.
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/exchange_schedule.h"

namespace concord {

class AllreduceHalvingDoubling : public ScheduledReduction<AllreduceAlgorithm, AllreduceHalvingDoubling> {
 public:
  /// `scratch` persists across calls; it grows to two pieces of `chunk_bytes` (or n/2 bytes,
  /// n when P is not a power of two, if that is less). Messages of more than `chunk_bytes`
  /// go in pieces, each reduced as it lands (ExchangeSchedule; 0 = whole ranges).
  AllreduceHalvingDoubling(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = 0);
  /// On the memory `kernels` work on (e.g. DeviceKernels: device memory; their scratch holds
  /// the receive pieces), over `comm`, which must take pointers of that memory (the device
  /// rows, algorithms/allreduce_device.h). Both must outlive this object.
  AllreduceHalvingDoubling(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// The exchange steps of `rank` of `ranks` for `count` elements of `element_size` bytes.
  static std::vector<ExchangeStep> steps(int rank, int ranks, size_t count, size_t element_size);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "halving_doubling";
  static constexpr const char* kDescription =
      "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather, 2 log2 P rounds (fold "
      "when P is not a power of two)";
  /// Exact messages and bytes of one call (from steps()) and the critical path above.
  static Cost cost(const Problem& problem);
  /// Kernel launches (the busiest rank's reduced pieces) and message steps (cost().rounds)
  /// on its critical path (schedule_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

}  // namespace concord
