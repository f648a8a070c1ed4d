// The simulator's front end: the allreduce algorithms it models, and predict(), which runs
// an algorithm's schedule through the event engine when the schedule is small enough and
// otherwise evaluates its closed form (sim/closed_form.h). The list is the registry's
// (algorithms/registry.h): each registered allreduce with a model (sim/models.h) in
// registry order, its name, description and declines() taken from its registry row.
// "mpi" (the MPI library's own allreduce) is not modelled: its schedule is not ours.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "sim/engine.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace concord::sim {

/// One modelled allreduce algorithm: its registry row joined with its model.
struct SimAlgorithm {
  std::string name;         ///< the registry's (the class's kName)
  std::string description;  ///< the registry's (the class's kDescription)
  /// "" when the algorithm applies to the problem on the topology, else why not: the
  /// registry's declines() on the problem with the topology's nodes.
  std::function<std::string(const Problem&, const Topology&)> declines;
  /// Its message schedule over the topology's ranks (Model::schedule).
  std::function<Schedule(const Problem&, const Topology&)> schedule;
  /// Exact number of messages that schedule() would produce (cheap; decides the method).
  std::function<uint64_t(const Problem&, const Topology&)> messages;
  /// Closed-form seconds (sim/closed_form.h) at reduction cost gamma (s/B).
  std::function<double(const Problem&, const Topology&, double gamma)> closed_form;
};

/// Every registered allreduce that has a model (sim/models.h), in registry order: ring,
/// tree, double_tree, overlapped_tree, overlapped_double_tree, halving_doubling,
/// recursive_doubling, hierarchical.
const std::vector<SimAlgorithm>& simulated_algorithms();
/// The entry called `name`; throws InvalidArgument listing the known names otherwise.
const SimAlgorithm& find_simulated(const std::string& name);

enum class Method { kStepByStep, kClosedForm };
const char* method_name(Method method);

struct SimOptions {
  /// Largest schedule (messages) simulated step by step; larger ones use the closed form.
  uint64_t max_messages = uint64_t{1} << 18;
  /// Always step by step (tests; may be slow) or always closed form.
  bool force_step = false;
  bool force_closed = false;
  /// Back-to-back calls simulated step by step, at most; the prediction is the last one's
  /// time (a token-bucket link needs several to reach its steady state; sim/engine.h).
  int max_calls = 1;
};

struct Prediction {
  double seconds = 0;
  Method method = Method::kClosedForm;
  uint64_t messages = 0;  ///< messages of the schedule (exact, either method)
  SimResult detail;       ///< engine result (events, traffic) when step by step
};

/// Predicted time of `algorithm` on `problem` over `topology` with reduction cost gamma (s/B).
Prediction predict(const SimAlgorithm& algorithm, const Problem& problem, const Topology& topology, double gamma,
                   const SimOptions& options = {});

/// A float32 sum allreduce of `bytes` bytes (rounded down to whole elements, at least one
/// element) on `topology`'s ranks, pipelined at `chunk_bytes`.
Problem allreduce_problem(size_t bytes, const Topology& topology, size_t chunk_bytes = default_chunk_bytes());

/// Gradient turnaround (C-Cube): seconds until the buffer's first chunk is final on every
/// rank, simulated step by step, for "tree", "double_tree", "overlapped_tree" and
/// "overlapped_double_tree" (0 when P == 1 or count == 0). Throws InvalidArgument for any
/// other algorithm or when problem.ranks differs from the topology's.
double gradient_turnaround(const std::string& algorithm, const Problem& problem, const Topology& topology,
                           double gamma);

/// nccl-tests bus bandwidth of an allreduce, bytes/s: bytes / seconds * 2(P-1)/P (0 if P == 1
/// or seconds == 0).
double allreduce_busbw(size_t bytes, int ranks, double seconds);

}  // namespace concord::sim
