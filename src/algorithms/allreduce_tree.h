// AllreducePipelinedTree: reduce up a binary tree, then broadcast down it, each phase
// pipelined in K chunks (Sanders, Speck & Traeff, "Two-tree algorithms for full bandwidth
// broadcast, reduction and scan", Parallel Computing 2009; NCCL's tree algorithm). The tree is
// patterns::binary_tree (rank 0 the root, height D = ceil(log2 P)); the engine is
// TreePipeline (algorithms/tree_pipeline.h). Baseline: the broadcast starts only after the
// root has reduced every chunk (C-Cube overlaps them: AllreduceOverlappedTree).
//
// Steps and bytes on the wire for P ranks, n bytes, K = ceil(n / chunk_bytes) chunks of
// c <= chunk_bytes bytes: reduce phase D + K - 1 pipeline steps, broadcast phase D + K - 1
// steps. Rank r with k children sends (k + 1) n bytes in (k + 1) K messages (the root k n
// in k K). Totals 2 (P-1) n bytes, 2 (P-1) K messages.
// Cost (one port per rank; an inner node receives, reduces, and sends 2 chunks per step):
//   2 (D + K - 1) alpha + 4 c (D + K - 1) beta + 2 c (D + K - 1) gamma
//   ~ 2 D alpha + 4 n beta + 2 n gamma for K >> D: latency-optimal, not bandwidth-optimal.
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/tree_pipeline.h"
#include "transport/communicator.h"

namespace concord {

class AllreducePipelinedTree : public TreeAllreduce {
 public:
  /// `scratch` persists across calls (2 x TreePipeline::kWindow chunks); `chunk_bytes` is the
  /// pipelining unit (at least one element per chunk). start() and progress(): TreeAllreduce.
  AllreducePipelinedTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = default_chunk_bytes());
  /// On the memory `kernels` work on (e.g. DeviceKernels: device memory), over `comm`, which
  /// must take pointers of that memory (the device rows, algorithms/allreduce_device.h).
  /// `comm` and `kernels` must outlive this object.
  AllreducePipelinedTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "tree";
  static constexpr const char* kDescription = "binary tree reduce then broadcast, chunk-pipelined (log P latency)";
  /// Exact messages and bytes of one call, and its critical path (header comment).
  static Cost cost(const Problem& problem);
  /// Kernel launches and message steps on its critical path (tree_allreduce_device_steps()).
  static DeviceSteps device_steps(const Problem& problem);
};

}  // namespace concord
