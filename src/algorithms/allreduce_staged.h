// AllreduceStaged: allreduce of a device buffer through pinned host staging buffers, for
// MPI libraries that are not CUDA-aware ("Scalable Distributed DNN Training using
// TensorFlow and CUDA-Aware MPI", Awan et al., CCGrid 2019: staging through pinned host
// buffers, pipelined in chunks so copies overlap the network).
//
// Steps, for n bytes in C = ceil(n / chunk) chunks and three staging slots:
//   1. d2h stream: chunk i is copied device -> slot i % 3 (after the h2d of chunk i - 3
//      has drained that slot: a stream-ordered event wait, no host block);
//   2. host: once chunk i's d2h event has completed, the inner host allreduce (any
//      registered algorithm, e.g. ring) runs on the slot -- while chunk i + 1 is being
//      copied down and chunk i - 1 copied up;
//   3. h2d stream: the reduced slot is copied back to the device buffer; its event marks
//      the chunk's bytes final (take_final_ranges).
// Bytes on the wire: the inner algorithm's, per chunk. Extra: n bytes d2h and n bytes h2d
// (PCIe), of which one chunk each way is not overlapped (pipeline fill and drain).
// Reduction runs on the CPU (the inner algorithm's kernels; bit-identical to a host-memory
// run): the data is in host memory already, and reducing on the GPU instead would add an
// h2d copy of every received peer chunk. The paper's GPU-kernel reduction pays off when a
// CUDA-aware MPI delivers peer data into device memory, which Debian's Open MPI does not.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "device/device.h"

namespace concord {

struct AlgorithmContext;  // algorithms/registry.h

class AllreduceStaged : public AllreduceAlgorithm {
 public:
  /// Reduces through `inner` (a host allreduce on the same communicator, same on every
  /// rank) in chunks of `chunk_bytes` (rounded down to whole elements, at least one).
  /// `device` must outlive this object.
  AllreduceStaged(Device& device, std::unique_ptr<AllreduceAlgorithm> inner, size_t chunk_bytes);
  /// The registry's row: each call is cut into chunk_bytes_for() chunks of its problem and
  /// reduced by the host algorithm the cost model ranks best for one chunk (the same on
  /// every rank), created from `context` (its communicator, scratch and cost model) on
  /// context.device, which must be set; both must outlive this object.
  explicit AllreduceStaged(const AlgorithmContext& context);
  ~AllreduceStaged() override;

  /// `data` is device memory of `device`; the rest as AllreduceAlgorithm::start.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// `input` and `output` are device memory: a d2d copy on the d2h stream (so the first
  /// chunk's d2h follows it), then in place on `output`.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// Each chunk once its h2d copy has completed (offsets in bytes from `data`).
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

  static constexpr int kSlots = 3;

  /// Registry row: name, description, memory kind.
  static constexpr const char* kName = "staged";
  static constexpr const char* kDescription =
      "device -> pinned host in chunks, host allreduce per chunk (best by the cost model; CPU reduction), "
      "host -> device; copies overlap the reduction";
  static constexpr MemoryKind kMemory = MemoryKind::kDevice;
  /// The inner host algorithm's messages and bytes on every chunk (the chunking and inner
  /// algorithm the default cost model chooses).
  static Cost cost(const Problem& problem);
  /// The predicted time with chunk_bytes_for()'s chunks.
  static double seconds(const Problem& problem, const CostParams& params);
  /// The predicted time with chunks of `chunk_bytes`: C chunks each reduced by the best
  /// host algorithm, the copy of each chunk overlapped with the previous chunk's reduction
  /// except for one chunk down and one up (fill and drain).
  static double seconds(const Problem& problem, const CostParams& params, size_t chunk_bytes);
  /// The chunk size (a power of two from 64 KiB to 64 MiB, or the whole message when
  /// smaller) minimising seconds().
  static size_t chunk_bytes_for(const Problem& problem, const CostParams& params);

 private:
  // Registry row: the chunk size and inner algorithm for a call (see the constructor).
  void choose_inner(size_t count, DataType dtype, ReduceOp op);
  void issue_d2h(size_t chunk);
  size_t chunk_offset(size_t chunk) const { return chunk * chunk_elements_ * element_; }
  size_t chunk_count(size_t chunk) const;
  uint8_t* slot(size_t chunk) const { return static_cast<uint8_t*>(staging_) + (chunk % kSlots) * slot_bytes_; }

  Device& device_;
  std::unique_ptr<AlgorithmContext> context_;  // the registry row's; null: fixed inner and chunk size
  std::unique_ptr<AllreduceAlgorithm> inner_;
  size_t chunk_bytes_;
  std::unique_ptr<Stream> down_;  // d2h
  std::unique_ptr<Stream> up_;    // h2d
  std::unique_ptr<Event> copied_down_[kSlots];
  std::unique_ptr<Event> copied_up_[kSlots];
  void* staging_ = nullptr;  // kSlots pinned slots of slot_bytes_
  size_t slot_bytes_ = 0;

  uint8_t* data_ = nullptr;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  size_t element_ = 4;
  size_t chunk_elements_ = 0;
  size_t count_ = 0;
  size_t chunks_ = 0;
  size_t next_down_ = 0;  // next chunk to copy down
  size_t reducing_ = 0;   // chunk the inner algorithm works on (or will start next)
  bool inner_running_ = false;
  size_t next_final_ = 0;  // first chunk whose h2d has not been seen complete
  FinalRanges final_;
};

}  // namespace concord
