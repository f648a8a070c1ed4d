// AllreduceHierarchical (src/algorithms/allreduce_hierarchical.h) on the in-process transport
// with emulated nodes: P = 1..16 and several node maps (contiguous nodes of 1-4 ranks, the
// last possibly smaller; nodes interleaved by rank mod 3), every dtype and op, sizes
// 0..100003, tiny and default chunks. Inputs are small integers
// (test_support/exact_reduction.h), so every reduction is exact and each rank's result must
// equal the reference bit for bit. Where the nodes are uniform
// and contiguous (what the cost model assumes), the traffic must equal the cost's counts.
// Plus the registry: when it declines, and that forcing it on one node falls back.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/registry.h"
#include "cost_check.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"
#include "test_support/exact_reduction.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;

// How ranks are spread over nodes: contiguous blocks of `per_node` ranks, or (per_node = 0)
// node = rank mod 3.
struct NodeMap {
  int per_node;
  std::vector<int> nodes(int P) const {
    std::vector<int> result(P);
    for (int r = 0; r < P; ++r) result[r] = per_node > 0 ? r / per_node : r % 3;
    return result;
  }
  bool uniform_and_contiguous(int P) const { return per_node > 0 && P % per_node == 0; }
  std::string name() const { return per_node > 0 ? cat("blocks", per_node) : std::string("interleaved3"); }
};

// Runs one hierarchical allreduce and checks results and (uniform maps) traffic.
void check(int P, const NodeMap& map, size_t n, DataType dtype, ReduceOp op, size_t chunk_bytes) {
  const std::string what = cat("hierarchical P=", P, " nodes=", map.name(), " n=", n, " dtype=", dtype_name(dtype),
                               " op=", reduce_op_name(op), " chunk_bytes=", chunk_bytes);
  SCOPED_TRACE(what);
  const size_t element = dtype_size(dtype);
  std::vector<std::vector<uint8_t>> data(P);
  for (int r = 0; r < P; ++r) data[r] = testlists::exact_inputs(r, n, dtype, op);
  std::vector<ScratchBuffer> scratch(P);
  std::vector<TrafficCounters> traffic(P);
  const std::vector<int> nodes = map.nodes(P);
  ASSERT_EQ(testing_util::run_ranks(P,
                                    [&](Communicator& comm, const AbortFlag& aborted) {
                                      AlgorithmContext ctx{comm, scratch[comm.rank()], chunk_bytes, nodes};
                                      AllreduceHierarchical algorithm(ctx);
                                      comm.reset_counters();
                                      algorithm.start(data[comm.rank()].data(), n, dtype, op);
                                      testing_util::drive(algorithm, aborted);
                                      traffic[comm.rank()] = comm.counters();
                                    }),
            "");
  const std::vector<uint8_t> expected = testlists::exact_reduction(P, n, dtype, op);
  for (int r = 0; r < P; ++r) {
    const long diff = testlists::first_mismatch(data[r], expected, dtype);
    ASSERT_EQ(diff, -1) << "rank " << r << " element " << diff << ": got "
                        << testlists::load_exact(data[r].data(), diff, dtype) << ", expected "
                        << testlists::load_exact(expected.data(), diff, dtype) << " (" << what << ")";
  }
  if (!map.uniform_and_contiguous(P)) return;
  Problem problem;
  problem.ranks = P;
  problem.nodes = P / map.per_node;
  problem.count = n;
  problem.element_size = element;
  problem.chunk_bytes = chunk_bytes;
  testing_util::expect_counts(what, AllreduceHierarchical::cost(problem), traffic);
}

using Param = std::tuple<int, int>;  // P, NodeMap::per_node
class AllreduceHierarchicalTest : public ::testing::TestWithParam<Param> {};

TEST_P(AllreduceHierarchicalTest, EveryDtypeAndOpExactOnEveryRankWithTrafficAsCosted) {
  const auto [P, per_node] = GetParam();
  const NodeMap map{per_node};
  for (DataType dtype : all_dtypes())
    for (ReduceOp op : all_ops())
      for (size_t n : {size_t{1}, size_t{1023}}) check(P, map, n, dtype, op, 64);
  for (size_t n : {size_t{0}, size_t{7}, size_t{100003}}) {
    check(P, map, n, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
    check(P, map, n, DataType::kFloat16, ReduceOp::kSum, 256);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, AllreduceHierarchicalTest,
                         ::testing::Combine(::testing::Range(1, 17), ::testing::Values(1, 2, 3, 4, 0)),
                         [](const auto& info) {
                           return cat("P", std::get<0>(info.param), "_", NodeMap{std::get<1>(info.param)}.name());
                         });

// The same instance runs several calls (its sub-communicators are split once).
TEST(AllreduceHierarchical, InstanceServesRepeatedCalls) {
  constexpr int P = 6;
  std::vector<std::vector<int32_t>> data(P);
  std::vector<ScratchBuffer> scratch(P);
  ASSERT_EQ(testing_util::run_ranks(P,
                                    [&](Communicator& comm, const AbortFlag& aborted) {
                                      AlgorithmContext ctx{comm, scratch[comm.rank()], 16, {0, 0, 0, 1, 1, 1}};
                                      AllreduceHierarchical algorithm(ctx);
                                      for (int call = 1; call <= 3; ++call) {
                                        auto& mine = data[comm.rank()];
                                        mine.assign(100 * call, comm.rank() + call);
                                        algorithm.start(mine.data(), mine.size(), DataType::kInt32, ReduceOp::kSum);
                                        testing_util::drive(algorithm, aborted);
                                        for (size_t i = 0; i < mine.size(); ++i)
                                          ASSERT_EQ(mine[i], 15 + P * call) << "call " << call << " element " << i;
                                      }
                                    }),
            "");
}

TEST(AllreduceHierarchical, RejectsANodeMapOfTheWrongSize) {
  const std::string error = testing_util::run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    ScratchBuffer scratch;
    AllreduceHierarchical algorithm(AlgorithmContext{comm, scratch, 64, {0, 0, 1}});
  });
  EXPECT_NE(error.find("node_of_rank has 3 entries for 2 ranks"), std::string::npos) << error;
}

TEST(AllreduceHierarchical, DeclinesOneNodeNonUniformNodesAndOneRankPerNode) {
  Problem problem;
  problem.ranks = 8;
  problem.count = 1000;
  problem.nodes = 1;
  EXPECT_NE(AllreduceHierarchical::declines(problem), "");
  problem.nodes = 2;
  EXPECT_EQ(AllreduceHierarchical::declines(problem), "");
  problem.uniform_nodes = false;
  EXPECT_NE(AllreduceHierarchical::declines(problem), "");
  problem.uniform_nodes = true;
  problem.nodes = 8;
  EXPECT_NE(AllreduceHierarchical::declines(problem), "");
}

TEST(AllreduceHierarchical, ForcedOnOneNodeFallsBackAndOnTwoNodesIsSelected) {
  Problem problem;
  problem.ranks = 8;
  problem.count = 1 << 20;
  problem.nodes = 1;
  EXPECT_NE(select_algorithm(allreduce_algorithms(), problem, CostParams{}, "hierarchical").name, "hierarchical");
  problem.nodes = 2;
  EXPECT_EQ(select_algorithm(allreduce_algorithms(), problem, CostParams{}, "hierarchical").name, "hierarchical");
}

// With slow inter-node links, the cost model prefers the hierarchical scheme to a flat ring
// for large messages (fewer bytes cross nodes).
TEST(AllreduceHierarchical, CostModelPrefersItAcrossSlowNodes) {
  Problem problem;
  problem.ranks = 16;
  problem.nodes = 4;
  problem.count = 1 << 22;
  CostParams params;
  params.inter_beta = 1.0 / 1e9;
  params.beta = 1.0 / 20e9;
  params.gamma = 1.0 / 20e9;
  EXPECT_EQ(select_algorithm(allreduce_algorithms(), problem, params).name, "hierarchical");
}

}  // namespace
}  // namespace concord
