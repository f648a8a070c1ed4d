// Communicator over an MPI communicator (Open MPI or MPICH), plus the process-wide MPI
// environment (who initialised MPI, thread level, node-local split).
#pragma once

#include <mpi.h>

#include "transport/communicator.h"
#include "transport/communicator_set.h"
#include "transport/device_pointers.h"

namespace concord {

/// Makes sure MPI is initialised with at least MPI_THREAD_SERIALIZED (Concord's
/// background thread calls MPI). If this call initialised MPI, MPI_Finalize is registered
/// to run at process exit. Throws StateError if MPI was finalized or initialised by
/// someone else with a thread level below MPI_THREAD_SERIALIZED.
void ensure_mpi_initialized();

/// Owns a duplicate of `parent` (so Concord's traffic never matches the application's)
/// with MPI_ERRORS_RETURN; failures throw CommError naming the call and the peer. Offers
/// MPI's own allreduce as its NativeCollectives (native() returns this), and says whether
/// MPI takes CUDA device pointers (DevicePointerTransport: mpi_cuda_support()).
class MpiCommunicator : public Communicator,
                        public NativeCollectives,
                        public AnySourceReceive,
                        public DevicePointerTransport {
 public:
  explicit MpiCommunicator(MPI_Comm parent);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  /// MPI_Irecv in pieces (transport/message_split.h); test() throws CommError naming the
  /// peer, the tag and both sizes when a piece matched a message of another length.
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  /// MPI_Irecv from MPI_ANY_SOURCE (one piece: `bytes` <= max_message_bytes()); the sender
  /// is MPI_SOURCE of the completed status.
  RequestPtr irecv_any_source(void* data, size_t bytes, int tag, int* source) override;
  AnySourceReceive* any_source() override { return this; }
  /// gather_bytes, broadcast_bytes, barrier and allreduce_bits run MPI's nonblocking
  /// collectives (MPI_Igather/Igatherv, Ibcast, Ibarrier, Iallreduce) completed by polling
  /// with a Backoff, so a rank waiting in the control plane yields its core.
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) override;
  void broadcast_bytes(std::vector<uint8_t>& data, int root) override;
  void barrier() override;
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) override;

  /// Every dtype and op: builtin MPI datatypes and ops, and for float16/bfloat16 (over
  /// MPI_UINT16_T) and int8/uint8 sums a commutative user-defined op calling reduce_inplace.
  bool native_allreduce_supported(DataType dtype, ReduceOp op) const override;
  /// MPI_Allreduce on this communicator (MPI_IN_PLACE when input == output), blocking; kAverage reduces as
  /// kSum. Counts above INT_MAX go in several calls. Not recorded in counters() (MPI's
  /// own messages are invisible to Concord). Throws CommError when MPI fails.
  void native_allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  NativeCollectives* native() override { return this; }
  /// mpi_cuda_support(), asked once when the communicator was created.
  DevicePointerSupport device_pointer_support() const override { return cuda_support_; }

  /// MPI_Comm_split of this communicator (see Communicator::split); the new communicator
  /// also returns errors (MPI_ERRORS_RETURN) instead of aborting.
  std::unique_ptr<Communicator> split(int color, int key) override;

  MPI_Comm comm() const { return comm_; }

  /// A communicator owning `comm` (no duplicate; MPI_ERRORS_RETURN set on it), e.g. one
  /// that MPI_Comm_create_group made.
  static std::unique_ptr<MpiCommunicator> adopt_comm(MPI_Comm comm) {
    return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(comm, Adopt{}));
  }

 private:
  struct Adopt {};
  // Takes ownership of `comm` (no duplicate).
  MpiCommunicator(MPI_Comm comm, Adopt);
  // Completes `request` by MPI_Test polls with a Backoff between them: a blocking MPI
  // collective busy-polls (Open MPI's default), which on an oversubscribed node takes the
  // core from the ranks it waits for. Throws CommError naming `what` on failure.
  void wait_polling(MPI_Request& request, const char* what);
  // The MPI op for `op` on `dtype`, creating this communicator's user-defined op on first use.
  MPI_Op mpi_op(DataType dtype, ReduceOp op);

  MPI_Comm comm_ = MPI_COMM_NULL;
  // User-defined ops (16-bit floats, 8- and 16-bit integer sums), by [dtype code][op code]; MPI_OP_NULL
  // until first used.
  MPI_Op user_ops_[9][5];  // [dtype up to kInt16][op up to kProduct]
  int rank_ = 0;
  int size_ = 1;
  DevicePointerSupport cuda_support_;
};

/// Node index of every rank of `world` (size = world's size; 0, 1, ... in order of each
/// node's lowest rank), where `local` is this rank's MPI_Comm_split_type(world,
/// MPI_COMM_TYPE_SHARED) communicator: ranks that can share memory are on one node.
/// Collective over `world`. Throws CommError when an MPI call fails.
std::vector<int> node_of_every_rank(MPI_Comm world, MPI_Comm local);
/// The same, splitting `world` by shared memory itself (collective over `world`).
std::vector<int> node_of_every_rank(MPI_Comm world);

/// The communicators of a runtime over MPI_COMM_WORLD: ensure_mpi_initialized(), then two
/// duplicates of MPI_COMM_WORLD (control, data) and the node of every rank from MPI's
/// shared-memory split. Collective over MPI_COMM_WORLD. Throws StateError / CommError.
CommunicatorSet mpi_communicator_set();

/// Throws CommError("<what> failed: <MPI error string>") when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* what);

/// MPI_Comm_dup of `parent`. Throws CommError when MPI fails.
MPI_Comm duplicate(MPI_Comm parent);

}  // namespace concord
