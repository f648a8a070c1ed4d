// SelectionPolicy (src/algorithms/selection_policy.h), the one selection rule of the
// executor and the benchmarks: a size rule wins for its sizes; with measured selection on,
// a usable measured choice comes next and a missing one asks to measure; otherwise (and for
// allgather, broadcast, one rank, or autotune off) the cost model decides.
#include <gtest/gtest.h>

#include "algorithms/selection_policy.h"
#include "concord/errors.h"

namespace concord {
namespace {

Problem allreduce_problem(int ranks, size_t count) {
  Problem problem;
  problem.ranks = ranks;
  problem.nodes = 1;
  problem.count = count;
  problem.element_size = 4;
  problem.dtype = DataType::kFloat32;
  problem.op = ReduceOp::kSum;
  problem.chunk_bytes = 512 << 10;
  return problem;
}

TEST(SelectionPolicy, SizeRuleThenMeasuredTableThenMeasureNowThenCostModel) {
  Config config;
  config.allreduce_algorithm = "0-1K:ring";
  config.autotune = true;
  const CostParams cost;
  const SelectionPolicy policy(config, cost);
  AutotuneTable table;
  const Problem small = allreduce_problem(4, 16);  // 64 B: the rule's range
  const SelectionDecision ruled = policy.decide("allreduce", allreduce_algorithms(), small, table);
  EXPECT_TRUE(ruled.ruled()) << ruled.source;
  EXPECT_EQ(ruled.name, "ring");

  const Problem large = allreduce_problem(4, 1 << 16);  // 256 KiB: no rule
  const SelectionDecision unmeasured = policy.decide("allreduce", allreduce_algorithms(), large, table);
  EXPECT_TRUE(unmeasured.measure) << unmeasured.source << " " << unmeasured.name;
  table.set(selection_key("allreduce", large.dtype, large.bytes()), "recursive_doubling");
  const SelectionDecision measured = policy.decide("allreduce", allreduce_algorithms(), large, table);
  EXPECT_FALSE(measured.measure);
  EXPECT_EQ(measured.name, "recursive_doubling") << measured.source;

  const Problem alone = allreduce_problem(1, 1 << 16);  // one rank: nothing to measure
  const SelectionDecision modelled = policy.decide("allreduce", allreduce_algorithms(), alone, table);
  EXPECT_FALSE(modelled.measure);
  EXPECT_STREQ(modelled.source, "cost model");
  EXPECT_EQ(modelled.name, policy.cost_model(allreduce_algorithms(), alone));
}

TEST(SelectionPolicy, WithoutAutotuneTheCostModelDecidesAndOtherCollectivesHaveTheirOwnRules) {
  Config config;
  config.autotune = false;
  config.broadcast_algorithm = "chain";
  const SelectionPolicy policy(config, CostParams{});
  const AutotuneTable table;
  const Problem problem = allreduce_problem(4, 1 << 16);
  const SelectionDecision decision = policy.decide("allreduce", allreduce_algorithms(), problem, table);
  EXPECT_STREQ(decision.source, "cost model");
  EXPECT_EQ(decision.name,
            select_algorithm(allreduce_algorithms(), problem, CostParams{}, "", policy.problem_for()).name);
  const SelectionDecision broadcast = policy.decide("broadcast", broadcast_algorithms(), problem, table);
  EXPECT_TRUE(broadcast.ruled());
  EXPECT_EQ(broadcast.name, "chain");
  Config malformed;
  malformed.allreduce_algorithm = "64K-1K:ring";
  EXPECT_THROW({ const SelectionPolicy refused(malformed, CostParams{}); }, InvalidArgument);
}

}  // namespace
}  // namespace concord
