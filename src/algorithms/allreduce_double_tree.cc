#include "algorithms/allreduce_double_tree.h"

#include <algorithm>

#include "patterns/binary_tree.h"

namespace concord {
namespace {
constexpr int kUpTag[2] = {42, 44};
constexpr int kDownTag[2] = {43, 45};
}  // namespace

AllreduceDoubleTree::AllreduceDoubleTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : scratch_(scratch),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      trees_{TreePipeline(comm, patterns::double_binary_tree(comm.rank(), comm.size(), 0), kUpTag[0], kDownTag[0]),
             TreePipeline(comm, patterns::double_binary_tree(comm.rank(), comm.size(), 1), kUpTag[1], kDownTag[1])} {}

void AllreduceDoubleTree::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  const size_t element_size = dtype_size(dtype);
  patterns::ChunkPlan plans[2];
  for (int t = 0; t < 2; ++t)
    plans[t] = patterns::ChunkPlan::make(patterns::segment(count, 2, t).count, element_size, chunk_bytes_);
  const size_t first_scratch = TreePipeline::scratch_bytes(plans[0]);
  uint8_t* scratch = scratch_.get(first_scratch + TreePipeline::scratch_bytes(plans[1]));
  auto* bytes = static_cast<uint8_t*>(data);
  trees_[0].start(bytes, plans[0], dtype, op, scratch);
  trees_[1].start(bytes + patterns::segment(count, 2, 1).offset * element_size, plans[1], dtype, op,
                  scratch + first_scratch);
}

Progress AllreduceDoubleTree::progress() {
  const Progress first = trees_[0].progress();
  const Progress second = trees_[1].progress();
  return first == Progress::kDone && second == Progress::kDone ? Progress::kDone : Progress::kInProgress;
}

Cost AllreduceDoubleTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 2); }

}  // namespace concord
