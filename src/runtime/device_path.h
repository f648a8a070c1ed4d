// DevicePath: the executor's data path for tensors in device memory (docs/architecture.md,
// "Device layer"). It talks to the device only through the Device/Stream/Event interface
// (device/device.h), so the same code runs on a GPU (CudaDevice) and on the strict
// emulated device, where any host access to device memory crashes the tests.
//
// Allreduce runs the executor's one allreduce path (runtime/executor.cc) with this path's
// kernels() -- DeviceKernels: the device's copy, scale and reduce kernels on a stream,
// completion tracked by events -- and its fusion() buffer in device memory; this path
// supplies the capabilities the registry's rows on device buffers are judged on (staged,
// staged_gpu, cuda_aware, nccl, each declining what it cannot run), agreed over the ranks
// at the first device allreduce, a collective step every rank reaches at the same response.
// Broadcast: device -> pinned host buffer (the root), the host broadcast algorithm, host
// -> device (the other ranks); stream-ordered copies, the host waits on their completion.
// Allgather, reduce-scatter and alltoall (fused or not) run the executor's host layout and
// host algorithm with this path as their CollectiveMemory (runtime/collective_memory.h):
// the tensors' bytes are staged d2h into pinned host buffers with one copy_batch, results
// go h2d with one copy_batch into the caller's output (reduce-scatter) or into device
// memory allocated through the Device and owned by the handle (allgather, alltoall, whose
// sizes are known only after negotiation); scale factors are applied on the staged host
// bytes with the CPU kernel. Several pieces whose host range is at most twice their bytes
// travel as one DMA through the device fusion buffer (packed or unpacked there by one
// batched d2d copy), since a GPU's copy_batch between host and device is one DMA per
// piece.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/device_capabilities.h"
#include "algorithms/device_kernels.h"
#include "algorithms/registry.h"
#include "control/message.h"
#include "device/device.h"
#include "runtime/collective_memory.h"
#include "runtime/tensor_queue.h"

namespace concord {

class DevicePath : public CollectiveMemory {
 public:
  /// Runs collectives of tensors on `device` (device index `index` of the runtime's
  /// DeviceSet) over `context`'s communicator with its cost model (the same on every
  /// rank).
  DevicePath(std::shared_ptr<Device> device, int index, const AlgorithmContext& context);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  /// What the communicator and this device offer the rows on device buffers, agreed over
  /// the ranks: collective the first time (every rank reaches its first device allreduce at
  /// the same response), kept afterwards. Throws CommError on transport failure.
  const DeviceCapabilities& capabilities();
  Device& device() const { return device_; }

  /// Broadcast of `entry.output` (device memory, `bytes` bytes) from `root` (rank in the
  /// communicator) with the host algorithm `algorithm` on a pinned host copy.
  void broadcast(TensorEntry& entry, size_t bytes, int root, BroadcastAlgorithm& algorithm);

  // CollectiveMemory: pinned host staging, batched d2h / h2d copies, device results.
  bool host_accessible() const override { return false; }
  Kernels& kernels() override { return kernels_; }
  uint8_t* fusion(size_t bytes) override;
  uint8_t* staging(size_t bytes, int slot) override;
  void copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void* allocate_output(HandleState& handle, size_t bytes) override;

 private:
  // `bytes` of pinned host memory in `slot` (0 or 1), grown as needed.
  void* host_staging(size_t bytes, int slot = 0);
  // Runs `enqueue` (work on stream_) and waits for the stream, also after a failure.
  void run_and_wait(const std::function<void()>& enqueue);

  std::shared_ptr<Device> owner_;
  Device& device_;
  int index_;
  AlgorithmContext context_;
  std::unique_ptr<Stream> stream_;  // staging copies (allgather, reduce-scatter, alltoall, broadcast)
  DeviceKernels kernels_;           // allreduce: packing, scaling, copies out
  DeviceBuffer fusion_buffer_;
  void* host_[2] = {nullptr, nullptr};
  size_t host_bytes_[2] = {0, 0};
  // Agreed over the ranks at the first device allreduce (CUDA-aware MPI, NCCL).
  std::optional<DeviceCapabilities> capabilities_;
};

}  // namespace concord
