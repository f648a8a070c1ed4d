// make_ucx_world() of a build without UCX (CONCORD_WITH_UCX=OFF, or AUTO without libucx-dev).
#include "common/enforce.h"
#include "transport/ucx_world.h"

namespace concord {

bool ucx_available() { return false; }

std::unique_ptr<TransportWorld> make_ucx_world(const LaunchEnvironment& env, rendezvous::OpenStore,
                                               std::chrono::milliseconds) {
  CONCORD_THROW(StateError, "Concord (", env.describe(),
                ") needs the UCX transport to start without an MPI launcher, but was built without UCX "
                "(CONCORD_WITH_UCX=OFF or libucx-dev missing); rebuild with UCX or start it under mpirun");
}

}  // namespace concord
