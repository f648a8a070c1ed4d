// AllreduceHierarchical: two-level allreduce for ranks spread over several nodes (the
// hierarchical scheme of docs/algorithms.md; cf. Horovod's hierarchical allreduce and
// Thakur, Rabenseifner & Gropp, IJHPCA 2005, for the building blocks), composed of three
// registered phases:
//   1. reduce within each node to its local root (reduce_algorithms(), e.g. the pipelined
//      binomial ReduceBinomial);
//   2. allreduce of the node sums among the local roots, by any registered allreduce
//      (allreduce_algorithms(); the cost model's choice for N ranks on N nodes unless named);
//   3. broadcast within each node from its local root (broadcast_algorithms(), e.g. binomial
//      or the pipelined chain).
// Each phase is chosen by the registry's cost model for the phase's own problem (or named in
// Phases), so what each phase costs, declines and sends is its algorithm's own description;
// this class only sequences them and adds their costs.
//
// Nodes are the groups of AlgorithmContext::node_of_rank (the runtime fills it from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). The constructor splits the communicator once
// (collective): a local communicator per node (local root = the node's lowest rank) and an
// inter-node communicator of the local roots, ordered by rank. Every element is reduced by
// the reduce phase's order on each node, then by the inter algorithm (itself bit-identical
// on the roots), then copied, so all ranks end bit-identical.
//
// Cost for P ranks on N nodes of L = P/N ranks: the reduce phase's cost on L ranks, plus the
// inter algorithm's on N ranks (priced at inter_alpha / inter_beta), plus the broadcast
// phase's on L ranks; counts: N times each intra phase plus the inter phase, the busiest
// rank from the phases' per-rank counts (sent_by()).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "transport/communicator.h"

namespace concord {

class AllreduceHierarchical : public AllreduceAlgorithm {
 public:
  /// The registry names of the phases' algorithms; "" = the registry's cheapest for the
  /// phase's problem. A named algorithm that declines its phase's problem falls back to
  /// the cost model's choice (as select_algorithm() does).
  struct Phases {
    std::string reduce;     ///< within each node (reduce_algorithms())
    std::string inter;      ///< among the local roots (allreduce_algorithms())
    std::string broadcast;  ///< within each node (broadcast_algorithms())
  };
  /// The algorithm of each phase for one problem.
  struct Chosen {
    const ReduceEntry& reduce;
    const AllreduceEntry& inter;
    const BroadcastEntry& broadcast;
  };

  /// Splits ctx.comm by ctx.node_of_rank (collective over ctx.comm; empty = one node).
  /// Throws InvalidArgument when node_of_rank is neither empty nor of size comm.size(), or a
  /// phase names an unknown algorithm. Works for any node map; the registry only selects it
  /// for several uniform nodes.
  explicit AllreduceHierarchical(const AlgorithmContext& ctx, Phases phases = {});

  /// Starts an in-place allreduce of `count` elements of `dtype` at `data` with `op`
  /// (kAverage reduces as kSum). Same arguments on every rank; `data` valid until kDone.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// Per-range completion (AllreduceAlgorithm::take_final_ranges): the whole buffer at a
  /// local root once the inter-node allreduce is done, elsewhere once the broadcast is.
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

  /// Registry name and one-line description (the registry, concord-info and concord-sim
  /// read them from here).
  static constexpr const char* kName = "hierarchical";
  static constexpr const char* kDescription =
      "registered phases: reduce within each node, any registered allreduce among the node roots, broadcast "
      "within each node";
  /// "" when the problem spans several nodes of equal size with more than one rank each.
  static std::string declines(const Problem& problem);
  /// Exact counts and critical path of one call with the phases chosen under default
  /// CostParams (composed_cost()).
  static Cost cost(const Problem& problem);
  /// The sum of the phases' costs for uniform nodes of problem.ranks / problem.nodes ranks,
  /// with the phases choose() picks; the busiest rank exactly where every intra phase
  /// says what each rank sends (sent_by()), otherwise the sum of the phases' maxima.
  static Cost composed_cost(const Problem& problem, const CostParams& params, const Phases& phases = {});
  /// The algorithm of each phase for `problem` (the whole problem, P ranks on
  /// `problem.nodes` nodes) under `params`, honouring the names in `phases`.
  static Chosen choose(const Problem& problem, const CostParams& params, const Phases& phases = {});
  /// The problem the local roots solve: `problem` on `problem.nodes` ranks, one per node.
  static Problem inter_problem(const Problem& problem);
  /// The reduce phase's problem: `problem` on one node of problem.ranks / problem.nodes ranks.
  static Problem local_problem(const Problem& problem);
  /// The broadcast phase's problem: local_problem() in bytes (count = bytes, element size 1).
  static Problem broadcast_problem(const Problem& problem);
  /// The flat allreduce the local roots run for `problem` under `params` (choose().inter).
  static const AllreduceEntry& inter_algorithm(const Problem& problem, const CostParams& params);

 private:
  enum class Step { kReduce, kInter, kBroadcast, kDone };
  // The instance of `entry` on `comm`, created on first use and kept by name.
  template <typename Phase>
  Phase& instance(std::map<std::string, std::unique_ptr<Phase>>& cache, const RegistryEntry<Phase>& entry,
                  const AlgorithmContext& ctx);
  void start_inter();
  void start_broadcast();
  bool is_local_root() const { return local_->rank() == 0; }

  ScratchBuffer& scratch_;
  size_t chunk_bytes_;
  CostParams cost_params_;
  Phases phases_;
  std::unique_ptr<Communicator> local_;  // ranks of this node
  std::unique_ptr<Communicator> inter_;  // local roots only; null elsewhere
  ScratchBuffer inter_scratch_;
  std::map<std::string, std::unique_ptr<ReduceAlgorithm>> reduces_;        // by name
  std::map<std::string, std::unique_ptr<AllreduceAlgorithm>> inters_;      // by name
  std::map<std::string, std::unique_ptr<BroadcastAlgorithm>> broadcasts_;  // by name

  // The current call.
  uint8_t* data_ = nullptr;
  size_t count_ = 0;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  Step phase_ = Step::kDone;
  Algorithm* running_ = nullptr;  // the current phase's algorithm
  FinalRanges final_;
};

}  // namespace concord
