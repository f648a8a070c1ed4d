// OkTopk (src/sparse/oktopk.h) on an MpiCommunicator under mpirun: every rank runs several
// calls, allgathers every rank's accumulator and selection, and checks its own result and
// residual against a reference computed on every rank (tests/unit/sparse_reference.h):
// exact mode bit for bit (integer data, so sums are exact in any order); threshold mode
// by properties 1-3 (U bit-identical on every rank, U[j] = sum of the selected acc_i[j] / P,
// residual = acc with S_i ∩ G zeroed). Also: mismatched n throws MismatchError on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "concord/errors.h"
#include "sparse/oktopk.h"
#include "sparse_mpi_util.h"
#include "transport/mpi_communicator.h"
#include "unit/sparse_reference.h"

namespace concord::sparse {
namespace {

void integer_gradient(int rank, int call, std::vector<float>& g) {
  std::mt19937 random(static_cast<uint32_t>(rank * 7919 + call * 31 + 5));
  std::uniform_int_distribution<int> value(-40, 40);
  for (auto& x : g) x = static_cast<float>(value(random));
}

class SparseOverMpi : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD); }
  std::unique_ptr<MpiCommunicator> comm_;
};

TEST_F(SparseOverMpi, OkTopkExactModeMatchesReference) {
  const int P = comm_->size(), rank = comm_->rank();
  for (int64_t n : {int64_t{0}, int64_t{P + 1}, int64_t{1000}, int64_t{20000}}) {
    SparseOptions options;
    options.exact = true;
    options.density = 0.02;
    options.tau = 2;
    options.balance_factor = 1.5;
    OkTopk algorithm(*comm_, options);
    const int64_t k = topk_count(n, options.density);
    std::vector<float> acc(n, 0.0f), g(n);
    for (int t = 0; t < 4; ++t) {
      integer_gradient(rank, t, g);
      for (int64_t j = 0; j < n; ++j) acc[j] += g[j];
      const auto ref = testing_util::exact_reference(allgather_floats(acc, P), k);
      SparseResult result;
      algorithm.allreduce(acc.data(), n, result);
      const std::string at = "P=" + std::to_string(P) + " n=" + std::to_string(n) + " call=" + std::to_string(t) +
                             " rank=" + std::to_string(rank);
      EXPECT_EQ(result.indices, ref.global) << at << ": G";
      EXPECT_EQ(result.values, ref.result) << at << ": U";
      for (int64_t j = 0; j < n; ++j)
        if (acc[j] != ref.residual[rank][j]) {
          ADD_FAILURE() << at << " residual element " << j << ": " << acc[j] << " expected " << ref.residual[rank][j];
          break;
        }
    }
  }
}

TEST_F(SparseOverMpi, OkTopkThresholdModeProperties) {
  const int P = comm_->size(), rank = comm_->rank();
  const int64_t n = 5000;
  SparseOptions options;
  options.density = 0.01;
  options.tau = 3;
  options.tau_local = 2;
  options.tau_global = 3;
  OkTopk algorithm(*comm_, options);
  std::vector<float> acc(n, 0.0f), g(n);
  for (int t = 0; t < 8; ++t) {
    integer_gradient(rank, t, g);
    for (int64_t j = 0; j < n; ++j) acc[j] += g[j];
    const auto all_acc = allgather_floats(acc, P);
    SparseResult result;
    algorithm.allreduce(acc.data(), n, result);
    std::vector<float> mask(n, 0.0f);
    for (int64_t j : algorithm.trace().selected.indices) mask[j] = 1;
    const auto all_masks = allgather_floats(mask, P);
    std::vector<float> dense_u(n, 0.0f);
    for (size_t e = 0; e < result.indices.size(); ++e) dense_u[result.indices[e]] = result.values[e];
    const auto all_u = allgather_floats(dense_u, P);
    const std::string at = "P=" + std::to_string(P) + " n=" + std::to_string(n) + " call=" + std::to_string(t) +
                           " rank=" + std::to_string(rank);
    for (int q = 0; q < P; ++q)
      EXPECT_EQ(std::memcmp(all_u[q].data(), dense_u.data(), n * sizeof(float)), 0)
          << at << ": U differs from rank " << q;
    for (size_t e = 0; e < result.indices.size(); ++e) {
      const int64_t j = result.indices[e];
      float sum = 0;
      for (int q = 0; q < P; ++q)
        if (all_masks[q][j] != 0) sum += all_acc[q][j];
      EXPECT_EQ(result.values[e], sum / static_cast<float>(P)) << at << " U element " << j;
    }
    for (int64_t j = 0; j < n; ++j) {
      const float expected = (dense_u[j] != 0 && mask[j] != 0) ? 0.0f : all_acc[rank][j];
      if (acc[j] != expected) {
        ADD_FAILURE() << at << " residual element " << j << ": " << acc[j] << " expected " << expected;
        break;
      }
    }
  }
}

TEST_F(SparseOverMpi, MismatchedLengthThrowsOnEveryRank) {
  const int P = comm_->size(), rank = comm_->rank();
  if (P == 1) GTEST_SKIP() << "needs two ranks";
  OkTopk algorithm(*comm_, SparseOptions{});
  std::vector<float> acc(101, 1.0f);
  SparseResult result;
  const int64_t n = rank == P - 1 ? 101 : 100;
  try {
    algorithm.allreduce(acc.data(), n, result);
    ADD_FAILURE() << "rank " << rank << ": no error for mismatched n";
  } catch (const MismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(P - 1) + ": n=101"), std::string::npos)
        << "rank " << rank << ": " << e.what();
  }
}

}  // namespace
}  // namespace concord::sparse
