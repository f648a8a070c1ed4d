// BroadcastBinomial: binomial-tree broadcast (patterns/binomial_tree.h). Each non-root
// rank receives the whole message from its parent, then sends it to its children (highest
// bit first). ceil(log2 P) rounds; the root sends ceil(log2 P) * n bytes, every other
// rank receives n bytes. Cost: ceil(log2 P) (alpha + n beta).
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "patterns/binomial_tree.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class BroadcastBinomial : public BroadcastAlgorithm {
 public:
  explicit BroadcastBinomial(Communicator& comm);

  /// Starts broadcasting `bytes` bytes at `data` from `root` (in place on every rank).
  void start(void* data, size_t bytes, int root) override;
  Progress progress() override;

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "binomial";
  static constexpr const char* kDescription = "binomial tree, whole message per edge, ceil(log2 P) rounds";
  /// Cost of broadcasting `problem.count` bytes.
  static Cost cost(const Problem& problem);
  /// What rank `rank` sends for `problem` (count = bytes) when the root is 0.
  static RankTraffic sent_by(const Problem& problem, int rank);

 private:
  Communicator& comm_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::vector<int> children_;
  RequestPtr receive_;
  bool sends_posted_ = false;
  RequestSet sends_;
};

}  // namespace concord
