// The algorithm registry (after UCC's coll_score and NCCL's tuning table): every algorithm
// of every collective with its name, a description, the memory it runs on, the conditions it
// supports and its cost model. Each of these is stated once, by the algorithm's class
// (kName, kDescription, kMemory, declines(), cost(), seconds()); registry.cc only lists the
// classes and how to construct them, and the simulator (src/sim/models.cc) and concord-info
// are built from these rows. One registry for every memory kind (UCC's score map over
// memory types): the allreduce rows on device buffers ("staged", "staged_gpu",
// "cuda_aware", "nccl") are rows like the others, declining host problems (and the host
// rows device ones) and what the agreed device capabilities do not offer (Problem::device). select() returns
// the forced algorithm (CONCORD_<COLLECTIVE>_ALGORITHM) when it supports the problem,
// otherwise the one the cost model predicts fastest; an algorithm that declines (e.g.
// needs a power-of-two world size) so falls back to the best one that does not.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "transport/communicator.h"

namespace concord {

/// What an algorithm instance may use. One instance serves many calls of one collective
/// on one communicator (its scratch persists across calls).
class Device;  // device/device.h

struct AlgorithmContext {
  Communicator& comm;
  ScratchBuffer& scratch;
  size_t chunk_bytes = default_chunk_bytes();  ///< pipelining unit in bytes (CONCORD_RING_CHUNK_BYTES)
  /// Node of every rank (size comm.size()), e.g. from MPI's shared-memory split; empty
  /// means one node. Hierarchical algorithms split the communicator by it.
  std::vector<int> node_of_rank;
  /// Machine constants, equal on every rank (the runtime adopts rank 0's); algorithms that
  /// choose a sub-algorithm per call (hierarchical) rank candidates with them.
  CostParams cost_params = {};
  /// The device whose memory the buffers are in: set for the rows on device memory
  /// (their create() needs it), null for host buffers.
  Device* device = nullptr;
};

template <typename AlgorithmType>
struct RegistryEntry {
  std::string name;         ///< e.g. "ring", as CONCORD_ALLREDUCE_ALGORITHM spells it (the class's kName)
  std::string description;  ///< one line, shown by concord-info and concord-sim (kDescription)
  /// "" when the algorithm supports the problem, otherwise why it declines.
  std::function<std::string(const Problem&)> declines;
  std::function<Cost(const Problem&)> cost;
  /// Creates an instance; collective over ctx.comm when the algorithm splits it.
  std::function<std::unique_ptr<AlgorithmType>(const AlgorithmContext&)> create;
  /// What rank `rank` sends for `problem` when the root is rank 0 (the class's sent_by());
  /// empty when the class does not say. Composed algorithms need it for exact per-rank counts.
  std::function<RankTraffic(const Problem&, int rank)> sent_by = {};
  /// Predicted seconds for a problem with the given constants: cost(problem).seconds(params),
  /// or the class's own seconds() where copies and kernels are priced too (device rows).
  std::function<double(const Problem&, const CostParams&)> seconds = {};
  /// The memory the rows runs on (the class's kMemory; host when it has none).
  MemoryKind memory = MemoryKind::kHost;
};

/// The Problem the algorithms of `ctx` are asked to solve: ranks from ctx.comm, nodes and
/// uniform_nodes from ctx.node_of_rank (empty = one node), chunk_bytes from ctx, and
/// native_available from ctx.comm.native_allreduce_supported(dtype, op). `count` and
/// `dtype` as Problem documents per collective (allgather, broadcast, alltoall: bytes as
/// count with kUInt8).
Problem make_problem(const AlgorithmContext& ctx, size_t count, DataType dtype, ReduceOp op);

using AllreduceEntry = RegistryEntry<AllreduceAlgorithm>;
using AllgatherEntry = RegistryEntry<AllgatherAlgorithm>;
using BroadcastEntry = RegistryEntry<BroadcastAlgorithm>;
using ReduceScatterEntry = RegistryEntry<ReduceScatterAlgorithm>;
using AlltoallEntry = RegistryEntry<AlltoallAlgorithm>;
using ReduceEntry = RegistryEntry<ReduceAlgorithm>;

const std::vector<AllreduceEntry>& allreduce_algorithms();
const std::vector<AllgatherEntry>& allgather_algorithms();
const std::vector<BroadcastEntry>& broadcast_algorithms();
const std::vector<ReduceScatterEntry>& reduce_scatter_algorithms();
const std::vector<AlltoallEntry>& alltoall_algorithms();
/// Reduce to a root: a phase of composed algorithms (hierarchical), not a runtime collective.
const std::vector<ReduceEntry>& reduce_algorithms();

/// The entry called `name`. Throws InvalidArgument listing the known names otherwise.
template <typename AlgorithmType>
const RegistryEntry<AlgorithmType>& find_algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                                   const std::string& name);

/// How one entry (by name) would be asked to run a problem, when that differs per entry:
/// e.g. the tree allreduces' chunk size (tree_chunked_problem()). Empty = the same problem.
using ProblemForEntry = std::function<Problem(const std::string& name, const Problem& problem)>;

/// The algorithm to run `problem` with: `forced` ("" or "auto" = none) when it supports
/// the problem, else the supported entry with the lowest predicted time (seconds(); ties:
/// first registered). Each entry is judged on problem_for(name, problem) when problem_for
/// is set. Deterministic, so ranks with the same inputs agree. Throws InvalidArgument for
/// an unknown forced name, InternalError if nothing supports the problem (listing why each
/// entry declines).
template <typename AlgorithmType>
const RegistryEntry<AlgorithmType>& select_algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                                     const Problem& problem, const CostParams& params,
                                                     const std::string& forced = "",
                                                     const ProblemForEntry& problem_for = {});

}  // namespace concord
