// The one way into a transport: a TransportWorld is the set of ranks this process belongs
// to on one transport (MPI_COMM_WORLD under mpirun, a UCX world bootstrapped through a
// key-value store otherwise), and the only maker of Communicators outside the unit tests.
// The runtime (its control and data communicators), the sparse allreducer, the KVStore
// and the benchmarks each take a named duplicate of it (duplicate()), so their traffic
// never meets; the check whether a communicator may be used from several threads at once
// (MPI's thread level) is made here and nowhere else. process_world() picks the transport
// once per process from CONCORD_TRANSPORT (transport_select.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/communicator.h"
#include "transport/communicator_set.h"

namespace concord {

/// Where this process's world came from (for concord-info and error messages).
struct WorldOrigin {
  std::string transport;   ///< "mpi" or "ucx"
  std::string launcher;    ///< what started the process: "mpirun", "torchrun", "slurm", "concord-run", "none"
  std::string rendezvous;  ///< how the ranks found each other: "MPI_Init", "file:PATH", "tcp:HOST:PORT", "pmix", "none"
};

class TransportWorld {
 public:
  virtual ~TransportWorld() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const WorldOrigin& origin() const = 0;

  /// A new communicator over every rank of the world, in world rank order, with its own
  /// matching space (an MPI_Comm_dup, a fresh UCX communicator id). `purpose` names it in
  /// errors and logs ("runtime.control", "sparse", "kvstore", ...). Collective: every rank
  /// calls duplicate() in the same order. Throws CommError on transport failure.
  virtual std::unique_ptr<Communicator> duplicate(const std::string& purpose) = 0;

  /// A new communicator over the world ranks `members` (ascending, distinct, this rank
  /// among them; its rank r is world rank members[r]) with its own matching space, named
  /// `purpose` in errors. Collective over the members only: the other ranks call nothing
  /// (MPI: MPI_Comm_create_group; UCX: the members agree on a communicator id by messages
  /// among themselves). Groups that share ranks must be created in the same order on
  /// those ranks, and one rank creates its groups one at a time. Throws InvalidArgument
  /// for bad members, CommError on transport failure or when the members named different
  /// groups.
  virtual std::unique_ptr<Communicator> create_group(const std::vector<int>& members, const std::string& purpose) = 0;

  /// Node (host) of every world rank, numbered 0, 1, ... in order of each node's lowest
  /// rank. Collective the first time (ranks exchange host identities), cached after.
  virtual const std::vector<int>& node_of_rank() = 0;

  /// True when communicators of this world may be used from several threads at once (MPI:
  /// MPI_THREAD_MULTIPLE was provided; UCX: always, the worker is serialised by a lock).
  virtual bool threads_supported() const = 0;
  /// Makes every transfer of this world, pending or later, fail with CommError(reason)
  /// (on this rank; the others learn it from their own abort or their failed transfers):
  /// how a world is abandoned when a peer is declared lost by someone else (elastic
  /// training's driver). UCX only: throws StateError for MPI, whose world ends the job.
  virtual void abort(const std::string& reason);

  /// The communicators of one runtime: duplicates "runtime.control" and "runtime.data",
  /// the node of every rank, threads_supported(). Collective.
  CommunicatorSet communicator_set();

  /// Throws StateError naming `what` unless several threads may use this world's
  /// communicators at once: `what` calls the transport from the caller's thread while
  /// another (Concord's background thread, a KVStore progress thread) may call it too.
  void require_threads(const std::string& what) const;
};

/// Throws InvalidArgument (naming `what`) unless `members` is non-empty, ascending, within
/// [0, world_size) and contains `rank`.
void check_group_members(const std::vector<int>& members, int rank, int world_size, const std::string& what);

/// The world of this process on the transport CONCORD_TRANSPORT selects (mpi, ucx or auto:
/// MPI when an MPI launcher started the process, else UCX; transport_select.cc), created
/// on the first call (collective then: every rank of the job must call it) and kept until
/// the process exits. Throws StateError when the environment says this process is one of
/// several but it cannot join them (never a silent world of one), CommError when the
/// rendezvous fails or times out (CONCORD_INIT_TIMEOUT).
TransportWorld& process_world();

/// Leaves this process's world so that the next process_world() joins a new one, read
/// afresh from the environment (RANK, WORLD_SIZE, CONCORD_RUN_ID, CONCORD_STORE): how
/// elastic training re-forms the world among the surviving and added workers. The old
/// world's endpoints are closed (to dead peers too); communicators still holding it fail
/// from then on. Call only when no runtime uses the world (concord::shutdown() first).
/// No-op without a world. Throws StateError for an MPI world (MPI is initialised once
/// per process and Open MPI 4.1 has no fault-tolerant re-forming).
void leave_process_world();
/// TransportWorld::abort(reason) on this process's world if it has one (else nothing):
/// callable from any thread while another waits in a transfer. Throws StateError for MPI.
void abort_process_world(const std::string& reason);
/// The world process_world() would join, without joining: "mpi" or "ucx", and why
/// (for concord-info). Throws InvalidArgument for a malformed CONCORD_TRANSPORT.
std::string describe_transport_choice();

}  // namespace concord
