// Pure rank arithmetic of Horovod's "cross" communicator: the ranks that have the same
// local rank on their nodes (one per node for a homogeneous launch). cross_rank is this
// rank's position among them (its node's index when every node runs the same number of
// ranks), cross_size their number. Local ranks are numbered by world rank within a node,
// as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED, key 0) numbers them.
#pragma once

#include <vector>

namespace concord::patterns {

struct CrossPosition {
  int rank = 0;  ///< position among the ranks with this rank's local rank
  int size = 1;  ///< number of ranks with this rank's local rank
};

/// Cross position of `rank` given the node index of every world rank (any node labels).
inline CrossPosition cross_position(const std::vector<int>& node_of_rank, int rank) {
  std::vector<int> local_rank(node_of_rank.size(), 0);
  for (size_t r = 0; r < node_of_rank.size(); ++r)
    for (size_t q = 0; q < r; ++q)
      if (node_of_rank[q] == node_of_rank[r]) ++local_rank[r];
  CrossPosition position{0, 0};
  for (size_t r = 0; r < node_of_rank.size(); ++r) {
    if (local_rank[r] != local_rank[rank]) continue;
    if (static_cast<int>(r) < rank) ++position.rank;
    ++position.size;
  }
  return position;
}

}  // namespace concord::patterns
