// The simulator's schedules send exactly what the algorithms send: for every registered
// allreduce algorithm the simulator models, Schedule::traffic() equals the algorithm's
// Cost counts (which the registry tests tie to the transport's counters; for hierarchical,
// the sum of its phases' counts with the phases the simulator picks), and the cheap
// message count the simulator uses to choose its method equals the schedule's.
#include <gtest/gtest.h>

#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/registry.h"
#include "sim/models.h"
#include "sim/simulator.h"

namespace concord::sim {
namespace {

struct Case {
  int ranks;
  size_t count;
  size_t chunk_bytes;
};

std::vector<Case> cases() {
  std::vector<Case> result;
  for (int P = 1; P <= 16; ++P)
    for (const size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{100003}})
      for (const size_t chunk : {size_t{64}, size_t{1} << 19}) result.push_back({P, count, chunk});
  return result;
}

// Nodes of two ranks when the algorithm needs several nodes, else one rank per port.
Topology topology_for(const std::string& name, int P) {
  const LinkParams link{1e-6, 1e-9};
  if (name == "hierarchical" && P >= 4) return Topology::two_level(P, 2, link, link);
  return Topology::flat(P, link);
}

TEST(SimSchedules, CountsEqualTheAlgorithmsCostCounts) {
  int compared = 0;
  for (const AllreduceEntry& entry : allreduce_algorithms()) {
    const SimAlgorithm* model = nullptr;
    for (const auto& candidate : simulated_algorithms())
      if (candidate.name == entry.name) model = &candidate;
    if (model == nullptr) continue;  // e.g. "mpi": not modelled
    for (const Case& c : cases()) {
      const Topology topology = topology_for(entry.name, c.ranks);
      Problem problem;
      problem.ranks = c.ranks;
      problem.nodes = topology.nodes();
      problem.uniform_nodes = topology.uniform_nodes();
      problem.count = c.count;
      problem.element_size = 4;
      problem.chunk_bytes = c.chunk_bytes;
      if (!entry.declines(problem).empty() || !model->declines(problem, topology).empty()) continue;
      // hierarchical: its phases as the simulator picks them, with the topology's constants.
      const Cost cost = entry.name == "hierarchical"
                            ? AllreduceHierarchical::composed_cost(problem, params_of(topology))
                            : entry.cost(problem);
      const Traffic traffic = model->schedule(problem, topology).traffic();
      const std::string where = entry.name + " P=" + std::to_string(c.ranks) + " n=" + std::to_string(c.count) +
                                " chunk=" + std::to_string(c.chunk_bytes);
      EXPECT_EQ(traffic.max_messages_sent, cost.max_messages_sent) << where;
      EXPECT_EQ(traffic.max_bytes_sent, cost.max_bytes_sent) << where;
      EXPECT_EQ(traffic.total_messages_sent, cost.total_messages_sent) << where;
      EXPECT_EQ(traffic.total_bytes_sent, cost.total_bytes_sent) << where;
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no registered allreduce algorithm is modelled";
}

TEST(SimSchedules, MessageEstimateEqualsTheSchedule) {
  for (const SimAlgorithm& model : simulated_algorithms()) {
    for (const Case& c : cases()) {
      const Topology topology = topology_for(model.name, c.ranks);
      Problem problem = allreduce_problem(c.count * 4, topology, c.chunk_bytes);
      problem.count = c.count;
      if (!model.declines(problem, topology).empty()) continue;
      EXPECT_EQ(model.messages(problem, topology), model.schedule(problem, topology).traffic().total_messages_sent)
          << model.name << " P=" << c.ranks << " n=" << c.count << " chunk=" << c.chunk_bytes;
    }
  }
}

TEST(SimSchedules, EveryRankSendsTheRingsShareOfBytes) {
  // Ring: 2(P-1)/P n bytes per rank (nccl-tests' busbw factor), exactly when P divides n.
  for (const int P : {2, 4, 8}) {
    Problem problem;
    problem.ranks = P;
    problem.count = 1024;
    const Traffic traffic = find_simulated("ring").schedule(problem, Topology::flat(P, {})).traffic();
    EXPECT_EQ(traffic.max_bytes_sent, 2u * (P - 1) * 4096 / P) << "ring P=" << P;
  }
}

}  // namespace
}  // namespace concord::sim
