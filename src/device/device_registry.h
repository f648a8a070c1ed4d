// Allreduce algorithms for device buffers (docs/algorithms.md, "Device buffers"), ranked
// by the same alpha-beta-gamma cost model as the host ones (algorithms/cost_model.h) plus
// the PCIe copy terms of StagingParams. Today: "staged" (device/allreduce_staged.h) over
// the host algorithm the cost model picks for one chunk. Not registered (not built yet):
// the CUDA-aware MPI path and NCCL (docs/algorithms.md says why).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "device/device.h"

namespace concord {

/// Host <-> device copy constants, in seconds. The defaults are ASSUMPTIONS, not
/// measurements (no GPU was available when they were written): PCIe 4.0 x16 with pinned
/// memory, about 25 GB/s, and 10 us to issue and complete one asynchronous copy.
struct StagingParams {
  double copy_alpha = 10e-6;      ///< per copy, s
  double copy_beta = 1.0 / 25e9;  ///< per byte, s/B
};

struct DeviceAllreduceEntry {
  std::string name;
  std::string description;
  /// "" when it supports the problem, otherwise why it declines.
  std::function<std::string(const Problem&)> declines;
  /// Predicted seconds for the problem, and the chunk size (bytes) that achieves it.
  std::function<double(const Problem&, const CostParams&, const StagingParams&, size_t* chunk_bytes)> seconds;
  /// Creates an instance on `ctx.comm` with `chunk_bytes` chunks on `device`.
  std::function<std::unique_ptr<AllreduceAlgorithm>(const AlgorithmContext& ctx, Device& device, size_t chunk_bytes)>
      create;
};

const std::vector<DeviceAllreduceEntry>& device_allreduce_algorithms();

/// The staged path's predicted time for `problem` with chunks of `chunk_bytes`: C chunks
/// each reduced by the best host algorithm, the copy of each chunk overlapped with the
/// previous chunk's reduction except for one chunk down and one up (fill and drain).
double staged_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging,
                      size_t chunk_bytes);

/// The chunk size (a power of two from 64 KiB to 64 MiB, or the whole message when smaller)
/// minimising staged_seconds().
size_t staged_chunk_bytes(const Problem& problem, const CostParams& params, const StagingParams& staging);

}  // namespace concord
