#include "kvstore/kvstore_mpi.h"

#include "common/enforce.h"
#include "concord/concord.h"
#include "transport/mpi_communicator.h"

namespace concord::kvstore {

std::unique_ptr<Communicator> make_mpi_world(KVStoreType type) {
  ensure_mpi_initialized();
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  const bool needs_multiple = type != KVStoreType::kFunneled || concord::is_initialized();
  CONCORD_ENFORCE(!needs_multiple || provided >= MPI_THREAD_MULTIPLE, StateError, "KVStore '", kvstore_type_name(type),
                  "' calls MPI from several threads and needs MPI_THREAD_MULTIPLE (", MPI_THREAD_MULTIPLE,
                  "), but MPI provides level ", provided,
                  "; initialise MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) or let Concord do it");
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

}  // namespace concord::kvstore
