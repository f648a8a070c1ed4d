#include "algorithms/allreduce_hierarchical.h"

#include <algorithm>
#include <numeric>

#include "common/enforce.h"

namespace concord {
namespace {

// `problem` on one node of `ranks` ranks (the intra-node phases).
Problem on_node(const Problem& problem, int ranks) {
  Problem local = problem;
  local.ranks = ranks;
  local.nodes = 1;
  local.uniform_nodes = true;
  local.native_available = false;  // Concord's own algorithms, whose traffic is counted
  return local;
}

// `problem` on `nodes` ranks, one per node (the local roots).
Problem on_roots(const Problem& problem, int nodes) {
  Problem inter = problem;
  inter.ranks = nodes;
  inter.nodes = nodes;
  inter.native_available = false;  // Concord's own algorithms, whose traffic is counted
  inter.uniform_nodes = true;
  return inter;
}

// The same data counted in bytes (broadcast's Problem convention).
Problem in_bytes(Problem problem) {
  problem.count = problem.bytes();
  problem.element_size = 1;
  problem.dtype = DataType::kUInt8;
  return problem;
}

// One call's problem, before it is placed on a phase's ranks.
Problem call_problem(size_t count, DataType dtype, ReduceOp op, size_t chunk_bytes) {
  Problem problem;
  problem.count = count;
  problem.element_size = dtype_size(dtype);
  problem.dtype = dtype;
  problem.op = op;
  problem.chunk_bytes = chunk_bytes;
  return problem;
}

// Adds `phase`'s critical path to `total`.
void add_path(Cost& total, const Cost& phase) {
  total.rounds += phase.rounds;
  total.wire_bytes += phase.wire_bytes;
  total.inter_rounds += phase.inter_rounds;
  total.inter_wire_bytes += phase.inter_wire_bytes;
  total.reduce_bytes += phase.reduce_bytes;
  total.native_rounds += phase.native_rounds;
  total.native_wire_bytes += phase.native_wire_bytes;
}

// Throws InvalidArgument when `name` is neither "" nor a name in `entries`.
template <typename Entries>
void check_name(const Entries& entries, const std::string& name) {
  if (!name.empty() && name != "auto") find_algorithm(entries, name);
}

}  // namespace

AllreduceHierarchical::AllreduceHierarchical(const AlgorithmContext& ctx, Phases phases)
    : scratch_(ctx.scratch),
      chunk_bytes_(std::max<size_t>(ctx.chunk_bytes, 1)),
      cost_params_(ctx.cost_params),
      phases_(std::move(phases)) {
  check_name(reduce_algorithms(), phases_.reduce);
  check_name(allreduce_algorithms(), phases_.inter);
  check_name(broadcast_algorithms(), phases_.broadcast);
  Communicator& comm = ctx.comm;
  const auto& nodes = ctx.node_of_rank;
  CONCORD_ENFORCE(nodes.empty() || static_cast<int>(nodes.size()) == comm.size(), InvalidArgument,
                  "hierarchical allreduce: node_of_rank has ", nodes.size(), " entries for ", comm.size(), " ranks");
  const int node = nodes.empty() ? 0 : nodes[comm.rank()];
  CONCORD_ENFORCE(node >= 0, InvalidArgument, "hierarchical allreduce: rank ", comm.rank(), " has node ", node,
                  " (must be >= 0)");
  local_ = comm.split(node, comm.rank());
  inter_ = comm.split(local_->rank() == 0 ? 0 : -1, comm.rank());
}

template <typename Phase>
Phase& AllreduceHierarchical::instance(std::map<std::string, std::unique_ptr<Phase>>& cache,
                                       const RegistryEntry<Phase>& entry, const AlgorithmContext& ctx) {
  auto& slot = cache[entry.name];
  if (!slot) slot = entry.create(ctx);
  return *slot;
}

void AllreduceHierarchical::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  data_ = static_cast<uint8_t*>(data);
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  final_.reset(count * dtype_size(dtype));
  phase_ = Step::kReduce;
  running_ = nullptr;
  if (count == 0) {
    phase_ = Step::kDone;
    return;
  }
  const Problem problem = call_problem(count, dtype, op, chunk_bytes_);
  const auto& entry =
      select_algorithm(reduce_algorithms(), on_node(problem, local_->size()), cost_params_, phases_.reduce);
  auto& reduce = instance(reduces_, entry, AlgorithmContext{*local_, scratch_, chunk_bytes_, {}, cost_params_});
  reduce.start(data_, count_, dtype_, op_, 0);
  running_ = &reduce;
}

// Local roots, once the node's sum is complete: the allreduce among the roots.
void AllreduceHierarchical::start_inter() {
  phase_ = Step::kInter;
  const Problem problem = call_problem(count_, dtype_, op_, chunk_bytes_);
  const auto& entry =
      select_algorithm(allreduce_algorithms(), on_roots(problem, inter_->size()), cost_params_, phases_.inter);
  std::vector<int> own_nodes(inter_->size());
  std::iota(own_nodes.begin(), own_nodes.end(), 0);
  auto& inter =
      instance(inters_, entry, AlgorithmContext{*inter_, inter_scratch_, chunk_bytes_, own_nodes, cost_params_});
  inter.start(data_, count_, dtype_, op_);
  running_ = &inter;
}

// Every rank of the node, once its part is done: the broadcast from the local root.
void AllreduceHierarchical::start_broadcast() {
  phase_ = Step::kBroadcast;
  const Problem problem = call_problem(count_, dtype_, op_, chunk_bytes_);
  const auto& entry = select_algorithm(broadcast_algorithms(), in_bytes(on_node(problem, local_->size())), cost_params_,
                                       phases_.broadcast);
  auto& broadcast = instance(broadcasts_, entry, AlgorithmContext{*local_, scratch_, chunk_bytes_, {}, cost_params_});
  broadcast.start(data_, problem.bytes(), 0);
  running_ = &broadcast;
}

Progress AllreduceHierarchical::progress() {
  while (phase_ != Step::kDone) {
    if (running_->progress() != Progress::kDone) return Progress::kInProgress;
    switch (phase_) {
      case Step::kReduce:
        if (is_local_root() && inter_ && inter_->size() > 1) {
          start_inter();
          break;
        }
        if (is_local_root()) final_.add(0, count_ * dtype_size(dtype_));
        start_broadcast();
        break;
      case Step::kInter:
        final_.add(0, count_ * dtype_size(dtype_));  // final here; only read from now on
        start_broadcast();
        break;
      case Step::kBroadcast:
        final_.finish();
        phase_ = Step::kDone;
        running_ = nullptr;
        break;
      case Step::kDone: break;
    }
  }
  return Progress::kDone;
}

std::string AllreduceHierarchical::declines(const Problem& problem) {
  if (problem.nodes <= 1) return "one node: nothing to split";
  if (!problem.uniform_nodes) return "nodes hold different numbers of ranks";
  if (problem.ranks <= problem.nodes) return "one rank per node: no intra-node level";
  return "";
}

Problem AllreduceHierarchical::inter_problem(const Problem& problem) {
  return on_roots(problem, std::max(problem.nodes, 1));
}

Problem AllreduceHierarchical::local_problem(const Problem& problem) {
  return on_node(problem, std::max(problem.ranks / std::max(problem.nodes, 1), 1));
}

Problem AllreduceHierarchical::broadcast_problem(const Problem& problem) { return in_bytes(local_problem(problem)); }

AllreduceHierarchical::Chosen AllreduceHierarchical::choose(const Problem& problem, const CostParams& params,
                                                            const Phases& phases) {
  return {select_algorithm(reduce_algorithms(), local_problem(problem), params, phases.reduce),
          select_algorithm(allreduce_algorithms(), inter_problem(problem), params, phases.inter),
          select_algorithm(broadcast_algorithms(), broadcast_problem(problem), params, phases.broadcast)};
}

const AllreduceEntry& AllreduceHierarchical::inter_algorithm(const Problem& problem, const CostParams& params) {
  return choose(problem, params).inter;
}

Cost AllreduceHierarchical::cost(const Problem& problem) { return composed_cost(problem, CostParams{}); }

Cost AllreduceHierarchical::composed_cost(const Problem& problem, const CostParams& params, const Phases& phases) {
  Cost cost;
  const int P = problem.ranks;
  const int N = std::max(problem.nodes, 1);
  if (P == 1 || problem.count == 0) return cost;
  const int L = std::max(P / N, 1);
  const Chosen chosen = choose(problem, params, phases);
  const Problem local = local_problem(problem);
  const Problem bytes = broadcast_problem(problem);
  const Cost reduce = chosen.reduce.cost(local);
  const Cost broadcast = chosen.broadcast.cost(bytes);
  const Cost inter = N > 1 ? chosen.inter.cost(inter_problem(problem)) : Cost{};
  add_path(cost, reduce);
  add_path(cost, inter);
  add_path(cost, broadcast);
  cost.total_messages_sent =
      N * (reduce.total_messages_sent + broadcast.total_messages_sent) + inter.total_messages_sent;
  cost.total_bytes_sent = N * (reduce.total_bytes_sent + broadcast.total_bytes_sent) + inter.total_bytes_sent;
  if (!chosen.reduce.sent_by || !chosen.broadcast.sent_by) {  // an upper bound
    cost.max_messages_sent = reduce.max_messages_sent + broadcast.max_messages_sent + inter.max_messages_sent;
    cost.max_bytes_sent = reduce.max_bytes_sent + broadcast.max_bytes_sent + inter.max_bytes_sent;
    return cost;
  }
  for (int v = 0; v < L; ++v) {  // local rank v; the local root (v = 0) also runs the inter phase
    const RankTraffic up = chosen.reduce.sent_by(local, v);
    const RankTraffic down = chosen.broadcast.sent_by(bytes, v);
    cost.max_messages_sent =
        std::max(cost.max_messages_sent, up.messages + down.messages + (v == 0 ? inter.max_messages_sent : 0));
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, up.bytes + down.bytes + (v == 0 ? inter.max_bytes_sent : 0));
  }
  return cost;
}

}  // namespace concord
