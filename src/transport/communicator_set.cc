#include "transport/communicator_set.h"

#include <algorithm>

namespace concord {

int CommunicatorSet::local_rank() const {
  const int rank = control->rank();
  if (node_of_rank.empty()) return rank;
  return static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.begin() + rank, node_of_rank[rank]));
}

int CommunicatorSet::local_size() const {
  if (node_of_rank.empty()) return control->size();
  return static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.end(), node_of_rank[control->rank()]));
}

CommunicatorSet split_communicator_set(Communicator& world, std::vector<int> node_of_rank) {
  CommunicatorSet set;
  set.control = world.split(0, world.rank());
  set.data = world.split(0, world.rank());
  set.node_of_rank = std::move(node_of_rank);
  return set;
}

}  // namespace concord
