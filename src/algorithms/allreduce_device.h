// The allreduces on device buffers that run a host algorithm's schedule with the device's
// kernels: one row template, OnDevice<Host, transport>, instead of a class per algorithm.
// Every host algorithm that reduces and copies only through the Kernels of its context
// (algorithms/kernels.h) -- the ring, the pipelined trees (tree_pipeline.h) and the
// exchange schedules (halving-doubling, recursive doubling; exchange_schedule.h) -- runs
// unchanged on device memory when given DeviceKernels (algorithms/device_kernels.h: its
// kernels on a stream of the device, tickets completed by events) and a communicator that
// takes device pointers: the GPU-reduction design of Awan et al., "Scalable Distributed
// DNN Training using TensorFlow and CUDA-Aware MPI" (CCGrid 2019), CUDA-aware
// point-to-point plus device reduction kernels, the host never touching the buffer. Two
// transports, two rows per host algorithm in the registry (algorithms/registry.h):
//   DeviceTransport::kCudaAware  straight on the communicator, which must take device
//                                pointers (a CUDA-aware MPI: MPIX_Query_cuda_support;
//                                DirectCommunicator in one process); declines otherwise,
//                                naming why;
//   DeviceTransport::kStagedGpu  over a StagingCommunicator (transport/staging_communicator.h)
//                                the instance owns around any communicator: every message
//                                staged through pinned host memory.
// Row names: the ring's rows keep the transport's own name ("cuda_aware", "staged_gpu",
// the first device rows); every other host algorithm's are "<transport>_<host name>",
// e.g. "cuda_aware_tree", "staged_gpu_halving_doubling" (device_row_name()).
// Results equal the host algorithm on host memory with the same chunk size bit for bit:
// the same schedule reduces the same operands in the same order, and the device kernels
// are the CPU kernels' per-element functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "algorithms/allreduce_double_tree.h"
#include "algorithms/allreduce_halving_doubling.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_recursive_doubling.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_tree.h"
#include "algorithms/device_kernels.h"
#include "transport/staging_communicator.h"

namespace concord {

/// How a device row's messages travel (header comment).
enum class DeviceTransport { kCudaAware, kStagedGpu };

/// "cuda_aware" or "staged_gpu".
const char* device_transport_name(DeviceTransport transport);

/// The registry name of host algorithm `host` (its kName) on device memory over
/// `transport`: the transport's name for "ring", "<transport>_<host>" otherwise.
std::string device_row_name(const std::string& host, DeviceTransport transport);

/// The transport of a host algorithm's device row ("cuda_aware", "staged_gpu_tree", ...);
/// nullopt for every other row.
std::optional<DeviceTransport> device_transport_of(const std::string& row);

/// The host algorithm a registry row runs: "ring" for "cuda_aware" and "staged_gpu",
/// "tree" for "cuda_aware_tree", ...; `row` itself for every other row. Per-algorithm
/// settings keyed by the host name (the tree chunk count, tree_chunking.h) use it.
std::string host_algorithm_of(const std::string& row);

/// Why a cuda_aware row declines `problem`: the transport does not take device pointers on
/// every rank (problem.device, agreed by agree_device_capabilities()); "" when it does.
std::string cuda_aware_declines(const Problem& problem);

/// Predicted seconds of a host algorithm on device buffers: `cost` (the host algorithm's,
/// for `problem`) with the reduction priced at staging.kernel_gamma instead of gamma, plus
/// staging.kernel_alpha per kernel of `steps`; kStagedGpu adds per message step a d2h copy
/// before the send and an h2d copy after the receive (2 copy_alpha), and the copy bytes
/// (max_bytes_sent * copy_beta) where they exceed the wire time (the copies run alongside
/// the network; PCIe is full duplex). 0 for one rank or no elements.
double device_seconds(const Cost& cost, const DeviceSteps& steps, const Problem& problem, const CostParams& params,
                      DeviceTransport transport);

/// What a device row instance owns besides its algorithm: the device's kernels (a stream
/// of their own) and, for kStagedGpu, the StagingCommunicator around the given one.
class DeviceRowResources {
 public:
  /// `comm` and `device` must outlive this object.
  DeviceRowResources(Communicator& comm, Device& device, DeviceTransport transport);
  /// The communicator the algorithm sends over (takes device pointers).
  Communicator& comm() { return staging_ ? *staging_ : comm_; }
  Kernels& kernels() { return kernels_; }

 private:
  Communicator& comm_;
  std::unique_ptr<StagingCommunicator> staging_;
  DeviceKernels kernels_;
};

/// Host algorithm `Host` (constructible from (Communicator&, Kernels&, chunk_bytes) or
/// (Communicator&, Kernels&); with static kName, kDescription, cost() and device_steps())
/// on device memory of one device over `kTransport`: a registry row (kName, kDescription,
/// kMemory, declines(), cost(), seconds()).
template <typename Host, DeviceTransport kTransport>
class OnDevice : public AllreduceAlgorithm {
 public:
  /// `comm` and `device` must outlive this object; `chunk_bytes` as Host's (ignored by a
  /// Host without one).
  OnDevice(Communicator& comm, Device& device, size_t chunk_bytes)
      : resources_(comm, device, kTransport), algorithm_(make(resources_.comm(), resources_.kernels(), chunk_bytes)) {}
  /// `data` is device memory of the device (`count` elements of `dtype`); otherwise as
  /// Host::start. Throws InvalidArgument for op kAdasum (as Host).
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override {
    algorithm_.start(data, count, dtype, op);
  }
  /// `input` and `output` are device memory; as Host::start_out_of_place.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override {
    algorithm_.start_out_of_place(input, output, count, dtype, op);
  }
  /// Host::progress: advances without blocking (kernel tickets polled, never waited on).
  /// Throws CommError on transport failure, DeviceError when the device reported one.
  Progress progress() override { return algorithm_.progress(); }
  /// Host::take_final_ranges: byte ranges of the output final on this rank, each once the
  /// kernel that last wrote it is done.
  void take_final_ranges(std::vector<ByteRange>& out) override { algorithm_.take_final_ranges(out); }

  static inline const std::string kName = device_row_name(Host::kName, kTransport);
  static inline const std::string kDescription =
      std::string(Host::kDescription) + (kTransport == DeviceTransport::kCudaAware
                                             ? "; device buffers passed to a CUDA-aware transport "
                                               "(MPIX_Query_cuda_support), reduced by the device's kernel"
                                             : "; device buffers, every message staged through pinned host "
                                               "memory, reduced by the device's kernel");
  static constexpr MemoryKind kMemory = MemoryKind::kDevice;
  /// kCudaAware: cuda_aware_declines(); kStagedGpu supports every element-wise problem.
  static std::string declines(const Problem& problem) {
    return kTransport == DeviceTransport::kCudaAware ? cuda_aware_declines(problem) : "";
  }
  /// The host algorithm's messages and bytes (the same schedule).
  static Cost cost(const Problem& problem) { return Host::cost(problem); }
  /// device_seconds() of the host algorithm's cost and device steps.
  static double seconds(const Problem& problem, const CostParams& params) {
    return device_seconds(Host::cost(problem), Host::device_steps(problem), problem, params, kTransport);
  }

 private:
  static Host make(Communicator& comm, Kernels& kernels, size_t chunk_bytes) {
    if constexpr (std::is_constructible_v<Host, Communicator&, Kernels&, size_t>) {
      return Host(comm, kernels, chunk_bytes);
    } else {
      return Host(comm, kernels);
    }
  }

  DeviceRowResources resources_;  // before algorithm_, which uses it
  Host algorithm_;
};

/// "cuda_aware": the ring straight on a transport that takes device pointers.
using AllreduceCudaAware = OnDevice<AllreduceRing, DeviceTransport::kCudaAware>;
/// "staged_gpu": the ring over a StagingCommunicator around any communicator.
using AllreduceStagedGpu = OnDevice<AllreduceRing, DeviceTransport::kStagedGpu>;

}  // namespace concord
