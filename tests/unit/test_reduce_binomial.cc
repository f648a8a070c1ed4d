// ReduceBinomial (src/algorithms/reduce_binomial.h), the registered reduce that the
// hierarchical allreduce runs within a node: at P = 1..16, every root, sizes 0, 1, odd and
// many chunks, int32 sums at the root are exact and the traffic equals cost()'s counts; what
// each rank sends equals sent_by() (root 0).
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/reduce_binomial.h"
#include "algorithms/registry.h"
#include "cost_check.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;

int32_t value(int rank, size_t i) { return static_cast<int32_t>((rank + 1) * 1000 + i % 997); }

class ReduceBinomialTest : public ::testing::TestWithParam<int> {};

TEST_P(ReduceBinomialTest, EveryRootExactWithTrafficAsCosted) {
  const int P = GetParam();
  for (int root = 0; root < P; ++root)
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
      const std::string what = cat("reduce binomial P=", P, " root=", root, " n=", n, " chunk_bytes=64");
      std::vector<std::vector<int32_t>> data(P, std::vector<int32_t>(n));
      for (int r = 0; r < P; ++r)
        for (size_t i = 0; i < n; ++i) data[r][i] = value(r, i);
      std::vector<ScratchBuffer> scratch(P);
      std::vector<TrafficCounters> traffic(P);
      ASSERT_EQ(testing_util::run_ranks(
                    P,
                    [&](Communicator& comm, const AbortFlag& aborted) {
                      auto algorithm = find_algorithm(reduce_algorithms(), "binomial")
                                           .create(AlgorithmContext{comm, scratch[comm.rank()], 64});
                      comm.reset_counters();
                      algorithm->start(data[comm.rank()].data(), n, DataType::kInt32, ReduceOp::kSum, root);
                      testing_util::drive(*algorithm, aborted);
                      traffic[comm.rank()] = comm.counters();
                    }),
                "")
          << what;
      for (size_t i = 0; i < n; ++i) {
        int64_t sum = 0;
        for (int r = 0; r < P; ++r) sum += value(r, i);
        ASSERT_EQ(data[root][i], sum) << what << " element " << i << " at the root";
      }
      Problem problem;
      problem.ranks = P;
      problem.count = n;
      problem.chunk_bytes = 64;
      testing_util::expect_counts(what, ReduceBinomial::cost(problem), traffic);
      if (root != 0) continue;
      for (int r = 0; r < P; ++r) {
        const RankTraffic sent = ReduceBinomial::sent_by(problem, r);
        EXPECT_EQ(traffic[r].messages_sent, sent.messages) << what << " rank " << r;
        EXPECT_EQ(traffic[r].bytes_sent, sent.bytes) << what << " rank " << r;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To16, ReduceBinomialTest, ::testing::Range(1, 17));

}  // namespace
}  // namespace concord
