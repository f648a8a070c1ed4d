// Ok-Topk's communication volume with the residual carried over many calls, as in training
// (src/sparse/oktopk.h, "Volume cap"; Li & Hoefler, PPoPP 2022, sec. 3.2):
// from call 32 on, every rank sends fewer than 6k words (4-byte words, counted by the
// in-process transport) on every threshold-reuse call, and on average over every whole
// tau period including its re-evaluation calls, at P = 2..16. The same stream without the
// cap (max_overshoot < 0, the spec's lo/hi/f feedback alone) exceeds the bound: the
// transient this cap removes. Deterministic: bytes are counted, not timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rank_runner.h"
#include "sparse/oktopk.h"
#include "test_support/dtype_util.h"
#include "test_support/oktopk_volume.h"

namespace concord::sparse {
namespace {

using testing_util::cat;
using testing_util::run_ranks;

using testing_util::kOkTopkCalls;
using testing_util::kOkTopkFirstBoundCall;
using testing_util::OkTopkCall;

// records[rank][t] of `calls` OkTopk calls on P in-process ranks, residual carried.
std::vector<std::vector<OkTopkCall>> run(int P, int64_t n, int calls, const SparseOptions& options) {
  std::vector<std::vector<OkTopkCall>> records(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const testing_util::AbortFlag&) {
    records[comm.rank()] = testing_util::oktopk_call_volumes(comm, n, calls, options);
  });
  EXPECT_EQ(error, "") << "P=" << P << " n=" << n;
  return records;
}

constexpr int64_t kN = 16384;
constexpr double kDensity = 0.05;  // k = 819: the count messages (O(P) bytes) stay small next to k

class OkTopkBound : public ::testing::TestWithParam<int> {};

TEST_P(OkTopkBound, SixKWordsFromCall32WithResidualsCarried) {
  const int P = GetParam();
  SparseOptions options;
  options.density = kDensity;
  options.max_overshoot = 0.25;
  const auto records = run(P, kN, kOkTopkCalls, options);
  for (int rank = 0; rank < P; ++rank)
    testing_util::expect_six_k_words_from_call_32(records[rank], kN, options, cat("P=", P, " rank=", rank));
}

INSTANTIATE_TEST_SUITE_P(P, OkTopkBound, ::testing::Values(2, 3, 4, 8, 16),
                         [](const ::testing::TestParamInfo<int>& info) { return cat("P", info.param); });

// The transient the cap removes: with the spec's feedback alone the same stream sends more
// than 6k words per rank on reuse calls after call 32 (the residuals of unselected entries
// grow every call and the x1.012 / x1.008 steps lag behind).
TEST(OkTopkBoundWithoutCap, SpecFeedbackAloneExceedsTheBound) {
  const int P = 4;
  SparseOptions options;
  options.density = kDensity;
  options.max_overshoot = -1;
  const int64_t k = topk_count(kN, kDensity);
  const auto records = run(P, kN, 64, options);
  uint64_t worst = 0;
  for (int t = kOkTopkFirstBoundCall; t < 64; ++t)
    if (!records[0][t].reevaluation)
      for (int rank = 0; rank < P; ++rank) worst = std::max(worst, records[rank][t].bytes);
  EXPECT_GT(worst, static_cast<uint64_t>(6 * k * 4)) << "P=" << P << " k=" << k << ": most bytes on a reuse call";
}

TEST(ProportionalQuotas, SumToKWithinCounts) {
  EXPECT_EQ(proportional_quotas({5, 0, 10, 1}, 8), (std::vector<int64_t>{3, 0, 5, 0}));  // 2.5, 0, 5, 0.5
  EXPECT_EQ(proportional_quotas({3, 3, 3}, 4), (std::vector<int64_t>{2, 1, 1}));         // ties: lower rank
  EXPECT_EQ(proportional_quotas({2, 1}, 5), (std::vector<int64_t>{2, 1}));               // T <= k: unchanged
  const std::vector<int64_t> counts{7, 100, 0, 33, 1, 59};
  for (int64_t k = 1; k <= 200; ++k) {
    const auto quotas = proportional_quotas(counts, k);
    int64_t sum = 0;
    for (size_t q = 0; q < counts.size(); ++q) {
      EXPECT_LE(quotas[q], counts[q]) << "k=" << k << " rank " << q;
      sum += quotas[q];
    }
    EXPECT_EQ(sum, std::min<int64_t>(k, 200)) << "k=" << k;
  }
}

}  // namespace
}  // namespace concord::sparse
