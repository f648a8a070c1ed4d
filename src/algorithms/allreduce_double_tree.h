// AllreduceDoubleTree: NCCL's double binary tree (Sanders, Speck & Traeff, "Two-tree
// algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing 2009).
// Two complementary trees (patterns::double_binary_tree: tree 1 mirrors tree 0 for even P
// and shifts it by one for odd P) run concurrently, each a pipelined reduce-then-broadcast
// (TreePipeline) over half of the data: elements segment(count, 2, 0) on tree 0, the rest
// on tree 1. Each element is reduced along one tree in one order, then copied down it:
// bit-identical results.
//
// Steps and bytes on the wire for P ranks, n bytes, K = ceil((n/2) / chunk_bytes) chunks per
// tree of c <= chunk_bytes bytes, D = ceil(log2 P): each phase D + K - 1 steps of both trees
// at once. Rank r sends, in tree t where it has k_t children, (k_t + 1) n/2 bytes in
// (k_t + 1) K messages (k_t at that tree's root). Totals 2 (P-1) n bytes, 4 (P-1) K messages.
// Since a rank is inner (2 children) in at most one tree, its port carries 2 chunks per step
// (3 for rank 0 at odd P, which NCCL's shift leaves inner in both trees):
//   2 (D + K - 1) alpha + 2 f c (D + K - 1) beta + f c (D + K - 1) gamma, f = 2 (3)
//   ~ 2 D alpha + 2 n beta + n gamma for K >> D: twice the single tree's bandwidth.
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/tree_pipeline.h"
#include "transport/communicator.h"

namespace concord {

class AllreduceDoubleTree : public TreeAllreduce {
 public:
  /// `scratch` persists across calls (2 x 2 x TreePipeline::kWindow chunks); `chunk_bytes` is the
  /// pipelining unit (at least one element per chunk). start() and progress(): TreeAllreduce.
  AllreduceDoubleTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = default_chunk_bytes());
  /// On the memory `kernels` work on (e.g. DeviceKernels: device memory), over `comm`, which
  /// must take pointers of that memory (the device rows, algorithms/allreduce_device.h).
  /// `comm` and `kernels` must outlive this object.
  AllreduceDoubleTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "double_tree";
  static constexpr const char* kDescription =
      "two complementary binary trees, half the data each, chunk-pipelined (NCCL)";
  /// Exact messages and bytes of one call, and its critical path (header comment).
  static Cost cost(const Problem& problem);
  /// Kernel launches and message steps on its critical path (tree_allreduce_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

}  // namespace concord
