// Top-k selection (src/sparse/topk.h: Ok-Topk's Phase 0 and Gaussiank):
// every function against a test-side reference built on std::sort / plain loops, over
// n = 0, 1, odd and large (sampled path) sizes, k = 1..n, ties, signed zeros, strict and
// non-strict thresholds, the feedback rule and Gaussiank's estimate on Gaussian data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "concord/errors.h"
#include "sparse/topk.h"
#include "sparse/topk_scan.h"
#include "test_support/dtype_util.h"

namespace concord::sparse {
namespace {

using testing_util::cat;

// Reference top-k: sort all indices by (|x| descending, index ascending), keep k, sort.
std::vector<int64_t> reference_topk(const std::vector<float>& x, int64_t k) {
  std::vector<int64_t> order(x.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const float ma = std::fabs(x[a]), mb = std::fabs(x[b]);
    return ma != mb ? ma > mb : a < b;
  });
  order.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(x.size()))));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int64_t> reference_above(const std::vector<float>& x, float th, bool strict) {
  std::vector<int64_t> out;
  for (size_t j = 0; j < x.size(); ++j) {
    const float m = std::fabs(x[j]);
    if (strict ? m > th : m >= th) out.push_back(static_cast<int64_t>(j));
  }
  return out;
}

enum class Data { kNormal, kTies, kZerosMostly, kConstant, kSortedUp, kExtremes };

const char* data_name(Data d) {
  switch (d) {
    case Data::kNormal: return "normal";
    case Data::kTies: return "ties";
    case Data::kZerosMostly: return "zeros_mostly";
    case Data::kConstant: return "constant";
    case Data::kSortedUp: return "sorted_up";
    case Data::kExtremes: return "extremes";
  }
  return "?";
}

// Deterministic data of each kind; kTies draws from 7 magnitudes with random signs and
// signed zeros; kZerosMostly has 1% nonzeros (the sampled threshold lands on 0);
// kExtremes mixes subnormals, huge values and infinities with N(0, 1) (the widest key range).
std::vector<float> make_data(Data kind, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 6);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    float v = 0;
    switch (kind) {
      case Data::kNormal: v = normal(gen); break;
      case Data::kTies: v = static_cast<float>(small(gen)) * ((gen() & 1) ? -0.5f : 0.5f); break;
      case Data::kZerosMostly: v = (gen() % 100 == 0) ? normal(gen) : ((gen() & 1) ? -0.0f : 0.0f); break;
      case Data::kConstant: v = (j & 1) ? -3.0f : 3.0f; break;
      case Data::kSortedUp: v = static_cast<float>(j) * 1e-3f; break;
      case Data::kExtremes: {
        static const float kValues[] = {1e-42f, 1e-30f, 1e30f, 3e38f, std::numeric_limits<float>::infinity()};
        v = (gen() % 10 == 0) ? kValues[gen() % 5] * ((gen() & 1) ? -1.0f : 1.0f) : normal(gen);
        break;
      }
    }
    x[static_cast<size_t>(j)] = v;
  }
  return x;
}

// First position where two index lists differ, for the failure message.
std::string describe_mismatch(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  if (got.size() != want.size()) return cat("size ", got.size(), " != expected ", want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) return cat("element ", i, ": index ", got[i], " != expected ", want[i]);
  }
  return "equal";
}

TEST(TopkCount, DensityRuleAndErrors) {
  EXPECT_EQ(topk_count(0, 0.01), 0);
  EXPECT_EQ(topk_count(1, 0.01), 1);
  EXPECT_EQ(topk_count(99, 0.01), 1);
  EXPECT_EQ(topk_count(1000, 0.01), 10);
  EXPECT_EQ(topk_count(1001, 0.5), 500);
  EXPECT_EQ(topk_count(7, 1.0), 7);
  EXPECT_THROW(topk_count(10, 0.0), InvalidArgument);
  EXPECT_THROW(topk_count(10, -0.1), InvalidArgument);
  EXPECT_THROW(topk_count(10, 1.5), InvalidArgument);
  EXPECT_THROW(topk_count(10, std::nan("")), InvalidArgument);
  EXPECT_THROW(topk_count(-1, 0.1), InvalidArgument);
}

// topk_exact and kth_largest_magnitude against the sort, every data kind, sizes through
// the small (all-n) and sampled paths, k from 1 to n and beyond.
TEST(TopkExact, MatchesSortReference) {
  const std::vector<int64_t> sizes = {0, 1, 2, 7, 1023, 40001, 131075};
  const std::vector<Data> kinds = {Data::kNormal,   Data::kTies,     Data::kZerosMostly,
                                   Data::kConstant, Data::kSortedUp, Data::kExtremes};
  uint32_t seed = 1;
  for (int64_t n : sizes) {
    for (Data kind : kinds) {
      const std::vector<float> x = make_data(kind, n, seed++);
      std::vector<int64_t> ks = {0, 1, 2, n / 100, n / 7, n / 2, n - 1, n, n + 5};
      for (int64_t k : ks) {
        if (k < 0) continue;
        std::vector<int64_t> got = {42};  // must be replaced
        topk_exact(x.data(), n, k, got);
        const std::vector<int64_t> want = reference_topk(x, k);
        ASSERT_EQ(got, want) << "topk_exact n=" << n << " k=" << k << " data=" << data_name(kind) << ": "
                             << describe_mismatch(got, want);
        if (k >= 1 && k <= n) {
          std::vector<float> mags(x.size());
          for (size_t j = 0; j < x.size(); ++j) mags[j] = std::fabs(x[j]);
          std::sort(mags.begin(), mags.end(), std::greater<float>());
          const float kth = kth_largest_magnitude(x.data(), n, k);
          ASSERT_EQ(kth, mags[static_cast<size_t>(k - 1)])
              << "kth_largest_magnitude n=" << n << " k=" << k << " data=" << data_name(kind);
          ASSERT_FALSE(std::signbit(kth)) << "n=" << n << " k=" << k << ": -0 returned";
        }
      }
    }
  }
}

// Many seeds on the sampled path (n = 2^17 + 1, density 1%): the fast selection must give
// exactly the sort's answer every time.
TEST(TopkExact, SampledPathManySeeds) {
  const int64_t n = (1 << 17) + 1;
  const int64_t k = topk_count(n, 0.01);
  for (uint32_t seed = 100; seed < 110; ++seed) {
    const std::vector<float> x = make_data(seed % 2 ? Data::kNormal : Data::kTies, n, seed);
    std::vector<int64_t> got;
    topk_exact(x.data(), n, k, got);
    const std::vector<int64_t> want = reference_topk(x, k);
    ASSERT_EQ(got, want) << "seed " << seed << " n=" << n << " k=" << k << ": " << describe_mismatch(got, want);
  }
}

TEST(TopkExact, TieRuleKeepsLowestIndices) {
  // |x| = 2 at 1, 3, 4 (one is -2), |x| = 5 at 6: top-3 = {6} plus the two lowest of {1,3,4}.
  const std::vector<float> x = {0, 2, 1, -2, 2, 0, 5};
  std::vector<int64_t> got;
  topk_exact(x.data(), static_cast<int64_t>(x.size()), 3, got);
  EXPECT_EQ(got, (std::vector<int64_t>{1, 3, 6}));
  topk_exact(x.data(), static_cast<int64_t>(x.size()), 1, got);
  EXPECT_EQ(got, (std::vector<int64_t>{6}));
  EXPECT_EQ(kth_largest_magnitude(x.data(), 7, 3), 2.0f);
  EXPECT_EQ(kth_largest_magnitude(x.data(), 7, 7), 0.0f);
}

// NaN ranks above +inf in topk_exact / kth_largest_magnitude (magnitude-key order) and
// never passes select_above (IEEE comparison).
TEST(TopkExact, NanOrdersAboveInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, std::nanf(""), -inf, 2};
  std::vector<int64_t> got;
  topk_exact(x.data(), 4, 2, got);
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(std::isnan(kth_largest_magnitude(x.data(), 4, 1)));
  EXPECT_EQ(kth_largest_magnitude(x.data(), 4, 2), inf);
  select_above(x.data(), 4, 0.0f, false, got);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 2, 3}));
}

TEST(TopkExact, InvalidArguments) {
  const std::vector<float> x = {1, 2, 3};
  std::vector<int64_t> out;
  EXPECT_THROW(topk_exact(x.data(), 3, -1, out), InvalidArgument);
  EXPECT_THROW(topk_exact(x.data(), -3, 1, out), InvalidArgument);
  EXPECT_THROW(topk_exact(nullptr, 3, 1, out), InvalidArgument);
  EXPECT_THROW(kth_largest_magnitude(x.data(), 3, 0), InvalidArgument);
  EXPECT_THROW(kth_largest_magnitude(x.data(), 3, 4), InvalidArgument);
  EXPECT_THROW(kth_largest_magnitude(x.data(), 0, 1), InvalidArgument);
  topk_exact(nullptr, 0, 5, out);
  EXPECT_TRUE(out.empty());
}

TEST(SelectAbove, StrictAndNonStrictMatchReference) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{4099}, int64_t{100003}}) {
    for (Data kind : {Data::kNormal, Data::kTies, Data::kZerosMostly}) {
      const std::vector<float> x = make_data(kind, n, static_cast<uint32_t>(n) + 7);
      for (float th : {0.0f, -1.0f, 0.5f, 1.0f, 2.5f, std::numeric_limits<float>::infinity()}) {
        for (bool strict : {false, true}) {
          std::vector<int64_t> got = {42};
          select_above(x.data(), n, th, strict, got);
          const std::vector<int64_t> want = reference_above(x, th, strict);
          ASSERT_EQ(got, want) << "select_above n=" << n << " th=" << th << " strict=" << strict
                               << " data=" << data_name(kind) << ": " << describe_mismatch(got, want);
          ASSERT_EQ(detail::count_abs_above(x.data(), n, th, strict), static_cast<int64_t>(want.size()))
              << "count_abs_above n=" << n << " th=" << th << " strict=" << strict;
        }
      }
    }
  }
}

// With distinct magnitudes, |x| >= (k-th largest) selects exactly the exact top-k; with
// ties, >= selects at least k and > fewer than k.
TEST(SelectAbove, ExactThresholdGivesTopk) {
  const int64_t n = 50001;
  const std::vector<float> x = make_data(Data::kNormal, n, 5);
  for (int64_t k : {int64_t{1}, int64_t{500}, n}) {
    const float th = kth_largest_magnitude(x.data(), n, k);
    std::vector<int64_t> above, top;
    select_above(x.data(), n, th, false, above);
    topk_exact(x.data(), n, k, top);
    EXPECT_EQ(above, top) << "n=" << n << " k=" << k << ": " << describe_mismatch(above, top);
  }
  const std::vector<float> t = make_data(Data::kTies, n, 6);
  const int64_t k = 1000;
  const float th = kth_largest_magnitude(t.data(), n, k);
  std::vector<int64_t> ge, gt;
  select_above(t.data(), n, th, false, ge);
  select_above(t.data(), n, th, true, gt);
  EXPECT_GE(static_cast<int64_t>(ge.size()), k) << "ties n=" << n << " th=" << th;
  EXPECT_LT(static_cast<int64_t>(gt.size()), k) << "ties n=" << n << " th=" << th;
}

// Every compaction kernel the CPU has (portable, AVX2, AVX-512) gives the reference's
// indices, for all three tests (key >=, |x| >=, |x| >), on block tails and group tails.
TEST(SelectAbove, EveryScanKernelMatchesReference) {
  using detail::ScanKernel;
  for (ScanKernel kernel : {ScanKernel::kPortable, ScanKernel::kAvx2, ScanKernel::kAvx512}) {
    if (!detail::force_scan_kernel(kernel)) continue;
    for (int64_t n : {int64_t{5}, int64_t{4096 + 17}, int64_t{(1 << 16) + 9}}) {
      for (Data kind : {Data::kNormal, Data::kTies, Data::kZerosMostly}) {
        const std::vector<float> x = make_data(kind, n, static_cast<uint32_t>(n) * 3 + 1);
        for (float th : {0.0f, 0.5f, 2.0f}) {
          for (bool strict : {false, true}) {
            std::vector<int64_t> got;
            select_above(x.data(), n, th, strict, got);
            const std::vector<int64_t> want = reference_above(x, th, strict);
            ASSERT_EQ(got, want) << "kernel " << static_cast<int>(kernel) << " n=" << n << " th=" << th
                                 << " strict=" << strict << " data=" << data_name(kind) << ": "
                                 << describe_mismatch(got, want);
          }
          std::vector<int64_t> keyed;
          detail::append_key_at_least(x.data(), n, detail::magnitude_key(th), keyed);
          const std::vector<int64_t> want = reference_above(x, th, false);
          ASSERT_EQ(keyed, want) << "append_key_at_least kernel " << static_cast<int>(kernel) << " n=" << n
                                 << " th=" << th << ": " << describe_mismatch(keyed, want);
        }
        const int64_t k = std::max<int64_t>(1, n / 100);
        std::vector<int64_t> top;
        topk_exact(x.data(), n, k, top);
        ASSERT_EQ(top, reference_topk(x, k)) << "topk_exact kernel " << static_cast<int>(kernel) << " n=" << n
                                             << " k=" << k << " data=" << data_name(kind);
      }
    }
  }
  ASSERT_TRUE(detail::force_scan_kernel(ScanKernel::kAuto));
}

TEST(SelectAbove, NanThresholdSelectsNothing) {
  const std::vector<float> x = {1, -2, 3};
  std::vector<int64_t> out = {7};
  select_above(x.data(), 3, std::nanf(""), false, out);
  EXPECT_TRUE(out.empty());
}

TEST(ThresholdFeedback, AdjustsOutsideTheBand) {
  const ThresholdFeedback fb;  // lo 2/3, hi 5/4, factor 1.012
  EXPECT_EQ(fb.adjust(1.0f, 100, 100), 1.0f);
  EXPECT_EQ(fb.adjust(1.0f, 67, 100), 1.0f);
  EXPECT_EQ(fb.adjust(1.0f, 125, 100), 1.0f);
  EXPECT_EQ(fb.adjust(1.0f, 66, 100), static_cast<float>(1.0 / 1.012));
  EXPECT_EQ(fb.adjust(1.0f, 126, 100), static_cast<float>(1.0 * 1.012));
  const ThresholdFeedback bert{0.8, 1.25, 1.025};
  EXPECT_EQ(bert.adjust(2.0f, 79, 100), static_cast<float>(2.0 / 1.025));
  EXPECT_EQ(bert.adjust(2.0f, 80, 100), 2.0f);
}

TEST(GaussianThreshold, NormalQuantileIsAccurate) {
  // Values of statistics.NormalDist().inv_cdf (Wichura's AS241).
  const std::pair<double, double> cases[] = {{0.975, 1.9599639845400536},
                                             {0.995, 2.5758293035489},
                                             {1e-10, -6.361340902404056},
                                             {0.999999, 4.753424308817089},
                                             {0.5, 0.0},
                                             {0.3, -0.5244005127080407}};
  for (const auto& [p, want] : cases) EXPECT_NEAR(detail::normal_quantile(p), want, 1e-12) << "p=" << p;
  EXPECT_THROW(detail::normal_quantile(0.0), InvalidArgument);
  EXPECT_THROW(detail::normal_quantile(1.0), InvalidArgument);
}

TEST(GaussianThreshold, MomentsAreExactOnSmallData) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // tail past 8 lanes
  const detail::Moments m = detail::moments(x.data(), 11);
  EXPECT_DOUBLE_EQ(m.mean, 6.0);
  EXPECT_DOUBLE_EQ(m.stddev, std::sqrt(10.0));
}

// Far from zero (mean 1000, std 0.5) the one-pass shifted sums still give the moments to
// float64 accuracy: compared with a two-pass long double reference.
TEST(GaussianThreshold, MomentsMatchTwoPassReference) {
  const int64_t n = 100003;
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(1000.0f, 0.5f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(gen);
  long double sum = 0, sq = 0;
  for (float v : x) sum += v;
  const long double mean = sum / n;
  for (float v : x) sq += (v - mean) * (v - mean);
  const double stddev = static_cast<double>(std::sqrt(sq / n));
  const detail::Moments m = detail::moments(x.data(), n);
  EXPECT_NEAR(m.mean, static_cast<double>(mean), 1e-9) << "n=" << n;
  EXPECT_NEAR(m.stddev, stddev, 1e-9) << "n=" << n;
}

// On N(0, 1) data the uncorrected estimate is Phi^-1(1 - d/2) ~ 2.576 (d = 1%) and about
// k entries pass; with corrections the count ends within [3k/4, 5k/4].
TEST(GaussianThreshold, GivesRoughlyKOnGaussianData) {
  const int64_t n = 1 << 20;
  const double density = 0.01;
  const int64_t k = topk_count(n, density);
  const std::vector<float> x = make_data(Data::kNormal, n, 11);
  const float raw = gaussian_threshold(x.data(), n, density, 0);
  EXPECT_NEAR(raw, 2.5758, 0.02) << "n=" << n << " density=" << density;
  const float th = gaussian_threshold(x.data(), n, density);
  const int64_t passing = detail::count_abs_above(x.data(), n, th, false);
  EXPECT_GE(4 * passing, 3 * k) << "n=" << n << " k=" << k << " th=" << th << " passing=" << passing;
  EXPECT_LE(4 * passing, 5 * k) << "n=" << n << " k=" << k << " th=" << th << " passing=" << passing;
}

// Uniform data in [-1, 1] is far from Gaussian (the estimate overshoots k by a lot); each
// correction multiplies the threshold by 1.02, so the corrections reduce the count.
TEST(GaussianThreshold, CorrectionsMoveTowardK) {
  const int64_t n = 1 << 16;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = uniform(gen);
  const double density = 0.3;
  const float raw = gaussian_threshold(x.data(), n, density, 0);
  const float corrected = gaussian_threshold(x.data(), n, density, 3);
  const int64_t k = topk_count(n, density);
  const int64_t raw_count = detail::count_abs_above(x.data(), n, raw, false);
  const int64_t corrected_count = detail::count_abs_above(x.data(), n, corrected, false);
  ASSERT_GT(4 * raw_count, 5 * k) << "uniform data should overshoot: raw count " << raw_count << " k " << k;
  EXPECT_GT(corrected, raw);
  EXPECT_LT(corrected_count, raw_count);
  EXPECT_THROW(gaussian_threshold(x.data(), 0, density), InvalidArgument);
  EXPECT_THROW(gaussian_threshold(x.data(), n, 0.0), InvalidArgument);
  EXPECT_THROW(gaussian_threshold(x.data(), n, density, -1), InvalidArgument);
}

}  // namespace
}  // namespace concord::sparse
