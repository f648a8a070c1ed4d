#include "algorithms/registry.h"

#include "algorithms/allgather_ring.h"
#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/allreduce_mpi.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/broadcast_binomial.h"
#include "common/enforce.h"
#include "common/logging.h"

namespace concord {
namespace {

std::string always(const Problem&) { return ""; }

}  // namespace

const std::vector<AllreduceEntry>& allreduce_algorithms() {
  static const std::vector<AllreduceEntry> entries = {
      {"ring", "ring reduce-scatter + ring allgather, chunk-pipelined (bandwidth-optimal)", always,
       AllreduceRing::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreduceRing>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"hierarchical",
       "intra-node binomial reduce, inter-node allreduce of the local roots, intra-node broadcast",
       AllreduceHierarchical::declines, AllreduceHierarchical::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceHierarchical>(ctx); }},
      {"mpi", "the transport's MPI_Allreduce (baseline; blocking; cost estimated, not counted)",
       AllreduceMpi::declines, AllreduceMpi::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceMpi>(ctx.comm); }},
  };
  return entries;
}

const std::vector<AllgatherEntry>& allgather_algorithms() {
  static const std::vector<AllgatherEntry> entries = {
      {"ring", "ring allgather of variable-size blocks, P-1 steps", always, AllgatherRing::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllgatherRing>(ctx.comm); }},
  };
  return entries;
}

const std::vector<BroadcastEntry>& broadcast_algorithms() {
  static const std::vector<BroadcastEntry> entries = {
      {"binomial", "binomial tree, whole message per edge, ceil(log2 P) rounds", always,
       BroadcastBinomial::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<BroadcastBinomial>(ctx.comm); }},
  };
  return entries;
}

const std::vector<ReduceScatterEntry>& reduce_scatter_algorithms() {
  static const std::vector<ReduceScatterEntry> entries = {};
  return entries;
}

const std::vector<AlltoallEntry>& alltoall_algorithms() {
  static const std::vector<AlltoallEntry> entries = {};
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
                                                     const std::string& forced) {
  if (!forced.empty() && forced != "auto") {
    const auto& entry = find_algorithm(entries, forced);
    const std::string reason = entry.declines(problem);
    if (reason.empty()) return entry;
    CONCORD_LOG_DEBUG("algorithm '{}' declines P={} bytes={}: {}; falling back to the cost model",
                      forced, problem.ranks, problem.bytes(), reason);
  }
  const RegistryEntry<AlgorithmType>* best = nullptr;
  double best_seconds = 0;
  for (const auto& entry : entries) {
    if (!entry.declines(problem).empty()) continue;
    const double seconds = entry.cost(problem).seconds(params);
    if (best == nullptr || seconds < best_seconds) {
      best = &entry;
      best_seconds = seconds;
    }
  }
  CONCORD_ENFORCE(best != nullptr, InternalError, "no algorithm supports P=", problem.ranks,
                  " bytes=", problem.bytes());
  return *best;
}

#define CONCORD_INSTANTIATE(Type)                                                              \
  template const RegistryEntry<Type>& find_algorithm(const std::vector<RegistryEntry<Type>>&, \
                                                     const std::string&);                     \
  template const RegistryEntry<Type>& select_algorithm(                                        \
      const std::vector<RegistryEntry<Type>>&, const Problem&, const CostParams&, const std::string&);
CONCORD_INSTANTIATE(AllreduceAlgorithm)
CONCORD_INSTANTIATE(AllgatherAlgorithm)
CONCORD_INSTANTIATE(BroadcastAlgorithm)
CONCORD_INSTANTIATE(ReduceScatterAlgorithm)
CONCORD_INSTANTIATE(AlltoallAlgorithm)
#undef CONCORD_INSTANTIATE

}  // namespace concord
