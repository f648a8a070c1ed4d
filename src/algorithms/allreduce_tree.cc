#include "algorithms/allreduce_tree.h"

#include <algorithm>

#include "patterns/binary_tree.h"

namespace concord {
namespace {
constexpr int kUpTag = 40;
constexpr int kDownTag = 41;
}  // namespace

AllreducePipelinedTree::AllreducePipelinedTree(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : scratch_(scratch),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      pipeline_(comm, patterns::binary_tree(comm.rank(), comm.size()), kUpTag, kDownTag) {}

void AllreducePipelinedTree::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  const auto plan = patterns::ChunkPlan::make(count, dtype_size(dtype), chunk_bytes_);
  pipeline_.start(static_cast<uint8_t*>(data), plan, dtype, op, scratch_.get(TreePipeline::scratch_bytes(plan)));
}

Progress AllreducePipelinedTree::progress() { return pipeline_.progress(); }

Cost AllreducePipelinedTree::cost(const Problem& problem) { return tree_allreduce_cost(problem, 1); }

}  // namespace concord
