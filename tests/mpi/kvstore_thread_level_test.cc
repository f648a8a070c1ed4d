// The KVStore's MPI thread-level check (kvstore/kvstore_world.h) under mpirun: MPI is
// initialised here with MPI_THREAD_SERIALIZED only, as an application might. The concurrent
// and depchain designs call MPI from two threads and must refuse with a StateError naming
// MPI_THREAD_MULTIPLE (instead of corrupting MPI's state); funneled, which calls MPI from
// the calling thread only, must work. Exits 77 (skipped) where MPI provides more than asked.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "concord/errors.h"
#include "engine/engine.h"
#include "kvstore/kvstore_world.h"

namespace concord::kvstore {
namespace {

TEST(KVStoreThreadLevel, MultiThreadedDesignsRefuseSerializedMpi) {
  for (auto type : {KVStoreType::kConcurrent, KVStoreType::kDepChain}) {
    try {
      make_world(type);
      ADD_FAILURE() << kvstore_type_name(type) << ": accepted MPI_THREAD_SERIALIZED";
    } catch (const StateError& e) {
      EXPECT_NE(std::string(e.what()).find("MPI_THREAD_MULTIPLE"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(kvstore_type_name(type)), std::string::npos) << e.what();
    }
  }
}

TEST(KVStoreThreadLevel, FunneledWorksWithSerializedMpi) {
  auto world = make_world(KVStoreType::kFunneled);
  engine::Engine engine(1, 1);
  KVStore kv(engine, *world, {});
  std::vector<int64_t> value(10, world->rank() + 1);
  const TensorView view{value.data(), DataType::kInt64, {10}};
  kv.init(0, view);
  kv.pushpull(0, view, view);
  const int64_t P = world->size();
  for (size_t i = 0; i < value.size(); ++i)
    EXPECT_EQ(value[i], P * (P + 1) / 2) << "rank " << world->rank() << " funneled P=" << P << " element " << i;
}

}  // namespace
}  // namespace concord::kvstore

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided >= MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("skipped: MPI provides MPI_THREAD_MULTIPLE when asked for SERIALIZED\n");
    MPI_Finalize();
    return 77;
  }
  if (rank != 0)
    ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  const int failed = RUN_ALL_TESTS();
  MPI_Finalize();
  return failed;
}
