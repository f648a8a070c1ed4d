#include "algorithms/registry.h"

#include <algorithm>
#include <map>
#include <type_traits>

#include "algorithms/allgather_recursive_doubling.h"
#include "algorithms/allgather_ring.h"
#include "algorithms/allreduce_adasum.h"
#include "algorithms/allreduce_device.h"
#include "algorithms/allreduce_double_tree.h"
#include "algorithms/allreduce_halving_doubling.h"
#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/allreduce_mpi.h"
#include "algorithms/allreduce_nccl.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_recursive_doubling.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_staged.h"
#include "algorithms/allreduce_tree.h"
#include "algorithms/alltoall_pairwise.h"
#include "algorithms/broadcast_binomial.h"
#include "algorithms/broadcast_chain.h"
#include "algorithms/reduce_binomial.h"
#include "algorithms/reduce_scatter_halving.h"
#include "algorithms/reduce_scatter_ring.h"
#include "common/enforce.h"
#include "common/logging.h"

namespace concord {
namespace {

std::string always(const Problem&) { return ""; }

// The registry row of algorithm A, from what A says about itself: A::kName,
// A::kDescription, A::cost and, when A has them, A::declines (otherwise it supports every
// element-wise problem on its memory), A::kMemory (otherwise host memory) and A::seconds
// (otherwise cost().seconds()). Only how to construct it is given here. Op kAdasum is not
// element-wise: only the adasum row takes it.
template <typename A, typename Base>
RegistryEntry<Base> describe(std::function<std::unique_ptr<Base>(const AlgorithmContext&)> create) {
  RegistryEntry<Base> entry{A::kName, A::kDescription, always, A::cost, std::move(create)};
  if constexpr (requires { A::kMemory; }) entry.memory = A::kMemory;
  std::function<std::string(const Problem&)> own = always;
  if constexpr (requires(const Problem& p) { A::declines(p); }) own = A::declines;
  entry.declines = [memory = entry.memory, own](const Problem& problem) -> std::string {
    if (problem.memory != memory) return memory == MemoryKind::kHost ? "host buffers only" : "device buffers only";
    if (std::string reason = own(problem); !reason.empty()) return reason;
    if (problem.op == ReduceOp::kAdasum && !std::is_same_v<A, AllreduceAdasum>) {
      return "adasum is not element-wise (the adasum row runs it)";
    }
    return "";
  };
  if constexpr (requires(const Problem& p) { A::sent_by(p, 0); }) entry.sent_by = A::sent_by;
  if constexpr (requires(const Problem& p, const CostParams& c) { A::seconds(p, c); }) {
    entry.seconds = [](const Problem& problem, const CostParams& params) { return A::seconds(problem, params); };
  } else {
    entry.seconds = [](const Problem& problem, const CostParams& params) { return A::cost(problem).seconds(params); };
  }
  return entry;
}

// describe() for a row on device buffers, constructed from (comm, device, chunk_bytes).
template <typename A>
AllreduceEntry on_device() {
  return describe<A, AllreduceAlgorithm>([](const AlgorithmContext& ctx) -> std::unique_ptr<AllreduceAlgorithm> {
    CONCORD_ENFORCE(ctx.device != nullptr, InvalidArgument, "algorithm '", A::kName,
                    "' runs on device buffers: no device");
    return std::make_unique<A>(ctx.comm, *ctx.device, ctx.chunk_bytes);
  });
}

// The rows of host algorithm H on device memory: staged_gpu first, then cuda_aware (the
// ring's order since they were its own classes).
template <typename H>
void append_device_rows(std::vector<AllreduceEntry>& rows) {
  rows.push_back(on_device<OnDevice<H, DeviceTransport::kStagedGpu>>());
  rows.push_back(on_device<OnDevice<H, DeviceTransport::kCudaAware>>());
}

// describe() for an algorithm constructed from (comm, scratch, chunk_bytes).
template <typename A, typename Base>
RegistryEntry<Base> chunked() {
  return describe<A, Base>(
      [](const AlgorithmContext& ctx) { return std::make_unique<A>(ctx.comm, ctx.scratch, ctx.chunk_bytes); });
}

// describe() for an algorithm constructed from (comm, scratch).
template <typename A, typename Base>
RegistryEntry<Base> with_scratch() {
  return describe<A, Base>([](const AlgorithmContext& ctx) { return std::make_unique<A>(ctx.comm, ctx.scratch); });
}

// describe() for an algorithm constructed from (comm).
template <typename A, typename Base>
RegistryEntry<Base> plain() {
  return describe<A, Base>([](const AlgorithmContext& ctx) { return std::make_unique<A>(ctx.comm); });
}

}  // namespace

Problem make_problem(const AlgorithmContext& ctx, size_t count, DataType dtype, ReduceOp op) {
  Problem p;
  p.ranks = ctx.comm.size();
  p.count = count;
  p.element_size = dtype_size(dtype);
  p.dtype = dtype;
  p.op = op;
  p.chunk_bytes = ctx.chunk_bytes;
  NativeCollectives* native = ctx.comm.native();
  p.native_available = native != nullptr && native->native_allreduce_supported(dtype, op);
  std::map<int, int> ranks_per_node;
  for (int node : ctx.node_of_rank) ++ranks_per_node[node];
  p.nodes = std::max<int>(static_cast<int>(ranks_per_node.size()), 1);
  p.uniform_nodes = std::all_of(ranks_per_node.begin(), ranks_per_node.end(),
                                [&](const auto& node) { return node.second == ranks_per_node.begin()->second; });
  return p;
}

const std::vector<AllreduceEntry>& allreduce_algorithms() {
  using Base = AllreduceAlgorithm;
  static const std::vector<AllreduceEntry> entries = [] {
    std::vector<AllreduceEntry> rows = {
        chunked<AllreduceRing, Base>(),
        chunked<AllreducePipelinedTree, Base>(),
        chunked<AllreduceDoubleTree, Base>(),
        chunked<AllreduceOverlappedTree, Base>(),
        chunked<AllreduceOverlappedDoubleTree, Base>(),
        chunked<AllreduceHalvingDoubling, Base>(),
        with_scratch<AllreduceRecursiveDoubling, Base>(),
        describe<AllreduceHierarchical, Base>(
            [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceHierarchical>(ctx); }),
        describe<AllreduceMpi, Base>([](const AlgorithmContext& ctx) {
          NativeCollectives* native = ctx.comm.native();
          CONCORD_ENFORCE(native != nullptr, InvalidArgument, "algorithm 'mpi': the transport has no native allreduce");
          return std::make_unique<AllreduceMpi>(*native);
        }),
        plain<AllreduceAdasum, Base>(),
        // Device buffers (docs/algorithms.md, "Device buffers").
        describe<AllreduceStaged, Base>([](const AlgorithmContext& ctx) -> std::unique_ptr<Base> {
          CONCORD_ENFORCE(ctx.device != nullptr, InvalidArgument,
                          "algorithm 'staged' runs on device buffers: no device");
          return std::make_unique<AllreduceStaged>(ctx);
        }),
    };
    // Every host algorithm that reduces through the Kernels of its context, on device
    // memory over both transports (algorithms/allreduce_device.h).
    append_device_rows<AllreduceRing>(rows);
    append_device_rows<AllreducePipelinedTree>(rows);
    append_device_rows<AllreduceDoubleTree>(rows);
    append_device_rows<AllreduceOverlappedTree>(rows);
    append_device_rows<AllreduceOverlappedDoubleTree>(rows);
    append_device_rows<AllreduceHalvingDoubling>(rows);
    append_device_rows<AllreduceRecursiveDoubling>(rows);
    rows.push_back(describe<AllreduceNccl, Base>([](const AlgorithmContext& ctx) -> std::unique_ptr<Base> {
      CONCORD_ENFORCE(ctx.device != nullptr, InvalidArgument, "algorithm 'nccl' runs on device buffers: no device");
      nccl::Status status;
      nccl::Api* api = nccl::library(&status);
      CONCORD_ENFORCE(api != nullptr, InvalidArgument, "nccl allreduce: ", status.summary());
      return std::make_unique<AllreduceNccl>(ctx.comm, *ctx.device, *api);
    }));
    return rows;
  }();
  return entries;
}

const std::vector<AllgatherEntry>& allgather_algorithms() {
  static const std::vector<AllgatherEntry> entries = {
      plain<AllgatherRing, AllgatherAlgorithm>(),
      with_scratch<AllgatherRecursiveDoubling, AllgatherAlgorithm>(),
  };
  return entries;
}

const std::vector<BroadcastEntry>& broadcast_algorithms() {
  static const std::vector<BroadcastEntry> entries = {
      plain<BroadcastBinomial, BroadcastAlgorithm>(),
      describe<BroadcastChain, BroadcastAlgorithm>(
          [](const AlgorithmContext& ctx) { return std::make_unique<BroadcastChain>(ctx.comm, ctx.chunk_bytes); }),
  };
  return entries;
}

const std::vector<ReduceScatterEntry>& reduce_scatter_algorithms() {
  static const std::vector<ReduceScatterEntry> entries = {
      with_scratch<ReduceScatterRing, ReduceScatterAlgorithm>(),
      with_scratch<ReduceScatterHalving, ReduceScatterAlgorithm>(),
  };
  return entries;
}

const std::vector<AlltoallEntry>& alltoall_algorithms() {
  static const std::vector<AlltoallEntry> entries = {
      plain<AlltoallPairwise, AlltoallAlgorithm>(),
  };
  return entries;
}

const std::vector<ReduceEntry>& reduce_algorithms() {
  static const std::vector<ReduceEntry> entries = {
      chunked<ReduceBinomial, ReduceAlgorithm>(),
  };
  return entries;
}

template <typename AlgorithmType>
const RegistryEntry<AlgorithmType>& find_algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                                   const std::string& name) {
  std::string known;
  for (const auto& entry : entries) {
    if (entry.name == name) return entry;
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  CONCORD_THROW(InvalidArgument, "unknown algorithm '", name, "'; known: ", known);
}

template <typename AlgorithmType>
const RegistryEntry<AlgorithmType>& select_algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                                     const Problem& problem, const CostParams& params,
                                                     const std::string& forced, const ProblemForEntry& problem_for) {
  const auto entry_problem = [&](const RegistryEntry<AlgorithmType>& entry) {
    return problem_for ? problem_for(entry.name, problem) : problem;
  };
  if (!forced.empty() && forced != "auto") {
    const auto& entry = find_algorithm(entries, forced);
    const std::string reason = entry.declines(entry_problem(entry));
    if (reason.empty()) return entry;
    CONCORD_LOG_DEBUG("algorithm '{}' declines P={} bytes={}: {}; falling back to the cost model", forced,
                      problem.ranks, problem.bytes(), reason);
  }
  const RegistryEntry<AlgorithmType>* best = nullptr;
  double best_seconds = 0;
  std::string reasons;
  for (const auto& entry : entries) {
    const Problem mine = entry_problem(entry);
    if (const std::string reason = entry.declines(mine); !reason.empty()) {
      reasons += "; " + entry.name + ": " + reason;
      continue;
    }
    const double seconds = entry.seconds(mine, params);
    if (best == nullptr || seconds < best_seconds) {
      best = &entry;
      best_seconds = seconds;
    }
  }
  CONCORD_ENFORCE(best != nullptr, InternalError, "no algorithm supports P=", problem.ranks, " bytes=", problem.bytes(),
                  reasons);
  return *best;
}

#define CONCORD_INSTANTIATE(Type)                                                                                  \
  template const RegistryEntry<Type>& find_algorithm(const std::vector<RegistryEntry<Type>>&, const std::string&); \
  template const RegistryEntry<Type>& select_algorithm(const std::vector<RegistryEntry<Type>>&, const Problem&,    \
                                                       const CostParams&, const std::string&, const ProblemForEntry&);
CONCORD_INSTANTIATE(AllreduceAlgorithm)
CONCORD_INSTANTIATE(AllgatherAlgorithm)
CONCORD_INSTANTIATE(BroadcastAlgorithm)
CONCORD_INSTANTIATE(ReduceScatterAlgorithm)
CONCORD_INSTANTIATE(AlltoallAlgorithm)
CONCORD_INSTANTIATE(ReduceAlgorithm)
#undef CONCORD_INSTANTIATE

}  // namespace concord
