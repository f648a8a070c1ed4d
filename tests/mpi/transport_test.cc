// The MPI transport beneath the algorithms, on MPI_COMM_WORLD under mpirun: split (by
// parity, with a negative color, counters), native_allreduce for every dtype and op (the
// float16/bfloat16 user-defined ops included), and the algorithms that depend on them:
// "hierarchical" with nodes emulated as pairs of ranks and "mpi" through the registry.
// Inputs are small integers (test_support/exact_reduction.h): every result must be exact.
//
// These tests call MPI from the main thread while Concord's background thread runs, so they
// need MPI_THREAD_MULTIPLE (skipped otherwise). Every rank runs the same collectives.
#include <numeric>

#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/registry.h"
#include "mpi_test_util.h"
#include "test_support/exact_reduction.h"
#include "transport/mpi_communicator.h"
#include "transport/request_set.h"

namespace concord::mpitest {
namespace {

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

#define REQUIRE_THREAD_MULTIPLE() \
  if (!thread_multiple()) GTEST_SKIP() << "MPI does not provide MPI_THREAD_MULTIPLE"

TEST(MpiTransport, SplitByParityThenRingExchangeInsideEachGroup) {
  REQUIRE_THREAD_MULTIPLE();
  MpiCommunicator world(MPI_COMM_WORLD);
  const int rank = world.rank(), P = world.size();
  auto sub = world.split(rank % 2, rank);
  const int members = (P - rank % 2 + 1) / 2;
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), members) << "[rank " << rank << "]";
  EXPECT_EQ(sub->rank(), rank / 2) << "[rank " << rank << "]";
  EXPECT_EQ(sub->counters().messages_sent, 0u) << "[rank " << rank << "] counters start at zero";
  int mine = rank, from_left = -1;
  RequestSet requests;
  requests.post(sub->irecv(&from_left, sizeof from_left, (sub->rank() + members - 1) % members, 1));
  requests.post(sub->isend(&mine, sizeof mine, (sub->rank() + 1) % members, 1));
  requests.wait();
  EXPECT_EQ(from_left, ((rank / 2 + members - 1) % members) * 2 + rank % 2) << "[rank " << rank << "]";
  EXPECT_EQ(sub->counters().messages_sent, 1u) << "[rank " << rank << "]";
  EXPECT_EQ(world.counters().bytes_sent, sizeof(int)) << "[rank " << rank << "] parent counts the child's traffic";
}

TEST(MpiTransport, SplitWithNegativeColorGivesNoCommunicator) {
  REQUIRE_THREAD_MULTIPLE();
  MpiCommunicator world(MPI_COMM_WORLD);
  auto sub = world.split(world.rank() == 0 ? -1 : 1, 0);
  if (world.rank() == 0) {
    EXPECT_EQ(sub, nullptr);
  } else {
    ASSERT_NE(sub, nullptr) << "[rank " << world.rank() << "]";
    EXPECT_EQ(sub->size(), world.size() - 1) << "[rank " << world.rank() << "]";
  }
}

TEST(MpiTransport, NativeAllreduceEveryDtypeAndOpIsExact) {
  REQUIRE_THREAD_MULTIPLE();
  MpiCommunicator world(MPI_COMM_WORLD);
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      EXPECT_TRUE(world.native_allreduce_supported(dtype, op));
      for (size_t n : {size_t{0}, size_t{1}, size_t{1023}}) {
        auto data = testlists::exact_inputs(world.rank(), n, dtype, op);
        const auto input = data;
        auto output = data;
        std::fill(output.begin(), output.end(), uint8_t{0xA5});
        world.native_allreduce(data.data(), data.data(), n, dtype, op);
        world.native_allreduce(input.data(), output.data(), n, dtype, op);
        const auto expected = testlists::exact_reduction(world.size(), n, dtype, op);
        for (const auto* kind : {"in place", "out of place"}) {
          const long diff = testlists::first_mismatch(kind[0] == 'i' ? data : output, expected, dtype);
          EXPECT_EQ(diff, -1) << "[rank " << world.rank() << "] MPI_Allreduce " << kind << " P=" << world.size()
                              << " n=" << n << " " << dtype_name(dtype) << " " << reduce_op_name(op) << " element "
                              << diff;
        }
      }
    }
  }
}

// Runs `entry` of the registry on `world` for every dtype and op, in place and out of
// place (start_out_of_place: the input must stay as it was), and checks exactness.
void expect_exact(const AllreduceEntry& entry, const AlgorithmContext& ctx, size_t n) {
  auto algorithm = entry.create(ctx);
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      const auto input = testlists::exact_inputs(ctx.comm.rank(), n, dtype, op);
      const auto expected = testlists::exact_reduction(ctx.comm.size(), n, dtype, op);
      auto data = input;
      algorithm->start(data.data(), n, dtype, op);
      run_to_completion(*algorithm);
      auto output = input;
      std::fill(output.begin(), output.end(), uint8_t{0xA5});
      algorithm->start_out_of_place(input.data(), output.data(), n, dtype, op);
      run_to_completion(*algorithm);
      const std::string what = "[rank " + std::to_string(ctx.comm.rank()) + "] " + entry.name +
                               " P=" + std::to_string(ctx.comm.size()) + " n=" + std::to_string(n) + " " +
                               dtype_name(dtype) + " " + reduce_op_name(op);
      long diff = testlists::first_mismatch(data, expected, dtype);
      EXPECT_EQ(diff, -1) << what << " in place: element " << diff;
      diff = testlists::first_mismatch(output, expected, dtype);
      EXPECT_EQ(diff, -1) << what << " out of place: element " << diff;
      diff = testlists::first_mismatch(input, testlists::exact_inputs(ctx.comm.rank(), n, dtype, op), dtype);
      EXPECT_EQ(diff, -1) << what << " out of place: the input changed at element " << diff;
    }
  }
}

TEST(MpiTransport, HierarchicalWithPairsOfRanksAsNodesIsExact) {
  REQUIRE_THREAD_MULTIPLE();
  MpiCommunicator world(MPI_COMM_WORLD);
  ScratchBuffer scratch;
  std::vector<int> nodes(world.size());
  for (int r = 0; r < world.size(); ++r) nodes[r] = r / 2;
  const AlgorithmContext ctx{world, scratch, 256, nodes};
  expect_exact(find_algorithm(allreduce_algorithms(), "hierarchical"), ctx, 1023);
}

TEST(MpiTransport, MpiAlgorithmFromTheRegistryIsExact) {
  REQUIRE_THREAD_MULTIPLE();
  MpiCommunicator world(MPI_COMM_WORLD);
  ScratchBuffer scratch;
  Problem problem;
  problem.ranks = world.size();
  problem.native_available = world.native_allreduce_supported(DataType::kFloat32, ReduceOp::kSum);
  const auto& entry = find_algorithm(allreduce_algorithms(), "mpi");
  EXPECT_EQ(entry.declines(problem), "");
  expect_exact(entry, AlgorithmContext{world, scratch, 256, {}}, 1023);
}

}  // namespace
}  // namespace concord::mpitest
