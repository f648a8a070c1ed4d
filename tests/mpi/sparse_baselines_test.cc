// The sparse baselines (src/sparse/{dense,topka,topkdsa,gtopk,gaussiank}.h) on an
// MpiCommunicator under mpirun: every rank runs several calls with the residual carried on,
// allgathers every rank's accumulator and checks its own U, residual and bytes sent (the
// transport's counters) against the test-side references of
// tests/unit/sparse_baseline_reference.h, bit for bit (integer data: sums exact in any
// order). The unit suite covers P = 1..8 on the in-process transport; this one checks that
// the same holds over MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "sparse/coo_gather.h"
#include "sparse/dense.h"
#include "sparse/sparse_allreduce.h"
#include "sparse_mpi_util.h"
#include "transport/mpi_communicator.h"
#include "unit/sparse_baseline_reference.h"

namespace concord::sparse {
namespace {

// Traffic of CooGather::allgather_words of `words` int64 per rank on every rank: one word is
// the length check (dense, topka, gtopk) and topkdsa's count allgather, two gaussiank's
// {count, n} allgather.
std::vector<TrafficCounters> count_allgather_traffic(int P, int words = 1) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  CooGather gather(comm);
  gather.allgather_words(std::vector<int64_t>(words, comm.rank()));
  const uint64_t mine[2] = {comm.counters().bytes_sent, comm.counters().messages_sent};
  std::vector<uint64_t> all(2 * P);
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
  std::vector<TrafficCounters> traffic(P);
  for (int q = 0; q < P; ++q) {
    traffic[q].bytes_sent = all[2 * q];
    traffic[q].messages_sent = all[2 * q + 1];
  }
  return traffic;
}

class SparseBaselinesOverMpi : public ::testing::TestWithParam<std::string> {};

TEST_P(SparseBaselinesOverMpi, MatchesReference) {
  const std::string name = GetParam();
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<TrafficCounters> counts_traffic = count_allgather_traffic(P);
  const std::vector<TrafficCounters> pairs_traffic = count_allgather_traffic(P, 2);
  MpiCommunicator comm(MPI_COMM_WORLD);
  for (int64_t n : {int64_t{0}, int64_t{P + 1}, int64_t{1000}, int64_t{20000}}) {
    SparseOptions options;
    options.density = 0.02;
    auto algorithm = make_sparse_allreduce(name, comm, options);
    std::vector<float> acc(n, 0.0f);
    std::mt19937 random(static_cast<uint32_t>(rank * 7919 + 11));
    std::uniform_int_distribution<int> value(-40, 40);
    for (int t = 0; t < 3; ++t) {
      for (auto& x : acc) x += static_cast<float>(value(random));
      const auto all_acc = allgather_floats(acc, P);
      testing_util::SparseExpectation expected =
          name == "topka"     ? testing_util::reference_topka(all_acc, options.density, counts_traffic)
          : name == "topkdsa" ? testing_util::reference_topkdsa(all_acc, options.density, counts_traffic)
          : name == "gtopk"   ? testing_util::reference_gtopk(all_acc, options.density, counts_traffic)
          : name == "gaussiank"
              ? testing_util::reference_gaussiank(all_acc, options.density, options.gaussian_corrections, pairs_traffic)
              : testing_util::reference_dense(all_acc);
      SparseResult result;
      comm.reset_counters();
      algorithm->allreduce(acc.data(), n, result);
      const std::string at = "rank " + std::to_string(rank) + " of " + name + " (P=" + std::to_string(P) +
                             ", n=" + std::to_string(n) + ") call " + std::to_string(t);
      EXPECT_EQ(result.indices, expected.U.indices) << at << ": U indices";
      EXPECT_EQ(result.values, expected.U.values) << at << ": U values";
      for (int64_t j = 0; j < n; ++j)
        if (acc[j] != expected.residual[rank][j]) {
          ADD_FAILURE() << at << ": residual element " << j << ": " << acc[j] << " expected "
                        << expected.residual[rank][j];
          break;
        }
      if (name == "dense")  // the allreduce's bytes + the length check's (sent for n = 0 too)
        EXPECT_LE(comm.counters().bytes_sent,
                  SparseAllreduceDense::cost(P, n).max_bytes_sent + counts_traffic[rank].bytes_sent)
            << at << ": bytes";
      else EXPECT_EQ(comm.counters().bytes_sent, expected.bytes_sent[rank]) << at << ": bytes sent";
    }
  }
}

// One rank (the last) passes a different n to topka, which has no count exchange of its
// own: every rank throws MismatchError naming that rank's n (no hang), and the next call
// with the same n everywhere matches the reference.
TEST(SparseBaselinesOverMpiErrors, TopkADifferentLengthThrowsOnEveryRankThenRecovers) {
  int P = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (P == 1) GTEST_SKIP() << "needs two ranks";
  const std::vector<TrafficCounters> counts_traffic = count_allgather_traffic(P);
  MpiCommunicator comm(MPI_COMM_WORLD);
  SparseOptions options;
  options.density = 0.02;
  auto algorithm = make_sparse_allreduce("topka", comm, options);
  const int64_t n = 1000, odd_n = rank == P - 1 ? 1200 : n;
  std::vector<float> acc(odd_n);
  for (int64_t j = 0; j < odd_n; ++j) acc[j] = static_cast<float>((j * 37 + rank * 11) % 81 - 40);
  SparseResult result;
  std::string message;
  try {
    algorithm->allreduce(acc.data(), odd_n, result);
  } catch (const MismatchError& e) {
    message = e.what();
  }
  const std::string at = "rank " + std::to_string(rank) + " of topka (P=" + std::to_string(P) + ", n=1000, rank " +
                         std::to_string(P - 1) + " n=1200)";
  EXPECT_NE(message.find("rank " + std::to_string(P - 1) + ": n=1200"), std::string::npos) << at << ": " << message;
  EXPECT_NE(message.find("rank 0: n=1000"), std::string::npos) << at << ": " << message;

  acc.resize(n);
  const auto all_acc = allgather_floats(acc, P);
  const testing_util::SparseExpectation expected =
      testing_util::reference_topka(all_acc, options.density, counts_traffic);
  comm.reset_counters();
  algorithm->allreduce(acc.data(), n, result);
  EXPECT_EQ(result.indices, expected.U.indices) << at << ": U indices of the next call";
  EXPECT_EQ(result.values, expected.U.values) << at << ": U values of the next call";
  EXPECT_EQ(comm.counters().bytes_sent, expected.bytes_sent[rank]) << at << ": bytes sent by the next call";
}

INSTANTIATE_TEST_SUITE_P(Baselines, SparseBaselinesOverMpi,
                         ::testing::Values("dense", "topka", "topkdsa", "gtopk", "gaussiank"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace concord::sparse
