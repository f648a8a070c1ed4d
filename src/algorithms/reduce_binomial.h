// ReduceBinomial: pipelined binomial-tree reduce to a root (the reduce half of MPICH's
// binomial reduce, Thakur, Rabenseifner & Gropp, IJHPCA 2005, cut into chunks so that the
// levels of the tree work on different chunks at once). The buffer is cut into K chunks
// (patterns::ChunkPlan at chunk_bytes); for chunk c a rank waits for chunk c from each of its
// children (patterns/binomial_tree.h, in children() order), reduces them into its own data
// in that order and sends the result to its parent. Two receive slots per child, so a child
// may run one chunk ahead of its parent's reduction.
//
// Every element is reduced by the same chain on every call: own value, then each child's
// subtree in children() order; the root's result is deterministic.
//
// Per call, P ranks, n bytes, K chunks of c <= chunk_bytes bytes, d = ceil(log2 P): every
// rank but the root sends K messages (n bytes); totals (P-1) K messages, (P-1) n bytes.
// Critical path: d + K - 1 rounds; the root's link carries its d children's n bytes each,
// and the root reduces them: (d + K - 1) alpha + d n beta + d n gamma.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "patterns/chunking.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class ReduceBinomial : public ReduceAlgorithm {
 public:
  /// `scratch` holds two receive slots per child (2 * children * largest chunk bytes);
  /// `chunk_bytes` is the pipelining unit (at least 1).
  ReduceBinomial(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes);

  /// Starts reducing `count` elements of `dtype` at `data` with `op` to `root` (same
  /// arguments on every rank; `data` valid until kDone).
  void start(void* data, size_t count, DataType dtype, ReduceOp op, int root) override;
  Progress progress() override;

  /// Registry name and one-line description (the registry and concord-info read them here).
  static constexpr const char* kName = "binomial";
  static constexpr const char* kDescription =
      "pipelined binomial tree: each chunk reduced from the children in order, then sent to the parent";
  /// Exact counts and critical path of one call (header comment); `problem.count` elements.
  static Cost cost(const Problem& problem);
  /// What rank `rank` sends when the root is 0: K messages, n bytes, except the root.
  static RankTraffic sent_by(const Problem& problem, int rank);

 private:
  uint8_t* slot(size_t child, int chunk);
  void post_receive(size_t child, int chunk);

  Communicator& comm_;
  ScratchBuffer& scratch_;
  size_t chunk_bytes_;
  int parent_ = -1;
  std::vector<int> children_;  // reduction order
  uint8_t* data_ = nullptr;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  patterns::ChunkPlan plan_;
  size_t slot_bytes_ = 0;
  int next_ = 0;                                   // next chunk to reduce and send up
  std::vector<std::vector<RequestPtr>> receives_;  // by child, by slot (chunk % 2)
  RequestSet sends_;
};

}  // namespace concord
