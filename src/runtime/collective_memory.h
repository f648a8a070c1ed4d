// CollectiveMemory: how the executor reaches the tensors of a response (docs/architecture.md,
// "Device tensors in the runtime"). Allreduce packs, scales and unpacks its tensors once
// (executor.cc) through kernels() in the tensors' own memory, on a fusion() buffer there,
// and runs the algorithm on it; allgather, reduce-scatter and alltoall lay out their
// tensors once (executor.cc, executor_reducescatter.cc, executor_alltoall.cc) and move
// bytes for their host algorithms only through the staging functions:
// - HostMemory (below): the tensors are host memory; staging buffers are the executor's
//   scratch buffers, copies are memcpy (or the CPU scale kernel), results live in the
//   handle's output_bytes, and the algorithm may read inputs and write outputs in place.
// - DevicePath (runtime/device_path.h): the tensors are device memory; staging buffers are
//   pinned host memory, copies are batched each way (d2h in, h2d out), a
//   scale factor is applied by the CPU kernel on the staged host bytes (so results equal
//   a host run bit for bit), and results are device memory allocated through the Device
//   and owned by the handle. The host never touches device memory.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/kernels.h"
#include "concord/types.h"
#include "device/device.h"
#include "runtime/handle_state.h"

namespace concord {

class CollectiveMemory {
 public:
  virtual ~CollectiveMemory() = default;
  /// True when the tensors are host memory: the algorithm may read an input and write a
  /// handle's output directly, without staging.
  virtual bool host_accessible() const = 0;
  /// Copies, scaling and reductions in the tensors' memory (the CPU kernels, or the
  /// device's kernels on a stream).
  virtual Kernels& kernels() = 0;
  /// A fusion buffer of at least `bytes` bytes in the tensors' memory (contents
  /// unspecified), valid until the next call; it moves only once kernels() are idle.
  virtual uint8_t* fusion(size_t bytes) = 0;
  /// A host buffer of at least `bytes` bytes (contents unspecified) for slot 0 or 1 (two
  /// buffers in use at once: alltoall's send and receive), valid until the next call for
  /// the same slot.
  virtual uint8_t* staging(size_t bytes, int slot) = 0;
  /// Copies every span from tensor memory into a staging buffer, multiplying by `factor`
  /// (elements of `dtype`) unless it is 1. Done when it returns. Staging bytes between the
  /// spans' destinations may be overwritten (fill padding afterwards).
  virtual void copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) = 0;
  /// Copies every span from a staging buffer into tensor memory, multiplying by `factor`
  /// unless it is 1 (the staged source may be scaled in place). Done when it returns.
  virtual void copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) = 0;
  /// `bytes` bytes of result memory owned by `handle` (allgather/alltoall outputs), in the
  /// tensors' memory; returns it (may be null for 0 bytes).
  virtual void* allocate_output(HandleState& handle, size_t bytes) = 0;
};

/// Host tensors: staging slot 0 and fusion() are the executor's fusion buffer, slot 1 its
/// receive buffer; kernels() the CPU kernels.
class HostMemory : public CollectiveMemory {
 public:
  /// The buffers and `kernels` must outlive this object.
  HostMemory(ScratchBuffer& first, ScratchBuffer& second, HostKernels& kernels)
      : slots_{&first, &second}, kernels_(kernels) {}
  bool host_accessible() const override { return true; }
  Kernels& kernels() override { return kernels_; }
  uint8_t* fusion(size_t bytes) override { return slots_[0]->get(bytes); }
  uint8_t* staging(size_t bytes, int slot) override { return slots_[slot]->get(bytes); }
  void copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void* allocate_output(HandleState& handle, size_t bytes) override;

 private:
  ScratchBuffer* slots_[2];
  HostKernels& kernels_;
};

/// Host-memory copies of `spans`, through the CPU scale kernel when `factor` is not 1.
void copy_host_spans(const std::vector<CopySpan>& spans, DataType dtype, double factor);

}  // namespace concord
