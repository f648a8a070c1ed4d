// AllreduceAdasum (src/algorithms/allreduce_adasum.h) on the in-process multi-rank transport:
// P = 1, 2, 4, 8, 16 x sizes 0, 1, 2, 3, 7, 100, 1001 x float32/float64 against a sequential
// reference (the binary tree of Adasum(a, b) over rank order, dot products over whole
// vectors in double); every rank must hold the same bits and nothing past the buffer may be
// written. Also the paper's two limits (orthogonal vectors add up, equal vectors stay),
// instance reuse, and the errors (P not a power of two, integer dtype, another op).
// The pure rank arithmetic (patterns/vector_halving.h) is checked without communication.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/allreduce_adasum.h"
#include "algorithms/registry.h"
#include "common/enforce.h"
#include "patterns/vector_halving.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::drive;
using testing_util::run_ranks;

double input_value(int rank, size_t i) {
  // Mixed signs and magnitudes, different directions per rank.
  return std::sin(0.37 * static_cast<double>(i + 1) * (rank + 1)) + 0.1 * ((rank + static_cast<int>(i)) % 3 - 1);
}

/// The reference: level by level, blocks 2j and 2j+1 combined with the paper's formula.
std::vector<double> reference(const std::vector<std::vector<double>>& inputs) {
  std::vector<std::vector<double>> level = inputs;
  while (level.size() > 1) {
    std::vector<std::vector<double>> next;
    for (size_t j = 0; j + 1 < level.size(); j += 2) {
      std::vector<double> a = level[j];
      const std::vector<double>& b = level[j + 1];
      double ab = 0, aa = 0, bb = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        ab += a[i] * b[i];
        aa += a[i] * a[i];
        bb += b[i] * b[i];
      }
      AllreduceAdasum::combine(a.data(), b.data(), a.size(), ab, aa, bb);
      next.push_back(std::move(a));
    }
    level = std::move(next);
  }
  return level.at(0);
}

template <typename T>
void check(int P, size_t n, const std::vector<std::vector<double>>& inputs, int calls = 1) {
  constexpr size_t kGuard = 4;
  const std::string what = cat("adasum P=", P, " n=", n, " dtype=", sizeof(T) == 4 ? "float32" : "float64");
  std::vector<std::vector<T>> buffers(P);
  std::vector<std::vector<double>> rounded(P, std::vector<double>(n));
  for (int r = 0; r < P; ++r) {
    buffers[r].assign(n + kGuard, static_cast<T>(-12345));
    for (size_t i = 0; i < n; ++i) rounded[r][i] = static_cast<double>(buffers[r][i] = static_cast<T>(inputs[r][i]));
  }
  std::vector<std::vector<T>> originals = buffers;
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    AllreduceAdasum algorithm(comm);
    for (int call = 0; call < calls; ++call) {
      if (call > 0) buffers[comm.rank()] = originals[comm.rank()];
      algorithm.start(buffers[comm.rank()].data(), n, sizeof(T) == 4 ? DataType::kFloat32 : DataType::kFloat64,
                      ReduceOp::kAdasum);
      drive(algorithm, aborted);
    }
  });
  ASSERT_EQ(error, "") << what;
  const std::vector<double> expected = n ? reference(rounded) : std::vector<double>{};
  const double tolerance = sizeof(T) == 4 ? 2e-5 : 1e-12;
  for (int r = 0; r < P; ++r) {
    for (size_t i = n; i < n + kGuard; ++i)
      ASSERT_EQ(buffers[r][i], static_cast<T>(-12345)) << "rank " << r << " wrote past the end, " << what;
    ASSERT_EQ(std::memcmp(buffers[r].data(), buffers[0].data(), n * sizeof(T)), 0)
        << "rank " << r << " differs from rank 0 in its bits, " << what;
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(buffers[r][i], expected[i], tolerance * (1 + std::fabs(expected[i])))
          << "rank " << r << " element " << i << ", " << what;
  }
}

std::vector<std::vector<double>> inputs_for(int P, size_t n) {
  std::vector<std::vector<double>> inputs(P, std::vector<double>(n));
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < n; ++i) inputs[r][i] = input_value(r, i);
  return inputs;
}

class AdasumRanks : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(AdasumRanks, MatchesTheSequentialTree) {
  const auto [P, n] = GetParam();
  check<float>(P, n, inputs_for(P, n));
  check<double>(P, n, inputs_for(P, n));
}

INSTANTIATE_TEST_SUITE_P(All, AdasumRanks,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8, 16),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7},
                                                              size_t{100}, size_t{1001})),
                         [](const auto& info) {
                           return cat("P", std::get<0>(info.param), "_n", std::get<1>(info.param));
                         });

// A fused buffer told its tensors (set_tensors) reduces each with its own dot products:
// bit-identical to one call per tensor; without the tensors the dot products span the
// whole buffer and the result differs.
TEST(Adasum, FusedTensorsEachGetTheirOwnDotProducts) {
  const int P = 4;
  const std::vector<size_t> counts = {5, 0, 37, 1, 64};
  size_t total = 0;
  for (size_t n : counts) total += n;
  const auto inputs = inputs_for(P, total);
  std::vector<std::vector<float>> fused(P), separate(P), unsplit(P);
  for (int r = 0; r < P; ++r) {
    fused[r].assign(inputs[r].begin(), inputs[r].end());
    separate[r] = unsplit[r] = fused[r];
  }
  std::vector<size_t> tensor_bytes;
  for (size_t n : counts) tensor_bytes.push_back(n * sizeof(float));
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    AllreduceAdasum algorithm(comm);
    algorithm.set_tensors(tensor_bytes);
    algorithm.start(fused[r].data(), total, DataType::kFloat32, ReduceOp::kAdasum);
    drive(algorithm, aborted);
    size_t offset = 0;
    for (size_t n : counts) {
      algorithm.start(separate[r].data() + offset, n, DataType::kFloat32, ReduceOp::kAdasum);
      drive(algorithm, aborted);
      offset += n;
    }
    algorithm.start(unsplit[r].data(), total, DataType::kFloat32, ReduceOp::kAdasum);  // tensors applied once only
    drive(algorithm, aborted);
  });
  ASSERT_EQ(error, "");
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(std::memcmp(fused[r].data(), separate[r].data(), total * sizeof(float)), 0)
        << "rank " << r << ": fused adasum differs from one call per tensor";
    EXPECT_NE(std::memcmp(unsplit[r].data(), separate[r].data(), total * sizeof(float)), 0)
        << "rank " << r << ": dot products over the whole buffer gave the per-tensor result";
  }
  const std::string refused = run_ranks(1, [&](Communicator& comm, const AbortFlag&) {
    AllreduceAdasum algorithm(comm);
    algorithm.set_tensors({8, 6});  // 6 bytes: not whole float32 elements
    float x[4] = {};
    algorithm.start(x, 4, DataType::kFloat32, ReduceOp::kAdasum);
  });
  EXPECT_NE(refused.find("not whole float32 elements"), std::string::npos) << refused;
}

// Adasum is a row of the registry: the only one that takes op adasum (the element-wise rows
// decline it, naming why), and it declines every other op.
TEST(Adasum, TheRegistryRowIsTheOnlyOneForTheAdasumOp) {
  Problem problem;
  problem.ranks = 4;
  problem.count = 1000;
  problem.op = ReduceOp::kAdasum;
  for (const auto& entry : allreduce_algorithms()) {
    const std::string reason = entry.declines(problem);
    if (entry.name == AllreduceAdasum::kName) {
      EXPECT_EQ(reason, "");
    } else {
      EXPECT_NE(reason, "") << entry.name << " accepts op adasum";
    }
  }
  EXPECT_EQ(select_algorithm(allreduce_algorithms(), problem, CostParams{}).name, AllreduceAdasum::kName);
  EXPECT_EQ(select_algorithm(allreduce_algorithms(), problem, CostParams{}, "ring").name, AllreduceAdasum::kName);
  EXPECT_EQ(find_algorithm(allreduce_algorithms(), "ring").declines(problem),
            "adasum is not element-wise (the adasum row runs it)");
  problem.op = ReduceOp::kSum;
  EXPECT_EQ(find_algorithm(allreduce_algorithms(), AllreduceAdasum::kName).declines(problem), "adasum only");
  problem.op = ReduceOp::kAdasum;
  problem.ranks = 6;
  EXPECT_NE(find_algorithm(allreduce_algorithms(), AllreduceAdasum::kName).declines(problem), "");
}

TEST(Adasum, ReusedInstanceGivesTheSameResult) { check<double>(4, 37, inputs_for(4, 37), 3); }

TEST(Adasum, OrthogonalVectorsAddUpAndEqualVectorsStay) {
  // Orthogonal: rank r holds e_r (scaled); Adasum is the plain sum.
  const int P = 4;
  std::vector<std::vector<double>> orthogonal(P, std::vector<double>(P, 0.0));
  for (int r = 0; r < P; ++r) orthogonal[r][r] = r + 1.0;
  const std::vector<double> sum = reference(orthogonal);
  for (int r = 0; r < P; ++r) EXPECT_DOUBLE_EQ(sum[r], r + 1.0) << "element " << r;
  check<double>(P, P, orthogonal);
  // Equal: Adasum(a, a) = a.
  std::vector<std::vector<double>> equal(P, std::vector<double>{1.5, -2.0, 0.25});
  const std::vector<double> same = reference(equal);
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(same[i], equal[0][i]) << "element " << i;
  check<double>(P, 3, equal);
  // A zero vector leaves the other unchanged.
  const auto [ca, cb] = AllreduceAdasum::coefficients(0.0, 0.0, 4.0);
  EXPECT_EQ(ca, 1.0);
  EXPECT_EQ(cb, 1.0);
}

TEST(Adasum, RefusesNonPowerOfTwoIntegersAndOtherOps) {
  for (int P : {3, 5, 6}) {
    const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
      float x = 1;
      AllreduceAdasum algorithm(comm);
      algorithm.start(&x, 1, DataType::kFloat32, ReduceOp::kAdasum);
    });
    EXPECT_NE(error.find("power-of-two number of ranks"), std::string::npos) << "P=" << P << ": " << error;
    EXPECT_NE(error.find(cat(P, " ranks")), std::string::npos) << "P=" << P << ": " << error;
  }
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    int32_t x = 1;
    AllreduceAdasum algorithm(comm);
    EXPECT_THROW(algorithm.start(&x, 1, DataType::kInt32, ReduceOp::kAdasum), InvalidArgument);
    EXPECT_THROW(algorithm.start(&x, 1, DataType::kFloat32, ReduceOp::kSum), InvalidArgument);
  });
  EXPECT_EQ(error, "");
}

// Pure rank arithmetic: after all levels the held segments partition the vector; partners
// hold the same segment before each level.
TEST(VectorHalvingPattern, SegmentsPartitionTheVector) {
  for (int P : {1, 2, 4, 8, 16}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{17}, size_t{64}}) {
      std::vector<int> owner(n, -1);
      for (int r = 0; r < P; ++r) {
        const patterns::VectorHalving pattern{r, P};
        for (int k = 0; k < pattern.levels(); ++k) {
          const patterns::VectorHalving partner{pattern.partner(k), P};
          EXPECT_EQ(pattern.held(n, k).offset, partner.held(n, k).offset) << "P=" << P << " n=" << n << " r=" << r;
          EXPECT_EQ(pattern.held(n, k).count, partner.held(n, k).count) << "P=" << P << " n=" << n << " r=" << r;
        }
        const patterns::Segment last = pattern.held(n, pattern.levels());
        for (size_t i = last.offset; i < last.offset + last.count; ++i) {
          EXPECT_EQ(owner[i], -1) << "element " << i << " held by two ranks, P=" << P << " n=" << n;
          owner[i] = r;
        }
      }
      for (size_t i = 0; i < n; ++i) EXPECT_NE(owner[i], -1) << "element " << i << " held by nobody, P=" << P;
    }
  }
}

}  // namespace
}  // namespace concord
