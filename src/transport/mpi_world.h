// The TransportWorld of MPI_COMM_WORLD (transport/transport_world.h): the one place outside
// the MpiCommunicator where Concord initialises MPI and asks its thread level.
#pragma once

#include <memory>

#include "transport/transport_world.h"

namespace concord {

/// ensure_mpi_initialized(), then the world of MPI_COMM_WORLD: duplicate() is
/// MPI_Comm_dup, node_of_rank() MPI's shared-memory split, threads_supported() whether MPI
/// provides MPI_THREAD_MULTIPLE. `launcher` names what started the process (WorldOrigin).
/// Throws StateError when MPI was finalized or gives less than MPI_THREAD_SERIALIZED.
std::unique_ptr<TransportWorld> make_mpi_world(const std::string& launcher);

}  // namespace concord
