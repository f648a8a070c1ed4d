#include "algorithms/tree_chunking.h"

#include <algorithm>

#include "algorithms/allreduce_device.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "common/config.h"
#include "common/enforce.h"
#include "patterns/ring.h"

namespace concord {

int tree_count(const std::string& algorithm) {
  const std::string host = host_algorithm_of(algorithm);  // the device rows run the host trees
  if (host == "tree" || host == "overlapped_tree") return 1;
  if (host == "double_tree" || host == "overlapped_double_tree") return 2;
  return 0;
}

bool tree_overlapped(const std::string& algorithm) {
  const std::string host = host_algorithm_of(algorithm);
  return host == "overlapped_tree" || host == "overlapped_double_tree";
}

Problem tree_chunked_problem(const std::string& algorithm, const Problem& problem, int64_t tree_chunks,
                             const CostParams& params) {
  CONCORD_ENFORCE(tree_chunks >= kTreeChunksTurnaround, InvalidArgument, "tree_chunks=", tree_chunks,
                  " is neither kTreeChunksFromBytes, kTreeChunksAuto, kTreeChunksTurnaround nor a chunk count >= 1");
  const int trees = tree_count(algorithm);
  if (trees == 0 || tree_chunks == kTreeChunksFromBytes || problem.count == 0) return problem;
  Problem tree_share = problem;  // what tree 0 pipelines
  tree_share.count = patterns::segment(problem.count, trees, 0).count;
  Problem result = problem;
  if (tree_chunks == kTreeChunksAuto) {
    result.chunk_bytes = optimal_chunk_bytes(tree_share, params);
  } else if (tree_chunks == kTreeChunksTurnaround) {
    // More chunks = smaller chunks: the smaller of the two sizes has the larger K.
    if (tree_overlapped(algorithm))
      result.chunk_bytes = std::min(problem.chunk_bytes, optimal_chunk_bytes(tree_share, params));
  } else {
    const size_t chunks = static_cast<size_t>(tree_chunks);
    const size_t elements = std::max<size_t>((tree_share.count + chunks - 1) / chunks, 1);
    result.chunk_bytes = elements * problem.element_size;
  }
  return result;
}

}  // namespace concord
