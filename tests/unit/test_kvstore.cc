// KVStore (src/kvstore/kvstore.h) on in-process ranks: every design (funneled, concurrent,
// depchain) at 1..5 ranks, running the scenarios of tests/test_support/kvstore_scenarios.h:
// gradients computed by engine ops that finish in a different random order on every rank,
// init broadcasting rank 0's value, every dtype, and misuse (keys in different orders,
// unknown keys, mismatched shapes, double init) reported on every rank without a hang.
#include <gtest/gtest.h>

#include "kvstore/key_check.h"
#include "rank_runner.h"
#include "test_support/kvstore_scenarios.h"

namespace concord::kvstore {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::run_ranks;

struct Case {
  KVStoreType type;
  int P;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return cat(kvstore_type_name(info.param.type), "_P", info.param.P);
}

// Runs scenario(world, type) on P in-process ranks; "" when no rank threw.
std::string run_scenario(const Case& c, void (*scenario)(Communicator&, KVStoreType)) {
  return run_ranks(c.P, [&](Communicator& comm, const AbortFlag&) { scenario(comm, c.type); });
}

class KVStoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(KVStoreTest, InitTakesRank0Value) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::init_takes_rank0_value), "");
}
TEST_P(KVStoreTest, PushSumsGradientsReadyInRandomOrder) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::push_sums_gradients_ready_in_random_order), "");
}
TEST_P(KVStoreTest, PushPullAveragesInPlace) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::pushpull_averages_in_place), "");
}

INSTANTIATE_TEST_SUITE_P(
    Designs, KVStoreTest,
    ::testing::Values(Case{KVStoreType::kFunneled, 1}, Case{KVStoreType::kFunneled, 2}, Case{KVStoreType::kFunneled, 3},
                      Case{KVStoreType::kFunneled, 5}, Case{KVStoreType::kConcurrent, 1},
                      Case{KVStoreType::kConcurrent, 2}, Case{KVStoreType::kConcurrent, 4},
                      Case{KVStoreType::kConcurrent, 5}, Case{KVStoreType::kDepChain, 1},
                      Case{KVStoreType::kDepChain, 2}, Case{KVStoreType::kDepChain, 3},
                      Case{KVStoreType::kDepChain, 5}),
    case_name);

class KVStoreErrorTest : public ::testing::TestWithParam<Case> {};

TEST_P(KVStoreErrorTest, KeysInDifferentOrderFailOnEveryRank) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::keys_in_different_order_fail_on_every_rank), "");
}
TEST_P(KVStoreErrorTest, UnknownKeyAndWrongShapeFailOnEveryRank) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::unknown_key_and_wrong_shape_fail_on_every_rank), "");
}
TEST_P(KVStoreErrorTest, InitMismatchAndDoubleInitFailOnEveryRank) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::init_mismatch_and_double_init_fail_on_every_rank), "");
}

INSTANTIATE_TEST_SUITE_P(Designs, KVStoreErrorTest,
                         ::testing::Values(Case{KVStoreType::kFunneled, 2}, Case{KVStoreType::kFunneled, 3},
                                           Case{KVStoreType::kConcurrent, 2}, Case{KVStoreType::kConcurrent, 3},
                                           Case{KVStoreType::kDepChain, 2}, Case{KVStoreType::kDepChain, 4}),
                         case_name);

TEST(KVStoreConcurrent, OrderMattersOnlyPerCommunicator) {
  EXPECT_EQ(run_ranks(3, [](Communicator& comm, const AbortFlag&) {
              scenarios::concurrent_order_matters_only_per_communicator(comm);
            }),
            "");
}

TEST(KVStoreType, NamesRoundTrip) {
  for (auto type : {KVStoreType::kFunneled, KVStoreType::kConcurrent, KVStoreType::kDepChain})
    EXPECT_EQ(kvstore_type_from_name(kvstore_type_name(type)), type);
  EXPECT_THROW(kvstore_type_from_name("nccl"), InvalidArgument);
}

// The verdict message names both ranks' requests and what differed.
TEST(KeyCheck, VerdictNamesKeysRanksAndDifference) {
  Verdict verdict;
  verdict.bad_rank = 2;
  verdict.root = KeyHeader::describe(4, KeyOperation::kPush, DataType::kFloat32, {2, 3}, ReduceOp::kSum);
  verdict.bad = KeyHeader::describe(4, KeyOperation::kPush, DataType::kFloat16, {6}, ReduceOp::kSum);
  const std::string message = describe_verdict(verdict);
  for (const char* part : {"rank 0", "rank 2", "key 4", "float32 [2, 3]", "float16 [6]", "dtype and shape differ"})
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
  EXPECT_THROW(throw_if_bad(verdict), MismatchError);
  verdict.bad.set_problem(KeyProblem::kUnknownKey, "key 4 was never initialised on it");
  EXPECT_THROW(throw_if_bad(verdict), InvalidArgument);
  verdict.bad_rank = -1;
  EXPECT_EQ(describe_verdict(verdict), "");
  EXPECT_NO_THROW(throw_if_bad(verdict));
}

}  // namespace
}  // namespace concord::kvstore
