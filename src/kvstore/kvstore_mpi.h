// The world communicator a KVStore runs on under mpirun, with the MPI thread-level check
// its design needs.
#pragma once

#include <memory>

#include "kvstore/kvstore.h"

namespace concord::kvstore {

/// ensure_mpi_initialized(), then a new MpiCommunicator duplicating MPI_COMM_WORLD
/// (collective: every rank calls it in the same order). The concurrent and depchain
/// designs call MPI from a progress thread and the calling thread, and the funneled one
/// from the calling thread while Concord's runtime (concord::init) may use its background
/// thread, so all need MPI_THREAD_MULTIPLE except funneled without an active runtime.
/// Throws StateError naming the provided level when MPI provides less.
std::unique_ptr<Communicator> make_mpi_world(KVStoreType type);

}  // namespace concord::kvstore
