// Helpers of the bindings that own an MPI communicator of their own (bind_sparse.cc,
// bind_algorithm.cc).
#pragma once

#include <mpi.h>

#include "common/enforce.h"
#include "concord/concord.h"

namespace concord {

/// Throws StateError unless MPI allows calls from several threads at once: the runtime's
/// background thread calls MPI while concord.init() is active, and `what` (an object of
/// these bindings) calls it from the Python thread.
inline void require_thread_multiple_if_runtime_active(const char* what) {
  if (!is_initialized()) return;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  CONCORD_ENFORCE(provided == MPI_THREAD_MULTIPLE, StateError, what, ": MPI provides thread level ", provided,
                  " but this object calls MPI from the Python thread while Concord's background thread "
                  "runs, which needs MPI_THREAD_MULTIPLE (",
                  MPI_THREAD_MULTIPLE, ")");
}

}  // namespace concord
