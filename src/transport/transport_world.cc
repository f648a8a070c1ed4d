#include "transport/transport_world.h"

#include "common/enforce.h"

namespace concord {

CommunicatorSet TransportWorld::communicator_set() {
  CommunicatorSet set;
  set.control = duplicate("runtime.control");
  set.data = duplicate("runtime.data");
  set.node_of_rank = node_of_rank();
  set.threads_supported = threads_supported();
  return set;
}

void TransportWorld::require_threads(const std::string& what) const {
  CONCORD_ENFORCE(threads_supported(), StateError, what, " uses the ", origin().transport,
                  " transport from this thread while another thread may use it too, which this world does not "
                  "allow (MPI: MPI_THREAD_MULTIPLE was not provided; initialise MPI with "
                  "MPI_Init_thread(MPI_THREAD_MULTIPLE) or let Concord do it)");
}

}  // namespace concord
