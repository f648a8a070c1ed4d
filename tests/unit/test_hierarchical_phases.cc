// AllreduceHierarchical as a composition of registered phases
// (src/algorithms/allreduce_hierarchical.h): at P = 1..16 in-process ranks, several node
// layouts, every registered inter-node allreduce and every registered intra-node broadcast,
// float32 inputs whose sums round (so the reduction order shows in the bits). Every rank's
// result must equal, bit for bit, a reference built from the phases themselves: each node's
// sum in the reduce phase's order (own value, then each binomial child's subtree in
// children() order), then the named inter algorithm run on its own over those node sums.
// Where the nodes are uniform and contiguous, the traffic must equal composed_cost()'s counts.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/registry.h"
#include "common/reduce.h"
#include "cost_check.h"
#include "patterns/binomial_tree.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;

// Inputs whose float32 sums round: values of very different magnitudes.
std::vector<float> input(int rank, size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t h = static_cast<uint32_t>((rank + 1) * 2654435761u) ^ static_cast<uint32_t>(i * 40503u + 17);
    values[i] = static_cast<float>(h % 100003) * (h % 3 == 0 ? 1e-3f : (h % 3 == 1 ? 1.0f : 7e2f)) / 997.0f;
  }
  return values;
}

// Node of every rank: contiguous blocks of `per_node` ranks, or (per_node = 0) rank mod 3.
std::vector<int> layout(int P, int per_node) {
  std::vector<int> nodes(P);
  for (int r = 0; r < P; ++r) nodes[r] = per_node > 0 ? r / per_node : r % 3;
  return nodes;
}

// The sum of the subtree of local rank v of a node whose members (world ranks, in rank
// order) are `members`, in ReduceBinomial's order.
std::vector<float> subtree_sum(const std::vector<int>& members, int v, size_t n) {
  std::vector<float> sum = input(members[v], n);
  for (int child : patterns::BinomialTree{v, static_cast<int>(members.size()), 0}.children()) {
    const std::vector<float> part = subtree_sum(members, child, n);
    reduce_inplace(sum.data(), part.data(), n, DataType::kFloat32, ReduceOp::kSum);
  }
  return sum;
}

// The reference: node sums (nodes ordered by their lowest rank), then `inter` on them.
std::vector<float> reference(const std::vector<int>& nodes, size_t n, const std::string& inter) {
  std::vector<std::vector<int>> members;  // per node, by lowest rank
  std::vector<int> index_of_node;
  for (int r = 0; r < static_cast<int>(nodes.size()); ++r) {
    if (nodes[r] >= static_cast<int>(index_of_node.size())) index_of_node.resize(nodes[r] + 1, -1);
    if (index_of_node[nodes[r]] < 0) {
      index_of_node[nodes[r]] = static_cast<int>(members.size());
      members.emplace_back();
    }
    members[index_of_node[nodes[r]]].push_back(r);
  }
  const int N = static_cast<int>(members.size());
  std::vector<std::vector<float>> sums(N);
  for (int node = 0; node < N; ++node) sums[node] = subtree_sum(members[node], 0, n);
  if (N == 1) return sums[0];
  std::vector<ScratchBuffer> scratch(N);
  std::vector<int> own(N);
  for (int i = 0; i < N; ++i) own[i] = i;
  Problem among;
  among.ranks = N;
  among.nodes = N;
  among.count = n;
  among.chunk_bytes = 64;  // as the hierarchical allreduce's context below
  const std::string name = select_algorithm(allreduce_algorithms(), among, CostParams{}, inter).name;
  const std::string error = testing_util::run_ranks(N, [&](Communicator& comm, const AbortFlag& aborted) {
    auto algorithm = find_algorithm(allreduce_algorithms(), name)
                         .create(AlgorithmContext{comm, scratch[comm.rank()], 64, own, CostParams{}});
    algorithm->start(sums[comm.rank()].data(), n, DataType::kFloat32, ReduceOp::kSum);
    testing_util::drive(*algorithm, aborted);
  });
  EXPECT_EQ(error, "") << "reference " << name;
  return sums[0];
}

// Runs the hierarchical allreduce with `phases` and checks every rank and the traffic.
void check(int P, int per_node, size_t n, const AllreduceHierarchical::Phases& phases) {
  const std::string what = cat("hierarchical P=", P, " layout=", per_node > 0 ? cat("blocks", per_node) : "mod3",
                               " n=", n, " inter=", phases.inter, " broadcast=", phases.broadcast);
  SCOPED_TRACE(what);
  const std::vector<int> nodes = layout(P, per_node);
  std::vector<std::vector<float>> data(P);
  for (int r = 0; r < P; ++r) data[r] = input(r, n);
  std::vector<ScratchBuffer> scratch(P);
  std::vector<TrafficCounters> traffic(P);
  ASSERT_EQ(testing_util::run_ranks(P,
                                    [&](Communicator& comm, const AbortFlag& aborted) {
                                      AlgorithmContext ctx{comm, scratch[comm.rank()], 64, nodes, CostParams{}};
                                      AllreduceHierarchical algorithm(ctx, phases);
                                      comm.reset_counters();
                                      algorithm.start(data[comm.rank()].data(), n, DataType::kFloat32, ReduceOp::kSum);
                                      testing_util::drive(algorithm, aborted);
                                      traffic[comm.rank()] = comm.counters();
                                    }),
            "");
  const std::vector<float> expected = reference(nodes, n, phases.inter);
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < n; ++i) {
      uint32_t got, want;
      std::memcpy(&got, &data[r][i], 4);
      std::memcpy(&want, &expected[i], 4);
      ASSERT_EQ(got, want) << "rank " << r << " element " << i << ": " << data[r][i] << " vs " << expected[i] << " ("
                           << what << ")";
    }
  if (per_node == 0 || P % per_node != 0) return;
  Problem problem;
  problem.ranks = P;
  problem.nodes = P / per_node;
  problem.count = n;
  problem.chunk_bytes = 64;
  testing_util::expect_counts(what, AllreduceHierarchical::composed_cost(problem, CostParams{}, phases), traffic);
}

// Every registered allreduce that can run among the roots (not "mpi": no native transport
// here; not "hierarchical" itself: the roots are one per node; not the rows on device
// buffers: the phases run on host memory; not "adasum": op adasum only).
std::vector<std::string> inter_algorithms() {
  std::vector<std::string> names;
  for (const auto& entry : allreduce_algorithms())
    if (entry.name != "mpi" && entry.name != AllreduceHierarchical::kName && entry.name != "adasum" &&
        entry.memory == MemoryKind::kHost)
      names.push_back(entry.name);
  return names;
}

using Param = std::tuple<int, int>;  // P, per_node (0: rank mod 3)
class HierarchicalPhasesTest : public ::testing::TestWithParam<Param> {};

TEST_P(HierarchicalPhasesTest, EveryInterAndBroadcastBitIdenticalToThePhasesReference) {
  const auto [P, per_node] = GetParam();
  for (const std::string& inter : inter_algorithms())
    for (const auto& broadcast : broadcast_algorithms())
      for (size_t n : {size_t{1}, size_t{301}}) check(P, per_node, n, {"", inter, broadcast.name});
  check(P, per_node, 0, {});
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, HierarchicalPhasesTest,
                         ::testing::Combine(::testing::Range(1, 17), ::testing::Values(2, 3, 4, 0)),
                         [](const auto& info) {
                           const int per_node = std::get<1>(info.param);
                           return cat("P", std::get<0>(info.param), "_",
                                      per_node > 0 ? cat("blocks", per_node) : std::string("mod3"));
                         });

// The composed cost is the sum of the phases' costs: with a slow network, the inter phase
// of a large message is priced at inter-node constants and dominates.
TEST(HierarchicalPhases, CostIsTheSumOfThePhasesCosts) {
  Problem problem;
  problem.ranks = 8;
  problem.nodes = 2;
  problem.count = 1 << 20;
  const CostParams params;
  const auto chosen = AllreduceHierarchical::choose(problem, params);
  const double phases = chosen.reduce.cost(AllreduceHierarchical::local_problem(problem)).seconds(params) +
                        chosen.inter.cost(AllreduceHierarchical::inter_problem(problem)).seconds(params) +
                        chosen.broadcast.cost(AllreduceHierarchical::broadcast_problem(problem)).seconds(params);
  EXPECT_NEAR(AllreduceHierarchical::composed_cost(problem, params).seconds(params), phases, 1e-12 * phases);
  EXPECT_GT(chosen.inter.cost(AllreduceHierarchical::inter_problem(problem)).inter_wire_bytes, 0);
}

TEST(HierarchicalPhases, NamedPhasesAreHonouredAndUnknownNamesRefused) {
  Problem problem;
  problem.ranks = 8;
  problem.nodes = 2;
  problem.count = 1000;
  EXPECT_EQ(AllreduceHierarchical::choose(problem, CostParams{}, {"", "tree", "chain"}).inter.name, "tree");
  EXPECT_EQ(AllreduceHierarchical::choose(problem, CostParams{}, {"", "tree", "chain"}).broadcast.name, "chain");
  // hierarchical among the roots declines (one rank per node) and falls back to the cost model.
  EXPECT_NE(AllreduceHierarchical::choose(problem, CostParams{}, {"", "hierarchical", ""}).inter.name, "hierarchical");
  const std::string error = testing_util::run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    ScratchBuffer scratch;
    AllreduceHierarchical algorithm(AlgorithmContext{comm, scratch, 64, {0, 1}}, {"", "no_such", ""});
  });
  EXPECT_NE(error.find("unknown algorithm 'no_such'"), std::string::npos) << error;
}

}  // namespace
}  // namespace concord
