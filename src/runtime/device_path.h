// DevicePath: the executor's data path for tensors in device memory (docs/architecture.md,
// "Device layer"). It talks to the device only through the Device/Stream/Event interface
// (device/device.h), so the same code runs on a GPU (CudaDevice) and on the strict
// emulated device, where any host access to device memory crashes the tests.
//
// Allreduce of one tensor: the output is the algorithm's buffer (prescale: a scale kernel
// writes it from the input; out of place: one device-to-device copy), then the device
// allreduce the registry ranks best (device/device_registry.h: staged, staged_gpu,
// cuda_aware, nccl, each declining what it cannot run; the capabilities they rely on are
// agreed over the ranks at the first device allreduce, a collective step every rank
// reaches at the same response), then the postscale kernel. Fused allreduce: the tensors are packed into a fusion buffer
// in device memory with one batched copy (Stream::copy_batch; with a prescale, one scale
// kernel per tensor), reduced there, and copied out with batched copies as their ranges
// become final (runtime/fused_completion.h); each copy-out batch records an event and its
// handles complete when that event has completed. The algorithm's own streams start
// reading the buffer after the host has waited on the packing's event.
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
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/registry.h"
#include "common/timeline.h"
#include "control/message.h"
#include "device/device.h"
#include "device/device_capabilities.h"
#include "runtime/collective_memory.h"
#include "runtime/tensor_queue.h"

namespace concord {

class DevicePath : public CollectiveMemory {
 public:
  /// Runs collectives of tensors on `device` (device index `index` of the runtime's
  /// DeviceSet) over `context`'s communicator with its cost model (the same on every
  /// rank). `timeline` must outlive this object.
  DevicePath(std::shared_ptr<Device> device, int index, const AlgorithmContext& context, Timeline& timeline);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  /// Allreduce of `entries` (inputs and outputs in this device's memory; sizes and dtype
  /// from `response`) with reduction `op` (not kAverage or kAdasum: the caller turns
  /// kAverage into kSum and a postscale), result = postscale * op(prescale * inputs).
  /// Completes the handles of fused tensors as their copies out finish and sets
  /// completed[i]; a single tensor is left to the caller to complete. Throws DeviceError,
  /// CommError or InvalidArgument (no device allreduce accepts the problem).
  void allreduce(const Response& response, std::vector<TensorEntry>& entries, std::vector<bool>& completed, ReduceOp op,
                 double prescale, double postscale);

  /// Broadcast of `entry.output` (device memory, `bytes` bytes) from `root` (rank in the
  /// communicator) with the host algorithm `algorithm` on a pinned host copy.
  void broadcast(TensorEntry& entry, size_t bytes, int root, BroadcastAlgorithm& algorithm);

  // CollectiveMemory: pinned host staging, batched d2h / h2d copies, device results.
  bool host_accessible() const override { return false; }
  uint8_t* staging(size_t bytes, int slot) override;
  void copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) override;
  void* allocate_output(HandleState& handle, size_t bytes) override;

 private:
  // The device allreduce ranked best for `problem` (created on first use, kept per name
  // and chunk size); `activity` receives its timeline name.
  AllreduceAlgorithm& algorithm(const Problem& problem, std::string& activity);
  // `bytes` of pinned host memory in `slot` (0 or 1), grown as needed.
  void* host_staging(size_t bytes, int slot = 0);
  // Runs `enqueue` (work on stream_) and waits for the stream, also after a failure.
  void run_and_wait(const std::function<void()>& enqueue);
  // The device fusion buffer, at least `bytes` long (grown after the stream is idle).
  uint8_t* device_fusion(size_t bytes);
  // Opens (name) / closes a timeline activity for every tensor of `response`.
  void mark(const Response& response, const char* activity);
  void unmark(const Response& response);

  std::shared_ptr<Device> owner_;
  Device& device_;
  int index_;
  AlgorithmContext context_;
  Timeline& timeline_;
  std::unique_ptr<Stream> stream_;  // packing, scaling, copies out, broadcast staging
  std::unique_ptr<Event> packed_;
  DeviceBuffer fusion_buffer_;
  void* host_[2] = {nullptr, nullptr};
  size_t host_bytes_[2] = {0, 0};
  std::map<std::string, std::unique_ptr<AllreduceAlgorithm>> instances_;  // by "name:chunk bytes"
  // Agreed over the ranks at the first device allreduce (CUDA-aware MPI, NCCL).
  std::optional<DeviceCapabilities> capabilities_;
};

}  // namespace concord
