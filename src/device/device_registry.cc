#include "device/device_registry.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "device/allreduce_staged.h"

namespace concord {
namespace {

// The problem one chunk of `chunk_bytes` poses to the host algorithm.
Problem chunk_problem(const Problem& problem, size_t chunk_bytes) {
  Problem chunk = problem;
  chunk.native_available = false;  // MPI_Allreduce is not an inner algorithm (it may not take every dtype)
  chunk.count = std::min(problem.count, std::max<size_t>(chunk_bytes / problem.element_size, 1));
  return chunk;
}

}  // namespace

double staged_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging,
                      size_t chunk_bytes) {
  if (problem.count == 0) return 0;
  const Problem chunk = chunk_problem(problem, chunk_bytes);
  const double chunks = std::ceil(static_cast<double>(problem.count) / static_cast<double>(chunk.count));
  const double reduce = select_algorithm(allreduce_algorithms(), chunk, params).cost(chunk).seconds(params);
  const double copy = staging.copy_alpha + static_cast<double>(chunk.bytes()) * staging.copy_beta;
  // Fill and drain, then each chunk costs the slower of its reduction and its copies.
  return 2 * copy + chunks * reduce + (chunks - 1) * std::max(0.0, copy - reduce);
}

size_t staged_chunk_bytes(const Problem& problem, const CostParams& params, const StagingParams& staging) {
  const size_t whole = std::max<size_t>(problem.bytes(), 1);
  size_t best = whole;
  double best_seconds = staged_seconds(problem, params, staging, whole);
  for (size_t chunk = size_t{64} << 10; chunk < whole && chunk <= (size_t{64} << 20); chunk *= 2) {
    const double seconds = staged_seconds(problem, params, staging, chunk);
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = chunk;
    }
  }
  return best;
}

const std::vector<DeviceAllreduceEntry>& device_allreduce_algorithms() {
  static const std::vector<DeviceAllreduceEntry> entries = {
      {"staged",
       "device -> pinned host in chunks, host allreduce per chunk (best by the cost model), host -> device; "
       "copies overlap the reduction",
       [](const Problem&) { return std::string(); },
       [](const Problem& problem, const CostParams& params, const StagingParams& staging, size_t* chunk_bytes) {
         const size_t chunk = staged_chunk_bytes(problem, params, staging);
         if (chunk_bytes != nullptr) *chunk_bytes = chunk;
         return staged_seconds(problem, params, staging, chunk);
       },
       [](const AlgorithmContext& ctx, Device& device, size_t chunk_bytes) -> std::unique_ptr<AllreduceAlgorithm> {
         // The inner algorithm is chosen per chunk size; every rank computes the same.
         Problem chunk = make_problem(ctx, std::max<size_t>(chunk_bytes / 4, 1), DataType::kFloat32, ReduceOp::kSum);
         chunk.native_available = false;
         const auto& inner = select_algorithm(allreduce_algorithms(), chunk, ctx.cost_params);
         return std::make_unique<AllreduceStaged>(device, inner.create(ctx), chunk_bytes);
       }},
  };
  return entries;
}

}  // namespace concord
