#include "algorithms/allreduce_overlapped_tree.h"

#include <algorithm>
#include <cmath>

#include "patterns/binary_tree.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr const int* kUpTag = tags::kOverlappedTreeUp;
constexpr const int* kDownTag = tags::kOverlappedTreeDown;

/// The overlapped pipelines of `trees` trees: 1 = the binary tree, 2 = the double binary tree.
std::vector<TreePipeline> overlapped_pipelines(Communicator& comm, int trees) {
  std::vector<TreePipeline> pipelines;
  for (int t = 0; t < trees; ++t) {
    const patterns::TreeNode node = trees == 1 ? patterns::binary_tree(comm.rank(), comm.size())
                                               : patterns::double_binary_tree(comm.rank(), comm.size(), t);
    pipelines.emplace_back(comm, node, kUpTag[t], kDownTag[t], /*overlap=*/true);
  }
  return pipelines;
}
}  // namespace

AllreduceOverlappedTree::AllreduceOverlappedTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : TreeAllreduce(scratch, chunk_bytes, overlapped_pipelines(comm, 1)) {}

AllreduceOverlappedTree::AllreduceOverlappedTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : TreeAllreduce(kernels, chunk_bytes, overlapped_pipelines(comm, 1)) {}

Cost AllreduceOverlappedTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 1, true); }

DeviceSteps AllreduceOverlappedTree::device_steps(const Problem& problem) {
  return tree_allreduce_device_steps(problem, 1, true);
}

AllreduceOverlappedDoubleTree::AllreduceOverlappedDoubleTree(Communicator& comm, ScratchBuffer& scratch,
                                                             size_t chunk_bytes)
    : TreeAllreduce(scratch, chunk_bytes, overlapped_pipelines(comm, 2)) {}

AllreduceOverlappedDoubleTree::AllreduceOverlappedDoubleTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : TreeAllreduce(kernels, chunk_bytes, overlapped_pipelines(comm, 2)) {}

Cost AllreduceOverlappedDoubleTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 2, true); }

DeviceSteps AllreduceOverlappedDoubleTree::device_steps(const Problem& problem) {
  return tree_allreduce_device_steps(problem, 2, true);
}

size_t overlapped_tree_chunks(const Problem& problem, const CostParams& params) {
  if (problem.count == 0) return 1;
  const double alpha = problem.nodes > 1 ? params.inter_alpha : params.alpha;
  const double beta = problem.nodes > 1 ? params.inter_beta : params.beta;
  const double depth = std::max(patterns::tree_height(problem.ranks), 1);
  const double k = std::sqrt(depth * beta * static_cast<double>(problem.bytes()) / alpha);
  return static_cast<size_t>(std::clamp(std::llround(k), 1LL, static_cast<long long>(problem.count)));
}

size_t optimal_chunk_bytes(const Problem& problem, const CostParams& params) {
  const size_t chunks = overlapped_tree_chunks(problem, params);
  const size_t elements = std::max<size_t>((problem.count + chunks - 1) / chunks, 1);
  return elements * problem.element_size;
}

}  // namespace concord
