// AllreduceDeviceRing: Concord's ring allreduce (algorithms/allreduce_ring.h: reduce-scatter
// then allgather, Patarasuk & Yuan, JPDC 2009) on a device buffer, for transports that
// take device pointers (transport/device_pointers.h): every message goes from and to
// device memory, received peer chunks land in device scratch and are reduced there by the
// device's reduce kernel (Stream::reduce) -- the design of Awan et al., "Scalable
// Distributed DNN Training using TensorFlow and CUDA-Aware MPI" (CCGrid 2019): CUDA-aware
// point-to-point plus GPU reduction kernels. The host never touches the buffer.
//
// The schedule, the segments, the chunking and the operand order are AllreduceRing's, so
// the result equals AllreduceRing on host memory with the same chunk_bytes bit for bit.
// Stream ordering: a chunk reduced at step g is sent at step g+1 only once the event
// recorded after its reduce kernel has completed (the transport does not know the stream);
// a scratch half is received into again only after the kernels reading it are done.
// Sends are issued in (step, chunk) order, the order the right neighbour posts receives.
//
// Over a CUDA-aware MPI this is the "cuda_aware" algorithm; over StagingCommunicator
// (transport/staging_communicator.h) it is "staged_gpu", the staged path with GPU reduction.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "device/device.h"
#include "patterns/ring.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class AllreduceDeviceRing : public AllreduceAlgorithm {
 public:
  /// Runs on `comm`, which must take device pointers of `device` (device_pointer_support();
  /// the registry checks it, this class does not), pipelined in `chunk_bytes` messages.
  /// `comm` and `device` must outlive this object.
  AllreduceDeviceRing(Communicator& comm, Device& device, size_t chunk_bytes);
  ~AllreduceDeviceRing() override;

  /// `data` is device memory of the device; otherwise as AllreduceAlgorithm::start.
  /// kAdasum is not element-wise: InvalidArgument.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// Copies `input` to `output` on the device (d2d), then reduces in place; both device
  /// memory.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// This rank's own segment chunk by chunk once its last reduce kernel has completed,
  /// the other chunks once received (offsets in bytes from `data`).
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

 private:
  struct Chunk {
    size_t offset;  // bytes from data_
    size_t bytes;
  };
  struct PendingSend {
    int step;
    int chunk;
    Event* ready;  // the kernel (or copy) that produced the bytes, or null
  };
  void begin(void* data, size_t count, DataType dtype, ReduceOp op, Event* ready);
  Chunk chunk(int segment, int index) const;
  bool in_reduce_scatter(int step) const { return step < ring_.steps(); }
  uint8_t* receive_slot(int step, int index) const;
  void post_receives(int step);
  bool post_ready_sends();  // posts pending sends in order; true when none is left
  Event* next_event();      // a free event from the pool, recorded on stream_

  Communicator& comm_;
  Device& device_;
  size_t chunk_bytes_;
  patterns::Ring ring_;
  std::unique_ptr<Stream> stream_;
  std::vector<std::unique_ptr<Event>> events_;  // pool, used round robin
  size_t next_event_ = 0;
  DeviceBuffer scratch_;                         // two halves of slot_bytes_ (device memory)
  Event* scratch_free_[2] = {nullptr, nullptr};  // last kernel reading each half

  uint8_t* data_ = nullptr;
  size_t count_ = 0;
  size_t element_size_ = 1;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  int chunks_ = 1;
  size_t slot_bytes_ = 0;
  int step_ = 0;
  int next_chunk_ = 0;
  int next_receive_step_ = 0;  // first step whose receives are not posted
  std::vector<std::vector<RequestPtr>> receives_;
  std::deque<PendingSend> pending_;
  int reduce_scatter_sends_left_ = 0;  // not yet posted
  RequestSet reduce_scatter_sends_;
  RequestSet sends_;
  FinalRanges final_;
};

}  // namespace concord
