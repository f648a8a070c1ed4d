// Concord's public C++ API: process-wide runtime lifecycle and asynchronous collectives.
//
// The path of one allreduce: allreduce_async() validates the request and puts it on this
// rank's tensor queue; the background thread negotiates it with the other ranks
// (coordinator on rank 0, docs/architecture.md), fuses it with other ready allreduces into
// the fusion buffer, runs the allreduce algorithm chosen for the batch (cost model, or
// CONCORD_ALLREDUCE_ALGORITHM; docs/algorithms.md) over MPI point-to-point and completes
// the Handle. Thread-safe: any thread may enqueue and wait.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "concord/handle.h"
#include "concord/types.h"

namespace concord {

/// Options of init(). A negative value means "take the CONCORD_* environment variable
/// (or its default)"; see `concord-info` for the table.
struct InitOptions {
  double cycle_time_ms = -1;            ///< CONCORD_CYCLE_TIME, milliseconds between cycles
  int64_t fusion_threshold_bytes = -1;  ///< CONCORD_FUSION_THRESHOLD, bytes; 0 disables fusion
  /// Process sets to create (ids 1, 2, ... in this order): each the global ranks of its
  /// members, ascending and distinct. Every rank must pass the same sets (else
  /// InvalidArgument on every rank).
  std::vector<std::vector<int>> process_sets;
};

/// Starts the runtime: initialises MPI if nobody has (MPI_Init_thread, MPI_THREAD_MULTIPLE
/// requested, MPI_THREAD_SERIALIZED required), duplicates MPI_COMM_WORLD and starts the
/// background thread. Without mpirun the process is a single rank (size 1). Calling init()
/// while already initialised is a no-op. Collective: every rank must call it.
/// Throws StateError if MPI was initialised with too low a thread level or finalized,
/// InvalidArgument for a malformed CONCORD_* variable.
void init(const InitOptions& options = {});

/// Stops the background thread after telling every rank (the first rank to call shutdown
/// stops all of them); operations still pending fail with StateError. MPI itself is
/// finalized at process exit, and only if init() initialised it, so init() may be called
/// again. No-op when not initialised.
void shutdown();

/// The exit hooks' shutdown (Concord's C++ atexit hook, concord's Python atexit hook):
/// shutdown(), then, if Concord failed on this rank since the last init() (stall shutdown,
/// communication error, a peer's shutdown while collectives were pending here), bounds
/// the rest of the process's exit: if it is still alive 5 s later (MPI finalisation waiting
/// for a stuck peer), it ends with status 1, which makes mpirun abort the job. Idempotent.
void shutdown_at_exit();

/// True between init() and shutdown().
bool is_initialized();

/// This process's rank in [0, size()). Throws StateError before init().
int rank();
/// Number of ranks (MPI_COMM_WORLD size). Throws StateError before init().
int size();
/// Rank among the processes on this node (MPI shared-memory split). Throws StateError.
int local_rank();
/// Number of processes on this node. Throws StateError before init().
int local_size();
/// Position among the ranks that have this rank's local rank (Horovod's cross
/// communicator; the node index on a homogeneous launch). Throws StateError before init().
int cross_rank();
/// Number of ranks that have this rank's local rank (the number of nodes on a homogeneous
/// launch). Throws StateError before init().
int cross_size();
/// True if MPI provides MPI_THREAD_MULTIPLE (so other threads may call MPI beside Concord's
/// background thread). Throws StateError before init().
bool mpi_threads_supported();

/// Options of an allreduce. The result is postscale * reduce_op(prescale * input_r over
/// ranks r); for kAverage the postscale is further divided by size().
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kSum;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  int process_set = 0;  ///< the ranks taking part (0 = all; see add_process_set)
};

/// Options of a broadcast.
struct BroadcastOptions {
  int root = 0;  ///< (global) rank whose tensor is sent to every other rank; a member of the set
  int process_set = 0;
};

/// Options of an allgather.
struct AllgatherOptions {
  int process_set = 0;
};

/// Starts an allreduce of `input` into `output` (same dtype and shape; may be the same
/// memory for an in-place allreduce). `name` identifies the tensor across ranks: every
/// rank must submit the same name with the same dtype, shape, op and scale factors, in any
/// order. Both buffers must stay valid until the handle is done.
/// Throws StateError before init/after shutdown, InvalidArgument for an empty name, a
/// name already in flight on this rank, or mismatched input/output. A mismatch between
/// ranks is reported by Handle::wait() as MismatchError on every rank.
/// Algorithm: chosen per fused batch by the cost model among the registered allreduces (ring
/// reduce-scatter + allgather, Patarasuk & Yuan 2009; halving-doubling; trees; hierarchical;
/// MPI's own) or forced with CONCORD_ALLREDUCE_ALGORITHM; `concord-info` lists them and
/// docs/algorithms.md describes them.
/// Device tensors (TensorView::device, docs/architecture.md "Device tensors in the
/// runtime"): every collective with data takes them (allreduce except with kAdasum), the
/// output on the input's device; host memory on some ranks and device memory on others is
/// a MismatchError on every rank naming the tensor, the ranks and both devices.
/// TensorView::device == kDetectDevice lets the runtime find the device through the
/// devices' pointer caches at submission (concord/types.h; DeviceError if a driver cannot
/// tell).
Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options = {});

/// Starts an allgather: the output (Handle::output_shape, and Handle::output_bytes for a
/// host tensor / Handle::output_data or copy_output_to for a device tensor, whose result is
/// device memory of the input's device owned by the handle) is the rank-ordered
/// concatenation along dim 0 of every rank's `input`; dim 0 may differ between ranks, the
/// other dimensions and the dtype must agree (else MismatchError). Scalars are rejected.
/// `input` must stay valid until the handle is done. Errors as allreduce_async.
Handle allgather_async(const std::string& name, const TensorView& input, const AllgatherOptions& options = {});

/// Starts a broadcast of `tensor` from options.root into `tensor` on every other rank
/// (in place). Shape, dtype and root must agree across ranks (else MismatchError).
/// Throws InvalidArgument if root is not in [0, size()). Binomial tree over MPI p2p.
Handle broadcast_async(const std::string& name, const TensorView& tensor, const BroadcastOptions& options = {});

/// Starts an allreduce of several tensors as one group (Horovod's grouped_allreduce): no
/// member is negotiated as ready until every member has been submitted on every rank, and
/// the members are fused together (never with other tensors) and executed in the same
/// cycle. names, inputs and outputs have one entry per member; every rank must group the
/// same names (else MismatchError). Members are queued atomically: on InvalidArgument
/// (bad member, duplicate name) none is. Returns one handle per member, in order.
std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs,
                                            const AllreduceOptions& options = {});

/// Options of a reduce-scatter: the result on rank r is postscale * op(prescale * input_q
/// over ranks q) restricted to rank r's rows; for kAverage the postscale is further divided
/// by the number of ranks that contributed. Only kSum and kAverage (as Horovod).
struct ReducescatterOptions {
  ReduceOp op = ReduceOp::kSum;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  int process_set = 0;
};

/// Rows of dim 0 that `rank` of `ranks` receives from a reduce-scatter of `rows` rows:
/// rows / ranks, plus one for the first rows % ranks ranks (as Horovod).
int64_t reducescatter_rows(int64_t rows, int ranks, int rank);

/// Starts a reduce-scatter: `input` (same dtype and shape on every rank, not a scalar) is
/// reduced over ranks and split along dim 0, rank r receiving reducescatter_rows(dim 0,
/// size(), r) consecutive rows (earlier ranks get the extra rows) into `output`, of shape
/// [those rows, input.shape[1:]] and input's dtype. Both buffers stay valid until the
/// handle is done. Fused with other reduce-scatters of the same dtype, op and scale
/// factors. Throws InvalidArgument for a scalar, a bool tensor, an op other than kSum or
/// kAverage, a wrongly shaped output, and as allreduce_async; a mismatch between ranks is
/// a MismatchError from wait(). Algorithm: the registry's reduce-scatter (ring or
/// recursive halving, by the cost model), executor_reducescatter.cc.
Handle reducescatter_async(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& options = {});

/// Reduce-scatter of several tensors as one group (fused and negotiated together, as
/// grouped_allreduce_async). One handle per member, in order; errors as
/// reducescatter_async, all-or-nothing.
std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                const std::vector<TensorView>& inputs,
                                                const std::vector<TensorView>& outputs,
                                                const ReducescatterOptions& options = {});

/// Allgather of several tensors as one group (fused into one allgatherv). One handle per
/// member; read each result as allgather_async's.
std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const AllgatherOptions& options = {});

/// Options of an alltoall.
struct AlltoallOptions {
  /// Rows of dim 0 sent to each rank, in rank order (size() non-negative entries summing
  /// to dim 0). Empty: dim 0 is split into size() equal parts (it must be divisible).
  std::vector<int64_t> splits;
  int process_set = 0;
};

/// Starts an alltoall: rank r sends rows [sum(splits[:j]), sum(splits[:j+1])) of `input`
/// to rank j and receives, in rank order, what every rank sent it. After wait(),
/// Handle::output_shape()/output_bytes() hold the result ([rows received, input.shape[1:]];
/// for a device tensor in device memory of the input's device, read as allgather_async's)
/// and Handle::received_splits() the rows received from each rank. The dtype and all but
/// dim 0 must agree across ranks (else MismatchError). Throws InvalidArgument for a scalar,
/// splits of the wrong length, negative or not summing to dim 0, equal splits of a dim 0
/// not divisible by size(); an alltoall while some rank has joined fails on every rank.
/// Algorithm: the registry's alltoall (pairwise exchange), blocks padded to the largest.
Handle alltoall_async(const std::string& name, const TensorView& input, const AlltoallOptions& options = {});

/// Starts a barrier: the handle completes once every rank has started one (the n-th
/// barrier of each rank meets the n-th of the others).
Handle barrier_async(int process_set = 0);
/// barrier_async(process_set).wait().
void barrier(int process_set = 0);

/// Starts a join (Horovod's hvd.join()): this rank has no more data. Until every rank has
/// joined, this rank takes part in the other ranks' collectives contributing nothing:
/// zeros to allreduce/reducescatter sums (kAverage divides by the ranks that have not
/// joined), no rows to allgather; a broadcast whose root has joined and any alltoall fail
/// on every rank with InvalidArgument. The handle completes when every rank has joined;
/// Handle::received_splits() is then {the last rank to join}.
Handle join_async();
/// join_async().wait(); returns the last rank to join.
int join();

/// Process sets (Horovod's hvd.ProcessSet, src/runtime/process_set.h): every collective
/// takes `process_set` in its options (0 = every rank); the sizes, ranks and splits of a
/// collective on a set are those of the set (rank r of the set = its r-th member), roots
/// are global ranks. Each set negotiates on its own communicators with its own response
/// cache. A rank submitting to a set it is not in, or to an unknown or removed id, gets
/// InvalidArgument at submission (the other ranks are not affected). Errors formed inside
/// a set (mismatches, duplicate names, stall warnings) name global ranks and the set.
///
/// add_process_set: collective over all ranks (each passes the same ranks, ascending,
/// distinct); returns the new set's id. Needs CONCORD_DYNAMIC_PROCESS_SETS=1
/// (InvalidArgument otherwise); a set with the same ranks already existing, or ranks that
/// differ between callers, fail on every rank (InvalidArgument / MismatchError).
int add_process_set(const std::vector<int>& ranks);
/// add_process_set called by the set's members only (each passes the same ranks and the
/// same `name`, unique among the sets formed this way); the other ranks call nothing (their
/// runtimes apply the registration where the world's negotiation orders it). Returns the
/// new set's id (the same on every rank). Needs CONCORD_DYNAMIC_PROCESS_SETS=1; this rank
/// not among `ranks`, or a set of these ranks existing already: InvalidArgument; members
/// passing different ranks under one name: MismatchError on those members. A member that
/// never calls it leaves the others waiting (the stall inspector reports it).
int form_process_set(const std::vector<int>& ranks, const std::string& name);
/// Collective over all ranks: removes set `id` (not 0); its pending operations fail with
/// StateError. Needs CONCORD_DYNAMIC_PROCESS_SETS=1. Unknown id: InvalidArgument.
void remove_process_set(int id);
/// The ids of the existing sets, ascending (0 first).
std::vector<int> process_set_ids();
/// The global ranks of set `id`. Throws InvalidArgument for an unknown id.
std::vector<int> process_set_ranks(int id);
/// This rank's rank within set `id`, -1 if it is not a member.
int process_set_rank(int id);

/// Starts writing a Chrome-trace / Perfetto JSON timeline of every tensor's life
/// (NEGOTIATE_<COLLECTIVE> with a mark per rank, QUEUE, MEMCPY_IN_FUSION_BUFFER, the
/// algorithm, MEMCPY_OUT; docs/architecture.md) to `path`. Only rank 0 writes;
/// elsewhere a no-op. Same as setting CONCORD_TIMELINE before init(). Throws StateError
/// before init() or while a timeline is being written, InvalidArgument if `path` cannot be
/// opened.
void start_timeline(const std::string& path);

/// Stops the timeline; the file is then valid JSON (a file cut short by a crash is an array
/// missing its "]": every complete line is one event). No-op when none is written.
void stop_timeline();

/// Counters of this rank's coordination since init() (docs/architecture.md, "Threads").
struct CoordinationStats {
  uint64_t cycles = 0;              ///< background cycles run
  uint64_t coordinator_rounds = 0;  ///< cycles that took the slow path (gather to rank 0)
  uint64_t cache_hits = 0;          ///< responses built from the response cache
  uint64_t cache_misses = 0;        ///< requests this rank sent to the coordinator
  uint64_t invalidations = 0;       ///< cache entries erased because a tensor's parameters changed
  uint64_t evictions = 0;           ///< cache entries evicted for capacity
  uint64_t stall_checks = 0;        ///< stall-inspection rounds
};

/// This rank's coordination counters, as of the last negotiation (taken before that
/// cycle's responses execute, so they include the negotiation of every completed
/// handle). Throws StateError before init().
CoordinationStats coordination_stats();

/// The pointer-cache counters of this process's devices since init() (concord/types.h,
/// PointerCacheStats): the lookups of TensorView::device == kDetectDevice and, on CUDA, the
/// device layer's own. Throws StateError before init().
PointerCacheStats pointer_cache_stats();

}  // namespace concord
