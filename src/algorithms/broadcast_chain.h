// BroadcastChain: pipelined chain broadcast (the "pipelined chain" of Traeff & Ripke,
// "Optimal broadcast for fully connected processor-node networks", JPDC 2008; MPICH's and
// Open MPI's chain/pipeline bcast). The message is cut into K chunks; the root sends
// chunk c to root+1, and every rank forwards each chunk to the next rank as soon as it has
// arrived (patterns::Chain), so the chunks flow down the chain one behind the other.
//
// Steps and bytes on the wire for P ranks, n bytes, K = ceil(n / chunk_bytes) chunks of
// c <= chunk_bytes bytes (K = 0 for n = 0: nothing is sent): P-1 + K-1 pipeline steps;
// every rank but the last sends n bytes in K messages. Totals (P-1) n bytes, (P-1) K messages.
// Cost: (P-1 + K-1) (alpha + c beta) ~ (P-1) alpha + n beta for K >> P: bandwidth-optimal
// for large messages, linear latency.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "patterns/chain.h"
#include "patterns/chunking.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class BroadcastChain : public BroadcastAlgorithm {
 public:
  /// `chunk_bytes` is the pipelining unit (at least 1).
  explicit BroadcastChain(Communicator& comm, size_t chunk_bytes = default_chunk_bytes());

  /// Starts broadcasting `bytes` bytes at `data` from `root` (in place on every rank; every
  /// rank passes the same bytes and root). `data` stays valid until progress() is kDone.
  void start(void* data, size_t bytes, int root) override;
  Progress progress() override;

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "chain";
  static constexpr const char* kDescription = "pipelined chain root -> root+1 -> ..., chunked (large messages)";
  /// Cost of broadcasting `problem.count` bytes (header comment).
  static Cost cost(const Problem& problem);
  /// What rank `rank` sends for `problem` (count = bytes) when the root is 0.
  static RankTraffic sent_by(const Problem& problem, int rank);

 private:
  Communicator& comm_;
  size_t chunk_bytes_;
  uint8_t* data_ = nullptr;
  patterns::Chain chain_{0, 1, 0};
  patterns::ChunkPlan plan_;
  int next_ = 0;                      // next chunk to arrive and be forwarded
  std::vector<RequestPtr> receives_;  // by chunk
  RequestSet sends_;
};

}  // namespace concord
