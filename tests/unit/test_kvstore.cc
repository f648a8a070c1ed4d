// KVStore (src/kvstore/kvstore.h) on in-process ranks: every design (funneled, concurrent,
// depchain) at 1..5 ranks, running the scenarios of tests/test_support/kvstore_scenarios.h:
// gradients computed by engine ops that finish in a different random order on every rank,
// init broadcasting rank 0's value, every dtype, and misuse (keys in different orders,
// unknown keys, mismatched shapes, double init, a failed gradient op) reported on every
// rank without a hang.
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

TEST_P(KVStoreTest, InitTakesRank0Value) { EXPECT_EQ(run_scenario(GetParam(), scenarios::init_takes_rank0_value), ""); }
TEST_P(KVStoreTest, PushSumsGradientsReadyInRandomOrder) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::push_sums_gradients_ready_in_random_order), "");
}
TEST_P(KVStoreTest, PushPullAveragesInPlace) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::pushpull_averages_in_place), "");
}

INSTANTIATE_TEST_SUITE_P(Designs, KVStoreTest,
                         ::testing::Values(Case{KVStoreType::kFunneled, 1}, Case{KVStoreType::kFunneled, 2},
                                           Case{KVStoreType::kFunneled, 3}, Case{KVStoreType::kFunneled, 5},
                                           Case{KVStoreType::kConcurrent, 1}, Case{KVStoreType::kConcurrent, 2},
                                           Case{KVStoreType::kConcurrent, 4}, Case{KVStoreType::kConcurrent, 5},
                                           Case{KVStoreType::kDepChain, 1}, Case{KVStoreType::kDepChain, 2},
                                           Case{KVStoreType::kDepChain, 3}, Case{KVStoreType::kDepChain, 5}),
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

TEST_P(KVStoreErrorTest, FailedGradientOpFailsOnEveryRankAndOthersReduce) {
  EXPECT_EQ(run_scenario(GetParam(), scenarios::failed_gradient_op_fails_on_every_rank), "");
}

INSTANTIATE_TEST_SUITE_P(Designs, KVStoreErrorTest,
                         ::testing::Values(Case{KVStoreType::kFunneled, 2}, Case{KVStoreType::kFunneled, 3},
                                           Case{KVStoreType::kConcurrent, 2}, Case{KVStoreType::kConcurrent, 3},
                                           Case{KVStoreType::kConcurrent, 4}, Case{KVStoreType::kDepChain, 2},
                                           Case{KVStoreType::kDepChain, 3}, Case{KVStoreType::kDepChain, 4}),
                         case_name);

TEST(KVStoreConcurrent, OrderMattersOnlyPerCommunicator) {
  EXPECT_EQ(run_ranks(3, [](Communicator& comm,
                            const AbortFlag&) { scenarios::concurrent_order_matters_only_per_communicator(comm); }),
            "");
}

// Funneled: the gradient op of the last rank fails; every rank gets an InvalidArgument naming
// that rank and the failure (nobody waits for the missing rank), then the store works.
TEST(KVStoreFunneled, FailedGradientOpFailsOnEveryRank) {
  for (int P : {2, 3}) {
    const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag&) {
      engine::Engine engine(2, 1);
      KVStore kv(engine, comm, scenarios::options_for(KVStoreType::kFunneled));
      const std::string label = cat("rank ", comm.rank(), " funneled P=", P);
      std::vector<float> grad(6, 1.0f);
      const TensorView g{grad.data(), DataType::kFloat32, {6}};
      kv.init(0, g);
      kv.init(3, g);
      engine::Var* grad_var = engine.new_var();
      const bool culprit = comm.rank() == P - 1;
      engine.push_sync(
          [culprit] {
            if (culprit) throw std::runtime_error("out of memory in layer 3");
          },
          {}, {grad_var});
      std::map<int, std::string> errors;
      try {
        kv.push(0, g, grad_var);
      } catch (const Error& e) {
        errors[0] = scenarios::describe(e);
      }
      scenarios::expect_error(errors, 0, "InvalidArgument",
                              {cat("rank ", P - 1), "key 0", "gradient failed", "out of memory in layer 3"}, label);
      scenarios::expect_store_works(kv, label);
    });
    EXPECT_EQ(error, "") << "P=" << P;
  }
}

// KeyCheck's traffic is what its header says: P-1 headers to rank 0 and P-1 verdicts back,
// and every rank ends with the same verdict.
TEST(KeyCheck, TrafficAndVerdictAsDocumented) {
  for (int P : {1, 2, 5, 16}) {
    for (int odd_rank : {-1, P - 1}) {
      std::vector<TrafficCounters> counters(P);
      std::vector<Verdict> verdicts(P);
      const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
        const int key = comm.rank() == odd_rank && P > 1 ? 8 : 7;
        KeyCheck check(comm, KeyHeader::describe(key, KeyOperation::kPush, DataType::kInt8, {3}, ReduceOp::kMax));
        testing_util::drive(check, aborted);
        counters[comm.rank()] = comm.counters();
        verdicts[comm.rank()] = check.verdict();
      });
      ASSERT_EQ(error, "") << "P=" << P;
      uint64_t messages = 0, bytes = 0;
      for (const auto& c : counters) messages += c.messages_sent, bytes += c.bytes_sent;
      EXPECT_EQ(messages, 2u * (P - 1)) << "P=" << P;
      EXPECT_EQ(bytes, (P - 1) * (sizeof(KeyHeader) + sizeof(Verdict))) << "P=" << P;
      EXPECT_EQ(sizeof(KeyHeader), 224u) << "kvstore.h and docs/architecture.md give the size";
      EXPECT_EQ(sizeof(Verdict), 520u) << "kvstore.h and docs/architecture.md give the size";
      const int expected_bad = P > 1 ? odd_rank : -1;
      for (int r = 0; r < P; ++r) {
        EXPECT_EQ(verdicts[r].bad_rank, expected_bad) << "rank " << r << " P=" << P;
        EXPECT_EQ(verdicts[r].num_bad, expected_bad < 0 ? 0 : 1) << "rank " << r << " P=" << P;
        EXPECT_EQ(describe_verdict(verdicts[r]), describe_verdict(verdicts[0])) << "rank " << r << " P=" << P;
      }
    }
  }
}

// Concurrent: the push that completes a window of `outstanding` pushes returns only once all
// of them are done (each key's var has one more completed write), bounding those in flight.
TEST(KVStoreConcurrent, WindowOfOutstandingPushesCompletesBeforePushReturns) {
  const std::string error = run_ranks(2, [](Communicator& comm, const AbortFlag&) {
    engine::Engine engine(2, 1);
    KVStoreOptions options = scenarios::options_for(KVStoreType::kConcurrent);
    options.outstanding = 4;
    KVStore kv(engine, comm, options);
    std::vector<float> grad(1000, 1.0f);
    const TensorView g{grad.data(), DataType::kFloat32, {1000}};
    for (int key = 0; key < 4; ++key) kv.init(key, g);
    for (int round = 1; round <= 2; ++round) {
      for (int key = 0; key < 4; ++key) kv.push(key, g);
      for (int key = 0; key < 4; ++key)
        EXPECT_EQ(engine.version(kv.var(key)), static_cast<uint64_t>(round))
            << "rank " << comm.rank() << " key " << key << " round " << round << ": push returned before the window";
    }
  });
  EXPECT_EQ(error, "");
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
  EXPECT_EQ(message.find("ranks in all"), std::string::npos) << "one bad rank needs no list: " << message;
  verdict.num_bad = 3;
  verdict.listed[0] = 2, verdict.listed[1] = 5, verdict.listed[2] = 9;
  const std::string listed = describe_verdict(verdict);
  EXPECT_NE(listed.find("3 ranks in all cannot take part or differ from rank 0: ranks 2, 5, 9"), std::string::npos)
      << listed;
  verdict.bad.set_problem(KeyProblem::kUnknownKey, "key 4 was never initialised on it");
  EXPECT_THROW(throw_if_bad(verdict), InvalidArgument);
  verdict.bad_rank = -1;
  EXPECT_EQ(describe_verdict(verdict), "");
  EXPECT_NO_THROW(throw_if_bad(verdict));
}

}  // namespace
}  // namespace concord::kvstore
