// AllreduceRing (algorithms/allreduce_ring.h) on device buffers: the ring with the device's
// kernels (DeviceKernels, algorithms/device_kernels.h), its messages carried by a transport
// that takes device pointers -- the GPU-reduction design of Awan et al., "Scalable
// Distributed DNN Training using TensorFlow and CUDA-Aware MPI" (CCGrid 2019). Two rows of
// the registry (algorithms/registry.h), one class each:
//   "cuda_aware"  straight on a communicator that takes device pointers (a CUDA-aware MPI:
//                 MPIX_Query_cuda_support; DirectCommunicator in one process); declines
//                 otherwise, naming why;
//   "staged_gpu"  over a StagingCommunicator (transport/staging_communicator.h) the instance
//                 owns around any communicator: every message staged through pinned host
//                 memory, peer chunks copied up and reduced by the device's kernel.
// Results equal AllreduceRing on host memory with the same chunk size bit for bit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/allreduce_ring.h"
#include "algorithms/device_kernels.h"
#include "transport/staging_communicator.h"

namespace concord {

/// The ring on device memory of `device` with its own DeviceKernels (its own stream), over
/// `comm` or, when `staged`, over a StagingCommunicator around it.
class DeviceBufferRing : public AllreduceAlgorithm {
 public:
  /// `comm` and `device` must outlive this object; messages of `chunk_bytes`.
  DeviceBufferRing(Communicator& comm, Device& device, size_t chunk_bytes, bool staged);
  /// `data` is device memory of the device; otherwise as AllreduceRing::start.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override { ring_.start(data, count, dtype, op); }
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override {
    ring_.start_out_of_place(input, output, count, dtype, op);
  }
  Progress progress() override { return ring_.progress(); }
  void take_final_ranges(std::vector<ByteRange>& out) override { ring_.take_final_ranges(out); }

 private:
  std::unique_ptr<StagingCommunicator> staging_;
  DeviceKernels kernels_;
  AllreduceRing ring_;
};

/// The ring's predicted time on device buffers (messages of problem.chunk_bytes):
/// AllreduceRing's cost with the reduction priced at kernel_gamma plus one kernel_alpha per
/// reduce-scatter step; `staged` adds, per step, a d2h copy before the send and an h2d
/// copy after the receive (copy_alpha each), and the copy bytes where they exceed the
/// wire bytes (the two copy streams run alongside the network; PCIe is full duplex).
double device_ring_seconds(const Problem& problem, const CostParams& params, bool staged);

/// "cuda_aware": the ring straight on a transport that takes device pointers.
class AllreduceCudaAware : public DeviceBufferRing {
 public:
  /// `comm` must take device pointers of `device` (declines() checks the agreed capability).
  AllreduceCudaAware(Communicator& comm, Device& device, size_t chunk_bytes)
      : DeviceBufferRing(comm, device, chunk_bytes, /*staged=*/false) {}
  static constexpr const char* kName = "cuda_aware";
  static constexpr const char* kDescription =
      "ring with device pointers passed to a CUDA-aware transport (MPIX_Query_cuda_support), reduced by the "
      "device's kernel; no staging";
  static constexpr MemoryKind kMemory = MemoryKind::kDevice;
  /// The transport does not take device pointers on every rank (problem.device).
  static std::string declines(const Problem& problem);
  static Cost cost(const Problem& problem) { return AllreduceRing::cost(problem); }
  static double seconds(const Problem& problem, const CostParams& params) {
    return device_ring_seconds(problem, params, /*staged=*/false);
  }
};

/// "staged_gpu": the ring over a StagingCommunicator around any communicator.
class AllreduceStagedGpu : public DeviceBufferRing {
 public:
  AllreduceStagedGpu(Communicator& comm, Device& device, size_t chunk_bytes)
      : DeviceBufferRing(comm, device, chunk_bytes, /*staged=*/true) {}
  static constexpr const char* kName = "staged_gpu";
  static constexpr const char* kDescription =
      "ring over the host transport with every message staged through pinned host memory; peer chunks "
      "copied up and reduced by the device's kernel";
  static constexpr MemoryKind kMemory = MemoryKind::kDevice;
  static Cost cost(const Problem& problem) { return AllreduceRing::cost(problem); }
  static double seconds(const Problem& problem, const CostParams& params) {
    return device_ring_seconds(problem, params, /*staged=*/true);
  }
};

}  // namespace concord
