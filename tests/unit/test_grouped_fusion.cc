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

#include "control/negotiator.h"
#include "dtype_util.h"
#include "rank_runner.h"
#include "runtime/fusion.h"

namespace concord {
namespace {

using testing_util::cat;
using testing_util::run_ranks;

using Batch = std::set<std::string>;   // the tensors of one fused response
using Cycle = std::vector<Batch>;      // the fused responses of one cycle, in order
using Iteration = std::vector<Cycle>;  // its cycles, until every tensor was answered

constexpr int kIterations = 4;  // the first on the coordinator's path, the others from the cache
const std::vector<std::string> kGroup = {"g.0", "g.1", "g.2"};

Request request(int rank, const std::string& name, int64_t elements, bool grouped) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {elements};
  if (grouped) {
    r.group = kGroup[0];
    r.group_size = static_cast<int32_t>(kGroup.size());
  }
  return r;
}

/// Every rank submits singles a and b and the group at cycle 0, single c too unless
/// `late`; with `late`, the last rank submits the group and c at cycle 1 instead. Returns
/// each iteration's fused batches per cycle, as this rank planned them.
std::vector<Iteration> run(Communicator& comm, bool late) {
  const int rank = comm.rank(), P = comm.size();
  NegotiatorOptions options;
  options.stall_warning_seconds = 1e9;  // no timed stall checks
  options.stall_shutdown_seconds = 0;
  Negotiator negotiator(comm, options);
  std::vector<Iteration> iterations;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<std::vector<Request>> calls(2);
    const int group_call = late && rank == P - 1 ? 1 : 0;
    calls[0].push_back(request(rank, "a", 3, false));
    calls[group_call].push_back(request(rank, "c", 6, false));
    for (size_t m = 0; m < kGroup.size(); ++m)
      calls[group_call].push_back(request(rank, kGroup[m], 5 + 2 * static_cast<int64_t>(m), true));
    calls[0].push_back(request(rank, "b", 4, false));
    if (rank % 2 == 1) std::reverse(calls[0].begin(), calls[0].end());  // another order on odd ranks
    Iteration cycles;
    size_t answered = 0;
    for (int call = 0;; ++call) {
      const ResponseList list = negotiator.negotiate(call < 2 ? calls[call] : std::vector<Request>{}, false);
      Cycle cycle;
      for (const Response& fused : plan_fusion(list.responses, 64 << 20)) {
        if (fused.type == ResponseType::kError) throw std::runtime_error(cat("rank ", rank, ": ", fused.error));
        cycle.emplace_back(fused.names.begin(), fused.names.end());
        answered += fused.names.size();
      }
      cycles.push_back(std::move(cycle));
      std::vector<uint64_t> done{call >= 1 && answered == 6 ? 1u : 0u};
      comm.allreduce_bits(done, /*bitwise_and=*/true);
      if (done[0] != 0) break;
      if (call == 20) throw std::runtime_error(cat("rank ", rank, " iteration ", it, ": ", answered, " of 6 answered"));
    }
    iterations.push_back(std::move(cycles));
  }
  negotiator.finish();
  return iterations;
}

/// Runs `run` on P ranks, checks every rank planned the same batches, returns rank 0's.
std::vector<Iteration> run_ranks_alike(int P, bool late) {
  std::vector<std::vector<Iteration>> by_rank(P);
  const std::string error =
      run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) { by_rank[comm.rank()] = run(comm, late); });
  EXPECT_EQ(error, "") << "P=" << P << (late ? " (group late on the last rank)" : "");
  for (int r = 1; r < P; ++r)
    EXPECT_EQ(by_rank[r], by_rank[0]) << "P=" << P << ": rank " << r << " planned other batches than rank 0";
  return by_rank[0];
}

/// The cycles of `iteration` that executed something.
std::vector<Cycle> busy_cycles(const Iteration& iteration) {
  std::vector<Cycle> busy;
  for (const Cycle& cycle : iteration)
    if (!cycle.empty()) busy.push_back(cycle);
  return busy;
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
