// Allreduce algorithms for device buffers (docs/algorithms.md, "Device buffers"), ranked
// by the same alpha-beta-gamma cost model as the host ones (algorithms/cost_model.h) plus
// the copy and kernel terms of StagingParams, selected by size like the host ones:
//   "staged"      device -> pinned host in chunks, host algorithm per chunk (CPU reduction),
//                 host -> device (device/allreduce_staged.h);
//   "staged_gpu"  the device ring over StagingCommunicator: every message staged through
//                 pinned host memory, peer chunks copied up and reduced by the device's
//                 kernel (AllreduceRing with DeviceKernels, transport/staging_communicator.h);
//   "cuda_aware"  the device ring straight on a transport that takes device pointers
//                 (a CUDA-aware MPI: MPIX_Query_cuda_support); declines otherwise;
//   "nccl"        NCCL's allreduce (device/allreduce_nccl.h) where NCCL is built, loads and
//                 the device is a CUDA GPU; declines otherwise, naming the reason.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "device/device.h"
#include "device/device_capabilities.h"

namespace concord {

/// Host <-> device copy and device kernel constants, in seconds. The defaults are
/// ASSUMPTIONS, not measurements (no GPU was available when they were written): PCIe 4.0
/// x16 with pinned memory, about 25 GB/s each way, 10 us to issue and complete one
/// asynchronous copy; a reduce kernel reading two and writing one byte per byte at about
/// 1.5 TB/s of HBM (2e-12 s per byte reduced) plus 5 us launch and completion.
struct StagingParams {
  double copy_alpha = 10e-6;      ///< per copy, s
  double copy_beta = 1.0 / 25e9;  ///< per byte, s/B
  double kernel_alpha = 5e-6;     ///< per reduce kernel, s
  double kernel_gamma = 2e-12;    ///< per byte reduced on the device, s/B
};

/// A device-buffer allreduce problem: the host Problem (ranks, nodes, count, dtype, op,
/// chunk_bytes = the ring's message size) plus what the communicator and device offer,
/// agreed on every rank (agree_device_capabilities()).
struct DeviceProblem {
  Problem problem;
  DeviceCapabilities caps;
};

struct DeviceAllreduceEntry {
  std::string name;
  std::string description;
  /// "" when it supports the problem, otherwise why it declines.
  std::function<std::string(const DeviceProblem&)> declines;
  /// Predicted seconds for the problem, and the chunk size (bytes) that achieves it.
  std::function<double(const DeviceProblem&, const CostParams&, const StagingParams&, size_t* chunk_bytes)> seconds;
  /// Creates an instance on `ctx.comm` with `chunk_bytes` chunks on `device`.
  std::function<std::unique_ptr<AllreduceAlgorithm>(const AlgorithmContext& ctx, Device& device, size_t chunk_bytes)>
      create;
};

const std::vector<DeviceAllreduceEntry>& device_allreduce_algorithms();

/// The entry to run `problem` with: `forced` ("" or "auto" = none) when it does not
/// decline, else the non-declining entry with the lowest predicted time (ties: first
/// registered); `chunk_bytes` (may be null) receives the chunk size to create it with.
/// Deterministic: ranks with the same (agreed) inputs choose the same. Throws
/// InvalidArgument for an unknown forced name, InternalError when every entry declines
/// (the message lists each one's reason).
const DeviceAllreduceEntry& select_device_algorithm(const DeviceProblem& problem, const CostParams& params,
                                                    const StagingParams& staging, const std::string& forced = "",
                                                    size_t* chunk_bytes = nullptr);

/// The staged path's predicted time for `problem` with chunks of `chunk_bytes`: C chunks
/// each reduced by the best host algorithm, the copy of each chunk overlapped with the
/// previous chunk's reduction except for one chunk down and one up (fill and drain).
double staged_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging,
                      size_t chunk_bytes);

/// The chunk size (a power of two from 64 KiB to 64 MiB, or the whole message when smaller)
/// minimising staged_seconds().
size_t staged_chunk_bytes(const Problem& problem, const CostParams& params, const StagingParams& staging);

/// The ring's predicted time on device buffers (messages of problem.chunk_bytes):
/// AllreduceRing's cost with the reduction priced at kernel_gamma plus one kernel_alpha per
/// reduce-scatter step; `staged` adds, per step, a d2h copy before the send and an h2d
/// copy after the receive (copy_alpha each), and the copy bytes where they exceed the
/// wire bytes (the two copy streams run alongside the network; PCIe is full duplex).
double device_ring_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging, bool staged);

/// NCCL's predicted time: the ring's messages and bytes reduced on the device, and one
/// kernel_alpha for the whole operation (NCCL runs every step inside one kernel, so there
/// is no per-step launch). An ASSUMPTION like the other device constants: NCCL's own
/// protocols (LL, LL128, Simple) and NVLink bandwidths are not modelled.
double nccl_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging);

}  // namespace concord
