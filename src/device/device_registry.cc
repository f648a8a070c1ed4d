#include "device/device_registry.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/allreduce_ring.h"
#include "algorithms/device_kernels.h"
#include "common/enforce.h"
#include "device/allreduce_nccl.h"
#include "device/allreduce_staged.h"
#include "transport/staging_communicator.h"

namespace concord {
namespace {

// The problem one chunk of `chunk_bytes` poses to the host algorithm.
Problem chunk_problem(const Problem& problem, size_t chunk_bytes) {
  Problem chunk = problem;
  chunk.native_available = false;  // MPI_Allreduce is not an inner algorithm (it may not take every dtype)
  chunk.count = std::min(problem.count, std::max<size_t>(chunk_bytes / problem.element_size, 1));
  return chunk;
}

// AllreduceRing on device buffers with the device's kernels, over `comm` (which takes
// device pointers: "cuda_aware") or over a StagingCommunicator this instance owns around
// it ("staged_gpu").
class DeviceRing : public AllreduceAlgorithm {
 public:
  DeviceRing(Communicator& comm, Device& device, size_t chunk_bytes, bool staged)
      : staging_(staged ? std::make_unique<StagingCommunicator>(comm, device) : nullptr),
        kernels_(device),
        ring_(staged ? *staging_ : comm, kernels_, chunk_bytes) {}
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

std::string declines_adasum(const Problem& problem) {
  if (problem.op == ReduceOp::kAdasum) return "adasum is not element-wise (host buffers only)";
  return "";
}

}  // namespace

double device_ring_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging,
                           bool staged) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return 0;
  const Cost ring = AllreduceRing::cost(problem);
  CostParams on_device = params;
  on_device.gamma = staging.kernel_gamma;
  double seconds = ring.seconds(on_device) + (P - 1) * staging.kernel_alpha;
  if (staged) {
    seconds += 2.0 * (P - 1) * 2 * staging.copy_alpha;
    const double wire = ring.wire_bytes * params.beta + ring.inter_wire_bytes * params.inter_beta;
    seconds += std::max(0.0, static_cast<double>(ring.max_bytes_sent) * staging.copy_beta - wire);
  }
  return seconds;
}

double nccl_seconds(const Problem& problem, const CostParams& params, const StagingParams& staging) {
  if (problem.ranks == 1 || problem.count == 0) return staging.kernel_alpha;
  CostParams on_device = params;
  on_device.gamma = staging.kernel_gamma;
  return AllreduceRing::cost(problem).seconds(on_device) + staging.kernel_alpha;
}

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
       "device -> pinned host in chunks, host allreduce per chunk (best by the cost model; CPU reduction), "
       "host -> device; copies overlap the reduction",
       [](const DeviceProblem& problem) { return declines_adasum(problem.problem); },
       [](const DeviceProblem& problem, const CostParams& params, const StagingParams& staging, size_t* chunk_bytes) {
         const size_t chunk = staged_chunk_bytes(problem.problem, params, staging);
         if (chunk_bytes != nullptr) *chunk_bytes = chunk;
         return staged_seconds(problem.problem, params, staging, chunk);
       },
       [](const AlgorithmContext& ctx, Device& device, size_t chunk_bytes) -> std::unique_ptr<AllreduceAlgorithm> {
         // The inner algorithm is chosen per chunk size; every rank computes the same.
         Problem chunk = make_problem(ctx, std::max<size_t>(chunk_bytes / 4, 1), DataType::kFloat32, ReduceOp::kSum);
         chunk.native_available = false;
         const auto& inner = select_algorithm(allreduce_algorithms(), chunk, ctx.cost_params);
         return std::make_unique<AllreduceStaged>(device, inner.create(ctx), chunk_bytes);
       }},
      {"staged_gpu",
       "ring over the host transport with every message staged through pinned host memory; peer chunks "
       "copied up and reduced by the device's kernel",
       [](const DeviceProblem& problem) { return declines_adasum(problem.problem); },
       [](const DeviceProblem& problem, const CostParams& params, const StagingParams& staging, size_t* chunk_bytes) {
         if (chunk_bytes != nullptr) *chunk_bytes = problem.problem.chunk_bytes;
         return device_ring_seconds(problem.problem, params, staging, /*staged=*/true);
       },
       [](const AlgorithmContext& ctx, Device& device, size_t chunk_bytes) -> std::unique_ptr<AllreduceAlgorithm> {
         return std::make_unique<DeviceRing>(ctx.comm, device, chunk_bytes, /*staged=*/true);
       }},
      {"cuda_aware",
       "ring with device pointers passed to a CUDA-aware transport (MPIX_Query_cuda_support), reduced by the "
       "device's kernel; no staging",
       [](const DeviceProblem& problem) {
         if (!problem.caps.transport.supported) {
           return "the transport does not take device pointers: " + problem.caps.transport.reason;
         }
         return declines_adasum(problem.problem);
       },
       [](const DeviceProblem& problem, const CostParams& params, const StagingParams& staging, size_t* chunk_bytes) {
         if (chunk_bytes != nullptr) *chunk_bytes = problem.problem.chunk_bytes;
         return device_ring_seconds(problem.problem, params, staging, /*staged=*/false);
       },
       [](const AlgorithmContext& ctx, Device& device, size_t chunk_bytes) -> std::unique_ptr<AllreduceAlgorithm> {
         return std::make_unique<DeviceRing>(ctx.comm, device, chunk_bytes, /*staged=*/false);
       }},
      {"nccl",
       "NCCL's allreduce on the device's stream (one NCCL communicator per instance, its unique id broadcast "
       "over the control collectives); needs one GPU per rank",
       [](const DeviceProblem& problem) {
         if (!problem.caps.nccl.available) return "NCCL unavailable: " + problem.caps.nccl.reason;
         return nccl::declines(problem.problem.dtype, problem.problem.op);
       },
       [](const DeviceProblem& problem, const CostParams& params, const StagingParams& staging, size_t* chunk_bytes) {
         if (chunk_bytes != nullptr) *chunk_bytes = problem.problem.chunk_bytes;
         return nccl_seconds(problem.problem, params, staging);
       },
       [](const AlgorithmContext& ctx, Device& device, size_t) -> std::unique_ptr<AllreduceAlgorithm> {
         nccl::Status status;
         nccl::Api* api = nccl::library(&status);
         CONCORD_ENFORCE(api != nullptr, InvalidArgument, "nccl allreduce: ", status.summary());
         return std::make_unique<AllreduceNccl>(ctx.comm, device, *api);
       }},
  };
  return entries;
}

const DeviceAllreduceEntry& select_device_algorithm(const DeviceProblem& problem, const CostParams& params,
                                                    const StagingParams& staging, const std::string& forced,
                                                    size_t* chunk_bytes) {
  const auto& entries = device_allreduce_algorithms();
  std::string reasons;
  if (!forced.empty() && forced != "auto") {
    const auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.name == forced; });
    if (it == entries.end()) {
      std::string known;
      for (const auto& entry : entries) known += (known.empty() ? "" : ", ") + entry.name;
      CONCORD_THROW(InvalidArgument, "unknown device allreduce algorithm '", forced, "' (known: ", known, ")");
    }
    if (it->declines(problem).empty()) {
      if (chunk_bytes != nullptr) it->seconds(problem, params, staging, chunk_bytes);
      return *it;
    }
  }
  const DeviceAllreduceEntry* best = nullptr;
  double best_seconds = 0;
  size_t best_chunk = 0;
  for (const auto& entry : entries) {
    const std::string reason = entry.declines(problem);
    if (!reason.empty()) {
      reasons += "; " + entry.name + ": " + reason;
      continue;
    }
    size_t chunk = 0;
    const double seconds = entry.seconds(problem, params, staging, &chunk);
    if (best == nullptr || seconds < best_seconds) {
      best = &entry;
      best_seconds = seconds;
      best_chunk = chunk;
    }
  }
  CONCORD_ENFORCE(best != nullptr, InternalError, "no device allreduce algorithm supports P=", problem.problem.ranks,
                  " bytes=", problem.problem.bytes(), reasons);
  if (chunk_bytes != nullptr) *chunk_bytes = best_chunk;
  return *best;
}

}  // namespace concord
