#include "transport/transport_world.h"

#include <algorithm>

#include "common/enforce.h"

namespace concord {

CommunicatorSet TransportWorld::communicator_set() {
  CommunicatorSet set;
  set.control = duplicate("runtime.control");
  set.data = duplicate("runtime.data");
  set.node_of_rank = node_of_rank();
  set.threads_supported = threads_supported();
  set.create_group = [this](const std::vector<int>& members, const std::string& purpose) {
    return create_group(members, purpose);
  };
  return set;
}

void TransportWorld::require_threads(const std::string& what) const {
  CONCORD_ENFORCE(threads_supported(), StateError, what, " uses the ", origin().transport,
                  " transport from this thread while another thread may use it too, which this world does not "
                  "allow (MPI: MPI_THREAD_MULTIPLE was not provided; initialise MPI with "
                  "MPI_Init_thread(MPI_THREAD_MULTIPLE) or let Concord do it)");
}

void check_group_members(const std::vector<int>& members, int rank, int world_size, const std::string& what) {
  std::vector<int64_t> listed(members.begin(), members.end());
  CONCORD_ENFORCE(!members.empty(), InvalidArgument, what, ": a group needs at least one rank");
  for (size_t i = 0; i < members.size(); ++i)
    CONCORD_ENFORCE(members[i] >= 0 && members[i] < world_size && (i == 0 || members[i] > members[i - 1]),
                    InvalidArgument, what, ": ranks ", shape_string(listed), " must be distinct, ascending and in [0, ",
                    world_size, ")");
  CONCORD_ENFORCE(std::binary_search(members.begin(), members.end(), rank), InvalidArgument, what, ": rank ", rank,
                  " is not in ", shape_string(listed), " (only the members create a group)");
}

}  // namespace concord
