// Process-level queries against what MPI itself reports.
#include <cstdlib>

#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

TEST(Basics, RankAndSizeMatchMpiWorld) {
  EXPECT_TRUE(is_initialized());
  EXPECT_EQ(concord::rank(), world_rank()) << "[rank " << world_rank() << "] concord::rank()";
  EXPECT_EQ(concord::size(), world_size()) << "[rank " << world_rank() << "] concord::size()";
  EXPECT_GE(concord::rank(), 0);
  EXPECT_LT(concord::rank(), concord::size());
}

TEST(Basics, LocalRankAndSizeMatchSharedMemorySplit) {
  if (!over_mpi()) GTEST_SKIP() << "asks MPI itself; the suite runs over " << process_world().origin().transport;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  // This test calls MPI from the main thread while Concord's background thread uses it.
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI does not provide MPI_THREAD_MULTIPLE";
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = -1, local_size = -1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  EXPECT_EQ(concord::local_rank(), local_rank) << "[rank " << world_rank() << "] local_rank()";
  EXPECT_EQ(concord::local_size(), local_size) << "[rank " << world_rank() << "] local_size()";
}

// The node layout the launcher promised, for runs across (emulated) hosts: with
// CONCORD_EXPECT_SIZE / CONCORD_EXPECT_LOCAL_SIZE set (e.g. 4 and 2 by the multihost.np4 test,
// which runs 2 hosts x 2 ranks through scripts/two_hosts.sh), size() and local_size() must
// equal them on every rank; unset, the test is skipped. Catches a launch where Open MPI
// treated both "hosts" as one node (local_size() == size()).
TEST(Basics, NodeLayoutMatchesLauncher) {
  const char* expect_size = std::getenv("CONCORD_EXPECT_SIZE");
  const char* expect_local_size = std::getenv("CONCORD_EXPECT_LOCAL_SIZE");
  if (expect_size == nullptr && expect_local_size == nullptr)
    GTEST_SKIP() << "CONCORD_EXPECT_SIZE and CONCORD_EXPECT_LOCAL_SIZE are not set";
  if (expect_size != nullptr) {
    EXPECT_EQ(concord::size(), std::atoi(expect_size))
        << "[rank " << world_rank() << "] size() != CONCORD_EXPECT_SIZE=" << expect_size;
  }
  if (expect_local_size != nullptr) {
    EXPECT_EQ(concord::local_size(), std::atoi(expect_local_size))
        << "[rank " << world_rank() << "] local_size() != CONCORD_EXPECT_LOCAL_SIZE=" << expect_local_size
        << " (size() = " << concord::size() << "): the launcher's hosts were not seen as separate nodes";
  }
  EXPECT_LT(concord::local_rank(), concord::local_size()) << "[rank " << world_rank() << "] local_rank()";
}

// The world came up over the transport and rendezvous a test configures (e.g. UCX through
// mpirun's PMIx server, tests/transport/CMakeLists.txt), not a fallback.
TEST(Basics, WorldOriginMatchesLauncher) {
  const char* expect_transport = std::getenv("CONCORD_EXPECT_TRANSPORT");
  const char* expect_rendezvous = std::getenv("CONCORD_EXPECT_RENDEZVOUS");
  if (expect_transport == nullptr && expect_rendezvous == nullptr)
    GTEST_SKIP() << "CONCORD_EXPECT_TRANSPORT and CONCORD_EXPECT_RENDEZVOUS are not set";
  const auto& origin = process_world().origin();
  if (expect_transport != nullptr) {
    EXPECT_EQ(origin.transport, expect_transport)
        << "[rank " << world_rank() << "] transport (launcher " << origin.launcher << ")";
  }
  if (expect_rendezvous != nullptr) {
    EXPECT_EQ(origin.rendezvous, expect_rendezvous)
        << "[rank " << world_rank() << "] rendezvous (launcher " << origin.launcher << ")";
  }
}

TEST(Basics, InitTwiceIsANoOp) {
  init();  // collective, but a no-op while running: must not deadlock or restart
  EXPECT_TRUE(is_initialized());
  expect_allreduce_works("basics.after_second_init");
}

}  // namespace
}  // namespace concord::mpitest
