#include "algorithms/allreduce_double_tree.h"

#include "patterns/binary_tree.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr const int* kUpTag = tags::kDoubleTreeUp;
constexpr const int* kDownTag = tags::kDoubleTreeDown;

std::vector<TreePipeline> double_tree_pipelines(Communicator& comm) {
  std::vector<TreePipeline> trees;
  for (int t = 0; t < 2; ++t)
    trees.emplace_back(comm, patterns::double_binary_tree(comm.rank(), comm.size(), t), kUpTag[t], kDownTag[t]);
  return trees;
}
}  // namespace

AllreduceDoubleTree::AllreduceDoubleTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : TreeAllreduce(scratch, chunk_bytes, double_tree_pipelines(comm)) {}

AllreduceDoubleTree::AllreduceDoubleTree(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : TreeAllreduce(kernels, chunk_bytes, double_tree_pipelines(comm)) {}

Cost AllreduceDoubleTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 2); }

DeviceSteps AllreduceDoubleTree::device_steps(const Problem& problem) {
  return tree_allreduce_device_steps(problem, 2);
}

}  // namespace concord
