#include "algorithms/allreduce_tree.h"

#include "patterns/binary_tree.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kUpTag = tags::kTreeUp;
constexpr int kDownTag = tags::kTreeDown;

std::vector<TreePipeline> binary_tree_pipeline(Communicator& comm) {
  std::vector<TreePipeline> trees;
  trees.emplace_back(comm, patterns::binary_tree(comm.rank(), comm.size()), kUpTag, kDownTag);
  return trees;
}
}  // namespace

AllreducePipelinedTree::AllreducePipelinedTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : TreeAllreduce(scratch, chunk_bytes, binary_tree_pipeline(comm)) {}

AllreducePipelinedTree::AllreducePipelinedTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : TreeAllreduce(kernels, chunk_bytes, binary_tree_pipeline(comm)) {}

Cost AllreducePipelinedTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 1); }

DeviceSteps AllreducePipelinedTree::device_steps(const Problem& problem) {
  return tree_allreduce_device_steps(problem, 1);
}

}  // namespace concord
