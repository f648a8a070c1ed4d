// AllreducePipelinedTree ("tree") and AllreduceDoubleTree ("double_tree") on the in-process
// multi-rank transport, created through the registry: P = 1..16, sizes 0, 1, 7, 1023, 100003
// elements, default and 64-byte chunks. float32 sums of small integers are exact, so the
// result must equal the reference exactly; rounding dtypes (bfloat16, float16) must give
// bit-identical results on every rank; traffic counters must equal the cost model's counts.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/registry.h"
#include "cost_check.h"
#include "dtype_util.h"
#include "rank_runner.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::drive;
using testing_util::expect_counts_match;
using testing_util::first_difference;
using testing_util::load;
using testing_util::run_ranks;
using testing_util::store;

constexpr size_t kSizes[] = {0, 1, 7, 1023, 100003};
constexpr size_t kDefaultChunk = size_t{1} << 19;

double input(int rank, size_t i) { return static_cast<double>(static_cast<int>((rank * 7 + i * 13) % 17) - 8); }
double fractional_input(int rank, size_t i) { return 1.0 / (3.0 + static_cast<double>((rank * 5 + i) % 11)); }

struct RunResult {
  std::vector<std::vector<uint8_t>> results;
  std::vector<TrafficCounters> counters;
};

// Runs `algorithm` on P ranks over inputs value(rank, i) stored as `dtype`.
RunResult run_allreduce(const std::string& algorithm, int P, size_t n, DataType dtype, ReduceOp op, size_t chunk,
                  double (*value)(int, size_t)) {
  const size_t element = dtype_size(dtype);
  RunResult run{std::vector<std::vector<uint8_t>>(P, std::vector<uint8_t>(n * element + 16, 0x5A)),
          std::vector<TrafficCounters>(P)};
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < n; ++i) store(run.results[r].data(), i, dtype, value(r, i));
  std::vector<ScratchBuffer> scratch(P);
  const auto& entry = find_algorithm(allreduce_algorithms(), algorithm);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    AlgorithmContext ctx{comm, scratch[comm.rank()], chunk, {}};
    auto instance = entry.create(ctx);
    instance->start(run.results[comm.rank()].data(), n, dtype, op);
    drive(*instance, aborted);
    run.counters[comm.rank()] = comm.counters();
  });
  EXPECT_EQ(error, "") << algorithm << " P=" << P << " n=" << n;
  return run;
}

class TreeAllreduce : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TreeAllreduce, ExactFloat32SumOnEveryRankAndTrafficMatchesCost) {
  const auto& [algorithm, P] = GetParam();
  for (size_t chunk : {kDefaultChunk, size_t{64}})
    for (size_t n : kSizes) {
      const std::string what = testing_util::cat(algorithm, " P=", P, " n=", n, " float32 sum chunk_bytes=", chunk);
      const RunResult run = run_allreduce(algorithm, P, n, DataType::kFloat32, ReduceOp::kSum, chunk, input);
      for (int r = 0; r < P; ++r) {
        for (size_t b = n * 4; b < n * 4 + 16; ++b)
          ASSERT_EQ(run.results[r][b], 0x5A) << what << " rank " << r << " wrote past the end";
        int failures = 0;
        for (size_t i = 0; i < n && failures < 5; ++i) {
          double expected = 0;
          for (int s = 0; s < P; ++s) expected += input(s, i);
          const double got = load(run.results[r].data(), i, DataType::kFloat32);
          EXPECT_EQ(got, expected) << what << " rank " << r << " element " << i;
          failures += got != expected;
        }
      }
      Problem problem;
      problem.ranks = P;
      problem.count = n;
      problem.element_size = 4;
      problem.chunk_bytes = chunk;
      expect_counts_match(run.counters, find_algorithm(allreduce_algorithms(), algorithm).cost(problem), what);
    }
}

TEST_P(TreeAllreduce, RoundingDtypesAreBitIdenticalOnEveryRank) {
  const auto& [algorithm, P] = GetParam();
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16, DataType::kFloat64})
    for (size_t chunk : {kDefaultChunk, size_t{64}}) {
      constexpr size_t n = 1023;
      const std::string what = testing_util::cat(algorithm, " P=", P, " n=", n, " ", dtype_name(dtype),
                                                 " sum chunk_bytes=", chunk);
      const RunResult run = run_allreduce(algorithm, P, n, dtype, ReduceOp::kSum, chunk, fractional_input);
      for (int r = 1; r < P; ++r)
        EXPECT_EQ(first_difference(run.results[r], run.results[0], dtype_size(dtype)), -1)
            << what << ": rank " << r << " differs from rank 0 at this element";
      // The reduction order of the tree only moves the rounding; the sum stays close.
      for (size_t i = 0; i < n; ++i) {
        double expected = 0;
        for (int s = 0; s < P; ++s) expected += fractional_input(s, i);
        ASSERT_NEAR(load(run.results[0].data(), i, dtype), expected, 0.02 * P) << what << " rank 0 element " << i;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, TreeAllreduce,
                         ::testing::Combine(::testing::Values("tree", "double_tree"), ::testing::Range(1, 17)),
                         [](const auto& info) {
                           return testing_util::cat(std::get<0>(info.param), "_P", std::get<1>(info.param));
                         });

}  // namespace
}  // namespace concord
