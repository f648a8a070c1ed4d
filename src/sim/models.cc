#include "sim/models.h"

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
#include "algorithms/broadcast_binomial.h"
#include "algorithms/broadcast_chain.h"
#include "algorithms/reduce_binomial.h"
#include "algorithms/registry.h"
#include "common/enforce.h"
#include "patterns/chunking.h"
#include "patterns/recursive_doubling.h"
#include "patterns/ring.h"
#include "sim/closed_form.h"
#include "sim/schedules.h"
#include "sim/simulator.h"

namespace concord::sim {
namespace {

using ScheduleFn = Schedule (*)(const Problem&);
using MessagesFn = uint64_t (*)(const Problem&, const Topology&);
using ClosedFormFn = double (*)(const Problem&, const Topology&, double);

// The model of algorithm class A: a flat schedule generator of the whole world.
template <typename A>
Model model_of(ScheduleFn schedule, MessagesFn messages, ClosedFormFn closed_form) {
  return {A::kName, [schedule](const Problem& p, const Topology&) { return schedule(p); }, messages, closed_form};
}

bool trivial(const Problem& problem) { return problem.ranks == 1 || problem.count == 0; }

uint64_t ring_messages(const Problem& problem, const Topology&) {
  const int P = problem.ranks;
  if (trivial(problem)) return 0;
  const size_t largest = patterns::segment(problem.count, P, 0).count * problem.element_size;
  return 2ull * (P - 1) * P * chunk_count(largest, problem.chunk_bytes);
}

uint64_t tree_messages(int P, size_t count, const Problem& problem) {
  if (P == 1 || count == 0) return 0;
  return 2ull * (P - 1) * patterns::ChunkPlan::make(count, problem.element_size, problem.chunk_bytes).chunks;
}

uint64_t single_tree_messages(const Problem& p, const Topology&) { return tree_messages(p.ranks, p.count, p); }

// Both trees of the double binary tree, half of the buffer each.
uint64_t double_tree_messages(const Problem& p, const Topology&) {
  return tree_messages(p.ranks, patterns::segment(p.count, 2, 0).count, p) +
         tree_messages(p.ranks, patterns::segment(p.count, 2, 1).count, p);
}

// Fold, log2 p rounds of one message per rank, unfold.
uint64_t recursive_doubling_messages(const Problem& p, const Topology&) {
  if (trivial(p)) return 0;
  const int pof2 = patterns::floor_pow2(p.ranks);
  return static_cast<uint64_t>(pof2) * patterns::log2_pow2(pof2) + 2ull * (p.ranks - pof2);
}
// Its sends go in pieces of p.chunk_bytes: counted from its step lists.
uint64_t halving_doubling_messages(const Problem& p, const Topology&) {
  return trivial(p) ? 0 : AllreduceHalvingDoubling::cost(p).total_messages_sent;
}

// The phases AllreduceHierarchical runs for `problem` on `topology` (picked as the runtime
// would with the topology's constants), with their models.
struct HierarchicalPhases {
  const PhaseModel& reduce;
  const SimAlgorithm& inter;
  const PhaseModel& broadcast;
};
HierarchicalPhases phases_of(const Problem& problem, const Topology& topology) {
  const auto chosen = AllreduceHierarchical::choose(problem, params_of(topology));
  return {find_phase_model(reduce_models(), chosen.reduce.name), find_simulated(chosen.inter.name),
          find_phase_model(broadcast_models(), chosen.broadcast.name)};
}

Model hierarchical_model() {
  return {
      AllreduceHierarchical::kName,
      [](const Problem& p, const Topology& t) {
        const HierarchicalPhases phases = phases_of(p, t);
        const Problem local = AllreduceHierarchical::local_problem(p);
        const Problem bytes = AllreduceHierarchical::broadcast_problem(p);
        return hierarchical_schedule(
            p, t.ranks_per_node(),
            [&](Schedule& s, const Group& node, OpId ready) { return phases.reduce.append(s, node, ready, local); },
            [&](const Problem& among) { return phases.inter.schedule(among, Topology::flat(among.ranks, {})); },
            [&](Schedule& s, const Group& node, OpId ready) { return phases.broadcast.append(s, node, ready, bytes); });
      },
      [](const Problem& p, const Topology& t) -> uint64_t {
        // The phases' exact counts, as the registry's composed cost adds them.
        const auto chosen = AllreduceHierarchical::choose(p, params_of(t));
        const Problem local = AllreduceHierarchical::local_problem(p);
        const uint64_t intra = chosen.reduce.cost(local).total_messages_sent +
                               chosen.broadcast.cost(AllreduceHierarchical::broadcast_problem(p)).total_messages_sent;
        const Problem among = AllreduceHierarchical::inter_problem(p);
        return trivial(p) ? 0 : t.nodes() * intra + find_simulated(chosen.inter.name).messages(among, t);
      },
      [](const Problem& p, const Topology& t, double gamma) {
        if (trivial(p)) return 0.0;
        const HierarchicalPhases phases = phases_of(p, t);
        const LinkParams inter = t.nodes() > 1 ? t.inter() : t.intra();
        const Problem among = AllreduceHierarchical::inter_problem(p);
        return phases.reduce.closed_form(AllreduceHierarchical::local_problem(p), t.intra(), gamma) +
               phases.inter.closed_form(among, Topology::flat(t.nodes(), inter), gamma) +
               phases.broadcast.closed_form(AllreduceHierarchical::broadcast_problem(p), t.intra(), gamma);
      }};
}

// A tree phase within one node: `shape` over the node, the problem's count in `chunks`.
OpId tree_broadcast(Schedule& s, const Group& node, OpId ready, const TreeShape& shape, size_t bytes, int chunks) {
  const auto done = append_tree_broadcast(s, node, shape, 0, bytes, 1, chunks, std::vector<OpId>(chunks, ready));
  return done.empty() ? kNoOp : done[0];
}

}  // namespace

const std::vector<Model>& allreduce_models() {
  static const std::vector<Model> models = {
      model_of<AllreduceRing>(ring_schedule, ring_messages, ring_closed_form),
      model_of<AllreducePipelinedTree>(tree_schedule, single_tree_messages, tree_closed_form),
      model_of<AllreduceDoubleTree>(double_tree_schedule, double_tree_messages, double_tree_closed_form),
      model_of<AllreduceOverlappedTree>(overlapped_tree_schedule, single_tree_messages, overlapped_tree_closed_form),
      model_of<AllreduceOverlappedDoubleTree>(overlapped_double_tree_schedule, double_tree_messages,
                                              overlapped_double_tree_closed_form),
      model_of<AllreduceHalvingDoubling>(halving_doubling_schedule, halving_doubling_messages,
                                         halving_doubling_closed_form),
      model_of<AllreduceRecursiveDoubling>(recursive_doubling_schedule, recursive_doubling_messages,
                                           recursive_doubling_closed_form),
      hierarchical_model(),
  };
  return models;
}

const std::vector<PhaseModel>& reduce_models() {
  static const std::vector<PhaseModel> models = {
      {ReduceBinomial::kName,
       [](Schedule& s, const Group& node, OpId, const Problem& p) -> OpId {
         const int chunks = patterns::ChunkPlan::make(p.count, p.element_size, p.chunk_bytes).chunks;
         if (node.size() == 1 || chunks == 0) return kNoOp;
         return s.join(node.ranks[0],
                       append_tree_reduce(s, node, binomial_shape(node.size()), 0, p.count, p.element_size, chunks));
       },
       binomial_reduce_closed_form},
  };
  return models;
}

const std::vector<PhaseModel>& broadcast_models() {
  static const std::vector<PhaseModel> models = {
      {BroadcastBinomial::kName,
       [](Schedule& s, const Group& node, OpId ready, const Problem& p) {
         return tree_broadcast(s, node, ready, binomial_shape(node.size()), p.count, 1);  // whole message
       },
       [](const Problem& p, const LinkParams& link, double) { return binomial_broadcast_closed_form(p, link); }},
      {BroadcastChain::kName,
       [](Schedule& s, const Group& node, OpId ready, const Problem& p) {
         const int chunks = patterns::ChunkPlan::make(p.count, 1, p.chunk_bytes).chunks;
         return chunks == 0 ? kNoOp : tree_broadcast(s, node, ready, chain_shape(node.size()), p.count, chunks);
       },
       [](const Problem& p, const LinkParams& link, double) { return chain_broadcast_closed_form(p, link); }},
  };
  return models;
}

const PhaseModel& find_phase_model(const std::vector<PhaseModel>& models, const std::string& name) {
  std::string known;
  for (const PhaseModel& model : models) {
    if (name == model.algorithm) return model;
    known += (known.empty() ? "" : ", ") + std::string(model.algorithm);
  }
  CONCORD_THROW(InvalidArgument, "the simulator does not model phase algorithm '", name, "'; known: ", known);
}

CostParams params_of(const Topology& topology, double gamma) {
  CostParams params;
  params.alpha = topology.intra().alpha;
  params.beta = topology.intra().beta;
  params.inter_alpha = topology.inter().alpha;
  params.inter_beta = topology.inter().beta;
  params.gamma = gamma;
  return params;
}

const std::vector<std::pair<std::string, std::string>>& unmodelled_allreduces() {
  static const std::vector<std::pair<std::string, std::string>> unmodelled = [] {
    std::vector<std::pair<std::string, std::string>> rows = {
        {AllreduceMpi::kName, "the MPI library's own allreduce: its schedule is not Concord's"},
        {AllreduceAdasum::kName, "op adasum only; the simulator models element-wise sums"},
        // Device buffers: the simulator models the network only, not PCIe copies or kernels.
        {AllreduceStaged::kName, "device buffers: host copies and kernels are not modelled"},
        {AllreduceNccl::kName, "NCCL's own allreduce: its schedule is not Concord's"},
    };
    // The host algorithms on device memory (algorithms/allreduce_device.h), both transports.
    for (const AllreduceEntry& entry : allreduce_algorithms()) {
      const std::string host = host_algorithm_of(entry.name);
      if (entry.memory != MemoryKind::kDevice || host == entry.name) continue;
      rows.emplace_back(entry.name, device_transport_of(entry.name) == DeviceTransport::kStagedGpu
                                        ? "device buffers: host copies and kernels are not modelled (the '" + host +
                                              "' schedule staged)"
                                        : "device buffers: kernels are not modelled (the '" + host + "' schedule)");
    }
    return rows;
  }();
  return unmodelled;
}

}  // namespace concord::sim
