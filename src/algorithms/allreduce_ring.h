// AllreduceRing: ring reduce-scatter followed by ring allgather (Patarasuk & Yuan, "Bandwidth
// optimal all-reduce algorithms for clusters of workstations", JPDC 2009), over nonblocking
// point-to-point, pipelined in chunks. One algorithm for every memory kind: it reduces and
// copies only through its Kernels (algorithms/kernels.h), so on host memory it runs the CPU
// kernels and on device memory, over a transport that takes device pointers
// (transport/device_pointers.h), the device's kernels on a stream -- the design of Awan et
// al., "Scalable Distributed DNN Training using TensorFlow and CUDA-Aware MPI" (CCGrid
// 2019): CUDA-aware point-to-point plus GPU reduction kernels, the host never touching the
// buffer. Over a CUDA-aware MPI that is the "cuda_aware" entry of the registry, over
// StagingCommunicator (transport/staging_communicator.h) "staged_gpu".
//
// Steps and bytes on the wire for P ranks and n bytes: 2(P-1) steps; each rank sends and
// receives 2(P-1)/P * n bytes, in 2(P-1) * C messages of at most n/(P*C) bytes, where
// C = ceil((n/P) / chunk_bytes). Cost: 2(P-1) alpha + 2(P-1)/P n beta + (P-1)/P n gamma.
//
// Pipelining: the segment received at step g is the one sent at step g+1, so as soon as
// chunk c of step g has arrived and been reduced (during the reduce-scatter) it is sent on
// for step g+1 -- once the kernel that reduced it is done (Kernels::done; at once on the
// host); sends are posted in (step, chunk) order, the order the right neighbour posts its
// receives. Receives of step g+1 are posted while step g runs (two scratch halves; a half
// is received into again only once the kernels reading it are done).
// Each segment is reduced by exactly one chain of ranks and then copied, so every rank ends
// with bit-identical results, on every memory kind.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/kernels.h"
#include "concord/types.h"
#include "patterns/ring.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class AllreduceRing : public AllreduceAlgorithm {
 public:
  /// On host memory: the CPU kernels, receive slots in `scratch` (shared with the other
  /// algorithms of a context; must outlive this object).
  AllreduceRing(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes = default_chunk_bytes());
  /// On the memory `kernels` work on (e.g. DeviceKernels: device memory), over `comm`,
  /// which must take pointers of that memory (the registry checks it, this class does
  /// not). `comm` and `kernels` must outlive this object.
  AllreduceRing(Communicator& comm, Kernels& kernels, size_t chunk_bytes);

  /// Starts an in-place allreduce of `count` elements of `dtype` at `data` with `op`
  /// (kAverage reduces as kSum; the caller scales). Every rank must call it with the same
  /// count, dtype and op. `data` must stay valid until progress() returns kDone.
  /// kAdasum is not element-wise: InvalidArgument (AllreduceAdasum).
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// Out of place without an extra pass: the first reduce-scatter send reads `input`, each
  /// reduce-scatter step receives into `output` and reduces there, output = op(input,
  /// received) (the in-place operands, so bit-identical; on the host the output's lines
  /// are in cache from the receive, so writing them costs no extra memory read), and the
  /// allgather receives fill the rest of `output`.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// Per-range completion (AllreduceAlgorithm::take_final_ranges): each chunk of this
  /// rank's own segment once the kernel of the last reduce-scatter step that reduced it is
  /// done, each chunk of the other segments once its allgather receive has completed. By kDone the ranges
  /// cover the whole buffer.
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "ring";
  static constexpr const char* kDescription =
      "ring reduce-scatter + ring allgather, chunk-pipelined (bandwidth-optimal)";
  /// Exact messages and bytes of one call, and its critical path (docs/algorithms.md).
  static Cost cost(const Problem& problem);
  /// On device memory: P - 1 reduce kernels (one per reduce-scatter step) and 2 (P - 1)
  /// message steps in sequence (the chunks of a step overlap each other); zero for P = 1 or
  /// no elements.
  static DeviceSteps device_steps(const Problem& problem);

 private:
  struct Chunk {
    size_t offset;  // bytes from data_
    size_t bytes;
  };
  struct PendingSend {
    int step;  // -1: the copy of a one-rank out-of-place call (nothing to send)
    int chunk;
  };
  Chunk chunk(int segment, int index) const;
  bool in_reduce_scatter(int step) const { return step < ring_.steps(); }
  uint8_t* receive_slot(int step, int index);
  void post_receives(int step);
  bool post_ready_sends();  // posts pending sends in order; true when none is left

  Communicator& comm_;
  std::unique_ptr<HostKernels> host_kernels_;  // the CPU kernels, when constructed with a ScratchBuffer
  Kernels& kernels_;
  size_t chunk_bytes_;
  patterns::Ring ring_;
  uint8_t* data_ = nullptr;
  const uint8_t* input_ = nullptr;  // == data_ in place
  size_t count_ = 0;
  size_t element_size_ = 1;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  int chunks_ = 1;                                 // chunks per segment
  size_t slot_bytes_ = 0;                          // scratch bytes of one step's receives
  int step_ = 0;                                   // current step in [0, 2(P-1)); 2(P-1) = done
  int next_chunk_ = 0;                             // next chunk of step_ to complete
  int next_receive_step_ = 0;                      // first step whose receives are not posted
  Kernels::Ticket slot_readers_[2] = {0, 0};       // in place: the last kernel reading each scratch half
  std::vector<std::vector<RequestPtr>> receives_;  // by step, by chunk
  TicketQueue<PendingSend> pending_;               // sends not yet posted, in (step, chunk) order,
                                                   // each behind the kernel that produced its bytes
  int reduce_scatter_sends_left_ = 0;              // not yet posted
  RequestSet sends_;
  RequestSet reduce_scatter_sends_;
  FinalRanges final_;
};

}  // namespace concord
