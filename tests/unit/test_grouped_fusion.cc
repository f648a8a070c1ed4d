// Grouped allreduce (Romero et al., NSDI 2022, section 3.2; Horovod's grouped_allreduce):
// a group is answered in one negotiation cycle, once every rank has submitted all its
// members, and is fused with the other responses of that cycle: the runtime plans fusion
// over each cycle's response list (Runtime::negotiate_round -> plan_fusion). Here the
// negotiator (src/control/negotiator.h) runs over the in-process transport at P = 1..16, on
// the coordinator's path (first iteration) and from the response cache (later ones), and
// the cycle's list goes through plan_fusion as the runtime does. Counted per cycle, not timed.
//  - Submitted together: the group's members and two single tensors form one fused batch.
//  - The last rank submits the group and one single tensor a cycle after the rest: the
//    other singles form the first cycle's batch, and the group fuses with the late single in
//    the next cycle's, never with the singles of the cycle before.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "rank_runner.h"
#include "test_support/grouped_fusion_cycles.h"

namespace concord {
namespace {

using testing_util::run_ranks;

using testing_util::busy_cycles;
using testing_util::Cycle;
using testing_util::grouped_fusion_cycles;
using testing_util::Iteration;
using Batch = testing_util::Batch;

/// Runs `run` on P ranks, checks every rank planned the same batches, returns rank 0's.
std::vector<Iteration> run_ranks_alike(int P, bool late) {
  std::vector<std::vector<Iteration>> by_rank(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    by_rank[comm.rank()] = grouped_fusion_cycles(comm, late);
  });
  EXPECT_EQ(error, "") << "P=" << P << (late ? " (group late on the last rank)" : "");
  for (int r = 1; r < P; ++r)
    EXPECT_EQ(by_rank[r], by_rank[0]) << "P=" << P << ": rank " << r << " planned other batches than rank 0";
  return by_rank[0];
}

class GroupedFusion : public ::testing::TestWithParam<int> {};

TEST_P(GroupedFusion, GroupFusesWithTheSinglesOfItsCycle) {
  const int P = GetParam();
  const auto iterations = run_ranks_alike(P, /*late=*/false);
  const Batch all = {"a", "b", "c", "g.0", "g.1", "g.2"};
  for (size_t it = 0; it < iterations.size(); ++it)
    EXPECT_EQ(busy_cycles(iterations[it]), std::vector<Cycle>{Cycle{all}})
        << "P=" << P << " iteration " << it << (it == 0 ? " (coordinator)" : " (cache)")
        << ": not one fused batch of the group and the singles";
}

TEST_P(GroupedFusion, GroupSubmittedACycleLateFusesWithTheSinglesReadyWithIt) {
  const int P = GetParam();
  const auto iterations = run_ranks_alike(P, /*late=*/true);
  const std::vector<Cycle> expected = {Cycle{Batch{"a", "b"}}, Cycle{Batch{"c", "g.0", "g.1", "g.2"}}};
  for (size_t it = 0; it < iterations.size(); ++it)
    EXPECT_EQ(busy_cycles(iterations[it]), expected)
        << "P=" << P << " iteration " << it << (it == 0 ? " (coordinator)" : " (cache)")
        << ": batches per cycle when the last rank submits the group and c a cycle late";
}

INSTANTIATE_TEST_SUITE_P(Ranks, GroupedFusion, ::testing::Values(1, 2, 3, 5, 8, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
