// The simulator's algorithms are the registry's (src/sim/models.h): every registered
// allreduce is either modelled or listed as unmodelled with a reason, every model belongs to
// a registered allreduce, and the simulator shows the registry's name, description and
// declines() for each, so neither can drift from the algorithm's own description.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "algorithms/registry.h"
#include "sim/models.h"
#include "sim/simulator.h"

namespace concord::sim {
namespace {

TEST(SimRegistry, EveryRegisteredAllreduceIsModelledOrListedWithAReason) {
  std::set<std::string> modelled;
  for (const Model& model : allreduce_models()) EXPECT_TRUE(modelled.insert(model.algorithm).second) << model.algorithm;
  std::set<std::string> unmodelled;
  for (const auto& [name, reason] : unmodelled_allreduces()) {
    EXPECT_FALSE(reason.empty()) << name;
    EXPECT_TRUE(unmodelled.insert(name).second) << name;
    EXPECT_EQ(modelled.count(name), 0u) << name << " is both modelled and listed as unmodelled";
  }
  std::set<std::string> registered;
  for (const AllreduceEntry& entry : allreduce_algorithms()) {
    registered.insert(entry.name);
    EXPECT_EQ(modelled.count(entry.name) + unmodelled.count(entry.name), 1u)
        << "registered allreduce '" << entry.name << "' has no model and no reason (src/sim/models.cc)";
  }
  for (const std::string& name : modelled) EXPECT_EQ(registered.count(name), 1u) << "model of unregistered " << name;
  for (const std::string& name : unmodelled) EXPECT_EQ(registered.count(name), 1u) << "unregistered " << name;
}

TEST(SimRegistry, NamesDescriptionsAndOrderAreTheRegistrys) {
  auto sim = simulated_algorithms().begin();
  for (const AllreduceEntry& entry : allreduce_algorithms()) {
    if (sim == simulated_algorithms().end() || sim->name != entry.name) continue;  // unmodelled
    EXPECT_EQ(sim->description, entry.description) << entry.name;
    ++sim;
  }
  EXPECT_EQ(sim, simulated_algorithms().end()) << "simulated algorithms out of registry order";
  EXPECT_EQ(simulated_algorithms().size(), allreduce_models().size());
}

// declines() is the registry's, on the topology's nodes: hierarchical needs several nodes
// of equal size with more than one rank each, exactly as AllreduceHierarchical::declines.
TEST(SimRegistry, DeclinesAsTheRegistryOnTheTopologysNodes) {
  const SimAlgorithm& hierarchical = find_simulated("hierarchical");
  const auto& entry = find_algorithm(allreduce_algorithms(), "hierarchical");
  const LinkParams link{1e-6, 1e-9};
  struct Case {
    Topology topology;
    bool declines;
  };
  for (const Case& c :
       {Case{Topology::flat(8, link), true}, Case{Topology::two_level(8, 8, link, link), true},
        Case{Topology::two_level(8, 4, link, link), false}, Case{Topology::two_level(6, 4, link, link), true}}) {
    const Problem problem = allreduce_problem(1024, c.topology);
    const std::string reason = hierarchical.declines(problem, c.topology);
    EXPECT_EQ(!reason.empty(), c.declines) << c.topology.describe() << ": " << reason;
    EXPECT_EQ(reason, entry.declines(problem)) << c.topology.describe();
  }
  EXPECT_EQ(find_simulated("ring").declines(allreduce_problem(1024, Topology::flat(3, link)), Topology::flat(3, link)),
            "");
}

TEST(SimRegistry, UnmodelledAndUnknownNamesAreRefusedByName) {
  try {
    find_simulated("mpi");
    FAIL() << "mpi is not modelled";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("known: ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace concord::sim
