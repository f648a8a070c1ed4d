// AllgatherRing: ring allgather of variable-size blocks (allgatherv). Rank r starts with
// block r in place in the output; at step s (0..P-2) it sends block (r - s) mod P to the
// right and receives block (r - s - 1) mod P from the left, forwarding each block as soon
// as it arrives. P-1 steps; each rank receives every block but its own and sends every
// block but its right neighbour's.
// Cost: (P-1) alpha + (P-1)/P n beta for equal blocks of n/P bytes.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "patterns/ring.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class AllgatherRing : public AllgatherAlgorithm {
 public:
  explicit AllgatherRing(Communicator& comm);

  /// Starts the allgather into `output`, which holds P blocks back to back in rank order,
  /// block r being `block_bytes[r]` bytes; this rank's own block must already be in place.
  /// Every rank must pass the same block_bytes. `output` must stay valid until kDone.
  void start(void* output, const std::vector<size_t>& block_bytes) override;
  Progress progress() override;

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "ring";
  static constexpr const char* kDescription = "ring allgather of variable-size blocks, P-1 steps";
  /// Cost for `problem.count` output bytes cut into P near-equal blocks (patterns::segment).
  static Cost cost(const Problem& problem);

 private:
  uint8_t* block(int index) const { return output_ + offsets_[index]; }

  Communicator& comm_;
  patterns::Ring ring_;
  uint8_t* output_ = nullptr;
  std::vector<size_t> offsets_;
  std::vector<size_t> bytes_;
  int step_ = 0;
  std::vector<RequestPtr> receives_;  // by step
  RequestSet sends_;
};

}  // namespace concord
