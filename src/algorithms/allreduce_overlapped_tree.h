// AllreduceOverlappedTree and AllreduceOverlappedDoubleTree: C-Cube's overlapped tree
// allreduce (Jo, Son & Kim, "Logical/Physical Topology-Aware Collective Communication in
// Deep Learning Training", HPCA 2023). The same trees, chunks, messages and reduction order
// as AllreducePipelinedTree ("tree") and AllreduceDoubleTree ("double_tree"), but the
// broadcast is chained behind the reduction per chunk: the root sends chunk i down as soon
// as it has reduced it, while chunks i+1.. are still being reduced on the way up, and every
// inner node forwards chunk i down as soon as it arrives (TreePipeline with overlap = true).
// Uplinks and downlinks are busy at once, and chunk i is final on every rank after
// 2 D + i pipeline steps instead of 2 D + K - 1 + i (D = ceil(log2 P)): the gradient
// turnaround time of the paper.
//
// Steps and bytes on the wire for P ranks, n bytes, K = ceil(n / chunk_bytes) chunks per
// tree of c <= chunk_bytes bytes: one pipeline of 2 D + K - 1 steps. Exact counts as the
// baseline: rank r with k children sends (k + 1) n bytes in (k + 1) K messages per tree it
// is in (the root k n in k K; the double tree sends n/2 per tree). Totals 2 (P-1) n bytes,
// 2 (P-1) K messages (single tree), 4 (P-1) K (double tree).
// Cost (one port per rank, so a step carries every link's chunk: g = the most children +
// parent links of a rank over all trees, 3 single tree, 4 double tree, 5 at odd P):
//   (2 D + K - 1) alpha + g c (2 D + K - 1) beta + f c (D + K - 1) gamma.
// With a full-duplex link per tree edge (the paper's and the spec's model) a step costs one
// chunk: T ~ (2 D + K)(alpha + beta n/K) = 2 D alpha + beta n + 3 sqrt(alpha beta n D) at
// K_opt = sqrt(D beta n / alpha) (optimal_chunk_bytes()).
//
// Choice of K: like the baseline, K follows the chunk size (ctx.chunk_bytes, which make_problem
// copies into Problem::chunk_bytes), so cost() is exact from the Problem alone. A caller
// that wants C-Cube's K_opt sets the chunk size to optimal_chunk_bytes(problem, params); the
// counts stay exact because cost() and the algorithm read the same chunk size.
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/tree_pipeline.h"
#include "transport/communicator.h"

namespace concord {

/// C-Cube on one binary tree (patterns::binary_tree, rank 0 the root); registry name
/// "overlapped_tree". start() and progress(): TreeAllreduce (every dtype and op; kAverage
/// reduces as kSum and the caller scales).
class AllreduceOverlappedTree : public TreeAllreduce {
 public:
  /// `scratch` persists across calls (2 x TreePipeline::kWindow chunks); `chunk_bytes` is
  /// the pipelining unit (at least one element per chunk).
  AllreduceOverlappedTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = default_chunk_bytes());
  /// On the memory `kernels` work on, over `comm`, which must take pointers of that memory
  /// (the device rows, algorithms/allreduce_device.h); both must outlive this object.
  AllreduceOverlappedTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "overlapped_tree";
  static constexpr const char* kDescription =
      "C-Cube: binary tree, each chunk broadcast down as soon as the root has reduced it (reduce and "
      "broadcast overlapped)";
  /// Exact messages and bytes of one call, and its critical path (header comment).
  static Cost cost(const Problem& problem);
  /// Kernel launches and message steps on its critical path (tree_allreduce_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

/// C-Cube on NCCL's double binary tree (patterns::double_binary_tree), tree t on elements
/// patterns::segment(count, 2, t); registry name "overlapped_double_tree".
class AllreduceOverlappedDoubleTree : public TreeAllreduce {
 public:
  /// `scratch` persists across calls (2 x 2 x TreePipeline::kWindow chunks); `chunk_bytes`
  /// is the pipelining unit (at least one element per chunk).
  AllreduceOverlappedDoubleTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = default_chunk_bytes());
  /// On the memory `kernels` work on, over `comm`, which must take pointers of that memory
  /// (the device rows, algorithms/allreduce_device.h); both must outlive this object.
  AllreduceOverlappedDoubleTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "overlapped_double_tree";
  static constexpr const char* kDescription =
      "C-Cube on the double binary tree, half the data each, reduce and broadcast overlapped";
  /// Exact messages and bytes of one call, and its critical path (header comment).
  static Cost cost(const Problem& problem);
  /// Kernel launches and message steps on its critical path (tree_allreduce_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

/// C-Cube's chunk count for `problem` (all its bytes on one tree):
/// K_opt = sqrt(D beta n / alpha), D = ceil(log2 P), clamped to [1, count]; alpha and beta
/// are params' inter-node constants when problem.nodes > 1, else the intra-node ones.
size_t overlapped_tree_chunks(const Problem& problem, const CostParams& params);

/// The chunk size in bytes that gives overlapped_tree_chunks() chunks: ceil(count / K)
/// elements (at least one element; element_size bytes each).
size_t optimal_chunk_bytes(const Problem& problem, const CostParams& params);

}  // namespace concord
