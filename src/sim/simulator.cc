#include "sim/simulator.h"

#include "algorithms/allreduce_hierarchical.h"
#include "common/enforce.h"
#include "patterns/chunking.h"
#include "patterns/recursive_doubling.h"
#include "patterns/ring.h"
#include "sim/closed_form.h"
#include "sim/schedules.h"

namespace concord::sim {
namespace {

std::string applies(const Problem&, const Topology&) { return ""; }

bool trivial(const Problem& problem) { return problem.ranks == 1 || problem.count == 0; }

uint64_t ring_messages(int P, const Problem& problem) {
  if (P == 1 || problem.count == 0) return 0;
  const size_t largest = patterns::segment(problem.count, P, 0).count * problem.element_size;
  return 2ull * (P - 1) * P * chunk_count(largest, problem.chunk_bytes);
}

uint64_t tree_messages(int P, size_t count, const Problem& problem) {
  if (P == 1 || count == 0) return 0;
  return 2ull * (P - 1) * patterns::ChunkPlan::make(count, problem.element_size, problem.chunk_bytes).chunks;
}

// Both trees of the double binary tree, half of the buffer each.
uint64_t double_tree_messages(const Problem& p, const Topology&) {
  return tree_messages(p.ranks, patterns::segment(p.count, 2, 0).count, p) +
         tree_messages(p.ranks, patterns::segment(p.count, 2, 1).count, p);
}

// The model of the flat allreduce AllreduceHierarchical runs among the node leaders for
// `problem` (the registry's choice under default CostParams, as its cost() assumes).
const SimAlgorithm& leaders_algorithm(const Problem& problem) {
  return find_simulated(AllreduceHierarchical::inter_algorithm(problem, CostParams{}).name);
}

std::vector<SimAlgorithm> build() {
  std::vector<SimAlgorithm> entries;
  entries.push_back({"ring", "ring reduce-scatter + allgather, chunk-pipelined", applies,
                     [](const Problem& p, const Topology&) { return ring_schedule(p); },
                     [](const Problem& p, const Topology&) { return ring_messages(p.ranks, p); }, ring_closed_form});
  const auto doubling_messages = [](const Problem& p, int rounds_per_rank) -> uint64_t {
    if (trivial(p)) return 0;
    const int pof2 = patterns::floor_pow2(p.ranks);
    return static_cast<uint64_t>(pof2) * rounds_per_rank * patterns::log2_pow2(pof2) + 2ull * (p.ranks - pof2);
  };
  entries.push_back(
      {"halving_doubling", "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather", applies,
       [](const Problem& p, const Topology&) { return halving_doubling_schedule(p); },
       [=](const Problem& p, const Topology&) { return doubling_messages(p, 2); }, halving_doubling_closed_form});
  entries.push_back({"recursive_doubling", "whole vector exchanged with the partner each round", applies,
                     [](const Problem& p, const Topology&) { return recursive_doubling_schedule(p); },
                     [=](const Problem& p, const Topology&) { return doubling_messages(p, 1); },
                     recursive_doubling_closed_form});
  entries.push_back({"tree", "pipelined binary tree: reduce to rank 0, then broadcast", applies,
                     [](const Problem& p, const Topology&) { return tree_schedule(p); },
                     [](const Problem& p, const Topology&) { return tree_messages(p.ranks, p.count, p); },
                     tree_closed_form});
  entries.push_back({"double_tree", "two complementary binary trees, half the buffer each", applies,
                     [](const Problem& p, const Topology&) { return double_tree_schedule(p); }, double_tree_messages,
                     double_tree_closed_form});
  entries.push_back({"overlapped_tree", "C-Cube: binary tree, chunk c broadcast as soon as the root has reduced it",
                     applies, [](const Problem& p, const Topology&) { return overlapped_tree_schedule(p); },
                     [](const Problem& p, const Topology&) { return tree_messages(p.ranks, p.count, p); },
                     overlapped_tree_closed_form});
  entries.push_back({"overlapped_double_tree", "C-Cube on the double binary tree, half the buffer each", applies,
                     [](const Problem& p, const Topology&) { return overlapped_double_tree_schedule(p); },
                     double_tree_messages, overlapped_double_tree_closed_form});
  entries.push_back(
      {"hierarchical",
       "intra-node pipelined binomial reduce, the cost model's flat allreduce among node leaders, intra-node "
       "pipelined binomial broadcast",
       [](const Problem&, const Topology& t) -> std::string {
         if (t.is_flat() || t.nodes() == 1) return "needs several nodes of several ranks";
         return "";
       },
       [](const Problem& p, const Topology& t) {
         const SimAlgorithm& flat = leaders_algorithm(p);
         return hierarchical_schedule(p, t.ranks_per_node(),
                                      [&](const Problem& among) { return flat.schedule(among, t); });
       },
       [](const Problem& p, const Topology& t) -> uint64_t {
         if (trivial(p)) return 0;
         // Every non-leader sends each chunk once up and receives it once down in its node.
         const int chunks = patterns::ChunkPlan::make(p.count, p.element_size, p.chunk_bytes).chunks;
         return 2ull * (p.ranks - t.nodes()) * chunks +
                leaders_algorithm(p).messages(AllreduceHierarchical::inter_problem(p), t);
       },
       hierarchical_closed_form});
  return entries;
}

}  // namespace

const std::vector<SimAlgorithm>& simulated_algorithms() {
  static const std::vector<SimAlgorithm> entries = build();
  return entries;
}

const SimAlgorithm& find_simulated(const std::string& name) {
  std::string known;
  for (const auto& entry : simulated_algorithms()) {
    if (entry.name == name) return entry;
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  CONCORD_THROW(InvalidArgument, "the simulator does not model algorithm '", name, "'; known: ", known);
}

const char* method_name(Method method) { return method == Method::kStepByStep ? "step" : "closed"; }

Prediction predict(const SimAlgorithm& algorithm, const Problem& problem, const Topology& topology, double gamma,
                   const SimOptions& options) {
  CONCORD_ENFORCE(problem.ranks == topology.ranks(), InvalidArgument, "problem has ", problem.ranks,
                  " ranks, topology ", topology.describe());
  Prediction prediction;
  prediction.messages = algorithm.messages(problem, topology);
  const bool step = !options.force_closed && (options.force_step || prediction.messages <= options.max_messages);
  if (step) {
    prediction.method = Method::kStepByStep;
    prediction.detail = simulate(algorithm.schedule(problem, topology), topology, gamma);
    prediction.seconds = prediction.detail.seconds;
  } else {
    prediction.method = Method::kClosedForm;
    prediction.seconds = algorithm.closed_form(problem, topology, gamma);
  }
  return prediction;
}

Problem allreduce_problem(size_t bytes, const Topology& topology, size_t chunk_bytes) {
  Problem problem;
  problem.ranks = topology.ranks();
  problem.nodes = topology.nodes();
  problem.uniform_nodes = topology.uniform_nodes();
  problem.element_size = 4;
  problem.count = std::max<size_t>(1, bytes / 4);
  problem.chunk_bytes = chunk_bytes;
  return problem;
}

double gradient_turnaround(const std::string& algorithm, const Problem& problem, const Topology& topology,
                           double gamma) {
  CONCORD_ENFORCE(problem.ranks == topology.ranks(), InvalidArgument, "problem has ", problem.ranks,
                  " ranks, topology ", topology.describe());
  const bool overlapped = algorithm.rfind("overlapped_", 0) == 0;
  const std::string base = overlapped ? algorithm.substr(11) : algorithm;
  CONCORD_ENFORCE(base == "tree" || base == "double_tree", InvalidArgument,
                  "gradient turnaround is modelled for tree, double_tree, overlapped_tree and "
                  "overlapped_double_tree, not '",
                  algorithm, "'");
  const TreeRun run = tree_run(problem, base == "tree" ? 1 : 2, overlapped);
  if (run.first_chunk_final.empty()) return 0;
  const SimResult result = simulate(run.schedule, topology, gamma);
  double seconds = 0;
  for (const OpId id : run.first_chunk_final) seconds = std::max(seconds, result.completed_at[id]);
  return seconds;
}

double allreduce_busbw(size_t bytes, int ranks, double seconds) {
  if (ranks <= 1 || seconds <= 0) return 0;
  return static_cast<double>(bytes) / seconds * 2.0 * (ranks - 1) / ranks;
}

}  // namespace concord::sim
