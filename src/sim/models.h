// How the simulator models each registered allreduce. An algorithm's name, description,
// declines() and cost() are stated once, by its class, and reach the simulator through the
// registry (algorithms/registry.h); what this file adds per class is only what the
// simulator needs beyond that: its message schedule (sim/schedules.h), the schedule's exact
// message count, and its closed form (sim/closed_form.h). A model names its class
// (model_of<AllreduceRing>), not a string, so a renamed or removed algorithm fails to
// compile here instead of silently dropping out of the simulator; a registered allreduce
// without a model must be listed in unmodelled_allreduces() with the reason
// (tests/unit/test_sim_model.cc checks both directions).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/cost_model.h"
#include "sim/schedule.h"
#include "sim/schedules.h"
#include "sim/topology.h"

namespace concord::sim {

/// The simulator's part of one registered allreduce algorithm.
struct Model {
  const char* algorithm;  ///< the class's kName, i.e. its registry name
  /// Its message schedule over the topology's ranks.
  std::function<Schedule(const Problem&, const Topology&)> schedule;
  /// Exact number of messages that schedule() would produce (cheap; decides the method).
  std::function<uint64_t(const Problem&, const Topology&)> messages;
  /// Closed-form seconds (sim/closed_form.h) at reduction cost gamma (s/B).
  std::function<double(const Problem&, const Topology&, double gamma)> closed_form;
};

/// Every model, one per modelled class.
const std::vector<Model>& allreduce_models();

/// The simulator's part of a registered algorithm that runs as a phase within one node of
/// a composed algorithm (the hierarchical allreduce's reduce and broadcast).
struct PhaseModel {
  const char* algorithm;  ///< the class's kName, i.e. its registry name
  /// Appends the phase on one node's group for `problem` (the phase's Problem: its ranks,
  /// count as the phase's collective counts it); see NodePhase (sim/schedules.h).
  std::function<OpId(Schedule&, const Group&, OpId root_ready, const Problem& problem)> append;
  /// Closed-form seconds on links `link` at reduction cost gamma (s/B).
  std::function<double(const Problem& problem, const LinkParams& link, double gamma)> closed_form;
};
/// Models of the registered reduce algorithms (reduce_algorithms()).
const std::vector<PhaseModel>& reduce_models();
/// Models of the registered broadcast algorithms (broadcast_algorithms()).
const std::vector<PhaseModel>& broadcast_models();
/// The model of the algorithm called `name` in `models`; throws InvalidArgument otherwise.
const PhaseModel& find_phase_model(const std::vector<PhaseModel>& models, const std::string& name);

/// The machine constants a topology stands for (intra/inter links; gamma as given), with
/// which the simulator picks a composed algorithm's phases as the runtime would.
CostParams params_of(const Topology& topology, double gamma = CostParams{}.gamma);

/// Registered allreduce algorithms the simulator does not model, each with the reason
/// (e.g. "mpi": the MPI library's schedule is not Concord's).
const std::vector<std::pair<std::string, std::string>>& unmodelled_allreduces();

}  // namespace concord::sim
