// AlltoallPairwise: all-to-all by pairwise exchange (Thakur, Rabenseifner & Gropp,
// "Optimization of Collective Communication Operations in MPICH", IJHPCA 2005; MPICH's and
// Open MPI's pairwise alltoall). The own block is copied locally; then P-1 steps, one at a
// time: at step s rank r sends block (r+s) mod P to rank (r+s) mod P and receives block
// (r-s) mod P from rank (r-s) mod P (both partners r XOR s when P is a power of two;
// patterns::PairwiseExchange). Step s+1 is posted once both messages of step s completed.
//
// Steps and bytes on the wire for P ranks and blocks of b bytes: P-1 steps; every rank sends
// (P-1) b bytes in P-1 messages (zero-byte messages when b = 0). Totals P (P-1) b bytes,
// P (P-1) messages. Cost: (P-1) (alpha + b beta).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "patterns/pairwise.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class AlltoallPairwise : public AlltoallAlgorithm {
 public:
  explicit AlltoallPairwise(Communicator& comm);

  /// Starts the exchange: `send` holds P blocks of `block_bytes` bytes (block j for rank j);
  /// afterwards block i of `recv` holds rank i's block for this rank. `send` and `recv` must
  /// not overlap and stay valid until progress() returns kDone.
  void start(const void* send, void* recv, size_t block_bytes) override;
  Progress progress() override;

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "pairwise";
  static constexpr const char* kDescription = "pairwise exchange, P-1 steps, one partner per step";
  /// Cost of an alltoall where every rank sends `problem.count` bytes in all (P blocks).
  static Cost cost(const Problem& problem);

 private:
  void post_step();

  Communicator& comm_;
  patterns::PairwiseExchange pattern_;
  const uint8_t* send_ = nullptr;
  uint8_t* recv_ = nullptr;
  size_t block_bytes_ = 0;
  int step_ = 1;  // step in flight; P = done
  RequestPtr send_request_;
  RequestPtr receive_request_;
};

}  // namespace concord
