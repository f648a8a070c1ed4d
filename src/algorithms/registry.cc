#include "algorithms/registry.h"

#include <algorithm>
#include <map>

#include "algorithms/allgather_recursive_doubling.h"
#include "algorithms/allgather_ring.h"
#include "algorithms/allreduce_double_tree.h"
#include "algorithms/allreduce_halving_doubling.h"
#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/allreduce_mpi.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_recursive_doubling.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_tree.h"
#include "algorithms/alltoall_pairwise.h"
#include "algorithms/broadcast_binomial.h"
#include "algorithms/broadcast_chain.h"
#include "algorithms/reduce_scatter_halving.h"
#include "algorithms/reduce_scatter_ring.h"
#include "common/enforce.h"
#include "common/logging.h"

namespace concord {
namespace {

std::string always(const Problem&) { return ""; }

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
  static const std::vector<AllreduceEntry> entries = {
      {"ring", "ring reduce-scatter + ring allgather, chunk-pipelined (bandwidth-optimal)", always, AllreduceRing::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreduceRing>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"tree", "binary tree reduce then broadcast, chunk-pipelined (log P latency)", always,
       AllreducePipelinedTree::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreducePipelinedTree>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"double_tree", "two complementary binary trees, half the data each, chunk-pipelined (NCCL)", always,
       AllreduceDoubleTree::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreduceDoubleTree>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"overlapped_tree",
       "C-Cube: binary tree, each chunk broadcast down as soon as the root has reduced it "
       "(reduce and broadcast overlapped)",
       always, AllreduceOverlappedTree::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreduceOverlappedTree>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"overlapped_double_tree",
       "C-Cube on the double binary tree, half the data each, reduce and broadcast overlapped", always,
       AllreduceOverlappedDoubleTree::cost,
       [](const AlgorithmContext& ctx) {
         return std::make_unique<AllreduceOverlappedDoubleTree>(ctx.comm, ctx.scratch, ctx.chunk_bytes);
       }},
      {"halving_doubling",
       "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather, "
       "2 log2 P rounds (fold when P is not a power of two)",
       always, AllreduceHalvingDoubling::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceHalvingDoubling>(ctx.comm, ctx.scratch); }},
      {"recursive_doubling",
       "whole vector exchanged and reduced log2 P rounds, for small messages "
       "(fold when P is not a power of two)",
       always, AllreduceRecursiveDoubling::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceRecursiveDoubling>(ctx.comm, ctx.scratch); }},
      {"hierarchical", "intra-node binomial reduce, inter-node allreduce of the local roots, intra-node broadcast",
       AllreduceHierarchical::declines, AllreduceHierarchical::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllreduceHierarchical>(ctx); }},
      {"mpi", "the transport's MPI_Allreduce (baseline; blocking; cost estimated, not counted)", AllreduceMpi::declines,
       AllreduceMpi::cost,
       [](const AlgorithmContext& ctx) {
         NativeCollectives* native = ctx.comm.native();
         CONCORD_ENFORCE(native != nullptr, InvalidArgument, "algorithm 'mpi': the transport has no native allreduce");
         return std::make_unique<AllreduceMpi>(*native);
       }},
  };
  return entries;
}

const std::vector<AllgatherEntry>& allgather_algorithms() {
  static const std::vector<AllgatherEntry> entries = {
      {"ring", "ring allgather of variable-size blocks, P-1 steps", always, AllgatherRing::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllgatherRing>(ctx.comm); }},
      {"recursive_doubling",
       "recursive-doubling allgather of variable-size blocks, log2 P rounds "
       "(fold when P is not a power of two)",
       always, AllgatherRecursiveDoubling::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AllgatherRecursiveDoubling>(ctx.comm, ctx.scratch); }},
  };
  return entries;
}

const std::vector<BroadcastEntry>& broadcast_algorithms() {
  static const std::vector<BroadcastEntry> entries = {
      {"binomial", "binomial tree, whole message per edge, ceil(log2 P) rounds", always, BroadcastBinomial::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<BroadcastBinomial>(ctx.comm); }},
      {"chain", "pipelined chain root -> root+1 -> ..., chunked (large messages)", always, BroadcastChain::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<BroadcastChain>(ctx.comm, ctx.chunk_bytes); }},
  };
  return entries;
}

const std::vector<ReduceScatterEntry>& reduce_scatter_algorithms() {
  static const std::vector<ReduceScatterEntry> entries = {
      {"ring", "ring reduce-scatter, P-1 steps (bandwidth-optimal); rank r gets block r", always,
       ReduceScatterRing::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<ReduceScatterRing>(ctx.comm, ctx.scratch); }},
      {"halving", "recursive-halving reduce-scatter, log2 P rounds (fold when P is not a power of two)", always,
       ReduceScatterHalving::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<ReduceScatterHalving>(ctx.comm, ctx.scratch); }},
  };
  return entries;
}

const std::vector<AlltoallEntry>& alltoall_algorithms() {
  static const std::vector<AlltoallEntry> entries = {
      {"pairwise", "pairwise exchange, P-1 steps, one partner per step", always, AlltoallPairwise::cost,
       [](const AlgorithmContext& ctx) { return std::make_unique<AlltoallPairwise>(ctx.comm); }},
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
  for (const auto& entry : entries) {
    const Problem mine = entry_problem(entry);
    if (!entry.declines(mine).empty()) continue;
    const double seconds = entry.cost(mine).seconds(params);
    if (best == nullptr || seconds < best_seconds) {
      best = &entry;
      best_seconds = seconds;
    }
  }
  CONCORD_ENFORCE(best != nullptr, InternalError, "no algorithm supports P=", problem.ranks,
                  " bytes=", problem.bytes());
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
#undef CONCORD_INSTANTIATE

}  // namespace concord
