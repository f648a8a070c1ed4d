#include "sim/simulator.h"

#include "algorithms/registry.h"
#include "common/enforce.h"
#include "sim/models.h"
#include "sim/schedules.h"

namespace concord::sim {
namespace {

// The registry's allreduce rows that have a model, joined with it.
std::vector<SimAlgorithm> build() {
  std::vector<SimAlgorithm> entries;
  for (const AllreduceEntry& entry : allreduce_algorithms()) {
    for (const Model& model : allreduce_models()) {
      if (entry.name != model.algorithm) continue;
      const auto declines = entry.declines;
      entries.push_back({entry.name, entry.description,
                         [declines](const Problem& problem, const Topology& topology) {
                           Problem placed = problem;
                           placed.nodes = topology.nodes();
                           placed.uniform_nodes = topology.uniform_nodes();
                           return declines(placed);
                         },
                         model.schedule, model.messages, model.closed_form});
    }
  }
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
    prediction.detail = simulate(algorithm.schedule(problem, topology), topology, gamma, options.max_calls);
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
