// KVStore on MpiCommunicator under mpirun (ctest mpi.kvstore.np1..np4): the scenarios of
// tests/test_support/kvstore_scenarios.h for every design, with Concord's runtime active
// (main.cc calls concord::init), so the store's threads share MPI with the runtime's
// background thread (MPI_THREAD_MULTIPLE, checked by kvstore::make_world).
#include <gtest/gtest.h>

#include "kvstore/kvstore_world.h"
#include "test_support/kvstore_scenarios.h"

namespace concord::kvstore {
namespace {

class KVStoreMpiTest : public ::testing::TestWithParam<KVStoreType> {
 protected:
  // A fresh world communicator per test (collective: every rank runs every test in order).
  std::unique_ptr<Communicator> world() { return make_world(GetParam()); }
};

TEST_P(KVStoreMpiTest, InitTakesRank0Value) { scenarios::init_takes_rank0_value(*world(), GetParam()); }

TEST_P(KVStoreMpiTest, PushSumsGradientsReadyInRandomOrder) {
  scenarios::push_sums_gradients_ready_in_random_order(*world(), GetParam());
}

TEST_P(KVStoreMpiTest, PushPullAveragesInPlace) { scenarios::pushpull_averages_in_place(*world(), GetParam()); }

TEST_P(KVStoreMpiTest, MisuseFailsOnEveryRankAndTheStoreRecovers) {
  auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs two ranks";
  scenarios::keys_in_different_order_fail_on_every_rank(*comm, GetParam());
  scenarios::unknown_key_and_wrong_shape_fail_on_every_rank(*comm, GetParam());
  scenarios::init_mismatch_and_double_init_fail_on_every_rank(*comm, GetParam());
}

// A gradient op failing on one rank (two at np >= 4) is an error for that key on
// every rank, not a hang; the other keys and the next round reduce correctly.
TEST_P(KVStoreMpiTest, FailedGradientOpFailsOnEveryRank) {
  auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs two ranks";
  scenarios::failed_gradient_op_fails_on_every_rank(*comm, GetParam());
}

// Pushes of initialised keys run the digest, not a round through rank 0; a shape
// change on one rank and keys in different orders after caching still fail on every rank.
TEST_P(KVStoreMpiTest, CachedKeysSkipTheCoordinator) {
  scenarios::cached_keys_skip_the_coordinator(*world(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Designs, KVStoreMpiTest,
                         ::testing::Values(KVStoreType::kFunneled, KVStoreType::kConcurrent, KVStoreType::kDepChain),
                         [](const ::testing::TestParamInfo<KVStoreType>& info) {
                           return std::string(kvstore_type_name(info.param));
                         });

TEST(KVStoreMpi, ConcurrentOrderMattersOnlyPerCommunicator) {
  auto comm = make_world(KVStoreType::kConcurrent);
  if (comm->size() < 2) GTEST_SKIP() << "needs two ranks";
  scenarios::concurrent_order_matters_only_per_communicator(*comm);
}

}  // namespace
}  // namespace concord::kvstore
