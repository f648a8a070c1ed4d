// The KVStore's key-check fast path (src/kvstore/key_digest.h) on
// in-process ranks: the digest's truth table; the traffic of a push's key check with and
// without the fast path at 1..16 ranks (the coordinator round is gone: rank 0 sends and
// receives no more than any other rank, log2 P messages of 40 B); and the KVStore scenario
// (tests/test_support/kvstore_scenarios.h) counting full checks vs fast pushes for every
// design, with a shape change on one rank and keys in different orders after caching.
#include <gtest/gtest.h>

#include <algorithm>

#include "kvstore/key_collective.h"
#include "kvstore/key_digest.h"
#include "patterns/recursive_doubling.h"
#include "rank_runner.h"
#include "test_support/kvstore_scenarios.h"

namespace concord::kvstore {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::run_ranks;

KeyHeader push_header(int64_t key, ReduceOp op = ReduceOp::kSum) {
  return KeyHeader::describe(key, KeyOperation::kPush, DataType::kFloat32, {0}, op);
}

// max over ranks, word by word, as the exchange computes it.
KeyDigest reduce(const std::vector<KeyDigest>& digests) {
  KeyDigest result = digests.at(0);
  for (const auto& d : digests)
    for (int w = 0; w < KeyDigest::kWords; ++w) result.words[w] = std::max(result.words[w], d.words[w]);
  return result;
}

TEST(KeyDigest, AgreesOnlyOnSameKeyAndOpWithoutProblems) {
  const KeyHeader a = push_header(5);
  EXPECT_TRUE(reduce({KeyDigest::of(a, true), KeyDigest::of(a, true)}).all_agree());
  EXPECT_FALSE(reduce({KeyDigest::of(a, true), KeyDigest::of(push_header(6), true)}).all_agree()) << "keys differ";
  EXPECT_FALSE(reduce({KeyDigest::of(push_header(-3), true), KeyDigest::of(push_header(3), true)}).all_agree());
  EXPECT_FALSE(reduce({KeyDigest::of(a, true), KeyDigest::of(push_header(5, ReduceOp::kMax), true)}).all_agree())
      << "reduce ops differ";
  EXPECT_FALSE(reduce({KeyDigest::of(a, true), KeyDigest::of(a, false)}).all_agree()) << "key not verified on one";
  KeyHeader failed = a;
  failed.set_problem(KeyProblem::kInputFailed, "boom");
  EXPECT_FALSE(reduce({KeyDigest::of(a, true), KeyDigest::of(failed, true)}).all_agree()) << "a local problem";
  EXPECT_TRUE(KeyDigest::of(push_header(INT32_MIN), true).all_agree()) << "one rank, extreme key";
}

// The check of a zero-element push (no allreduce follows), so the counters hold the key
// check's traffic alone. Returns per-rank counters; `verified` picks the fast path.
std::vector<TrafficCounters> check_traffic(int P, bool verified, int odd_rank, std::string& error) {
  std::vector<TrafficCounters> counters(P);
  error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    CommSlot slot(comm.split(0, comm.rank()), "ring", false, 256, CostParams{});
    const int64_t key = comm.rank() == odd_rank ? 8 : 7;
    KeyCollective collective(slot, push_header(key), nullptr, verified);
    try {
      testing_util::drive(collective, aborted);
      if (odd_rank >= 0 && P > 1) throw std::runtime_error("the odd key passed the check");
    } catch (const MismatchError& e) {
      if (odd_rank < 0 || P == 1) throw;
      if (std::string(e.what()).find(cat("rank ", odd_rank)) == std::string::npos)
        throw std::runtime_error(cat("error does not name rank ", odd_rank, ": ", e.what()));
    }
    counters[comm.rank()] = slot.comm().counters();
    const KeyCheckStats stats = slot.check_stats();
    const bool fast = verified && (odd_rank < 0 || P == 1);
    if (stats.fast != (fast ? 1u : 0u) || stats.full != (fast ? 0u : 1u))
      throw std::runtime_error(cat("stats fast ", stats.fast, " full ", stats.full));
  });
  return counters;
}

class KeyDigestTraffic : public ::testing::TestWithParam<int> {};

TEST_P(KeyDigestTraffic, FastPathHasNoCoordinatorRound) {
  const int P = GetParam();
  std::string error;
  const auto fast = check_traffic(P, true, -1, error);
  ASSERT_EQ(error, "") << "P=" << P << " fast path";
  const auto slow = check_traffic(P, false, -1, error);
  ASSERT_EQ(error, "") << "P=" << P << " unverified";
  const uint64_t rounds = P > 1 ? static_cast<uint64_t>(patterns::log2_pow2(patterns::floor_pow2(P))) : 0;
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(fast[r].bytes_sent, fast[r].messages_sent * sizeof(KeyDigest::words)) << "rank " << r << " P=" << P;
    EXPECT_LE(fast[r].messages_sent, rounds + 1) << "rank " << r << " P=" << P << ": log2 P rounds (+1 fold)";
    EXPECT_EQ(fast[r].bytes_received % sizeof(KeyDigest::words), 0u) << "rank " << r << " P=" << P << ": no header";
  }
  // Before (the KeyCheck through rank 0): rank 0 receives P-1 headers and sends P-1 verdicts.
  EXPECT_EQ(slow[0].bytes_received - fast[0].bytes_received, (P - 1) * sizeof(KeyHeader)) << "P=" << P;
  EXPECT_EQ(slow[0].messages_sent - fast[0].messages_sent, static_cast<uint64_t>(P - 1)) << "P=" << P;
  EXPECT_LE(fast[0].messages_sent, rounds + 1) << "P=" << P << ": rank 0 is no coordinator on the fast path";
}

TEST_P(KeyDigestTraffic, DifferentKeysFallBackToTheFullCheckOnEveryRank) {
  const int P = GetParam();
  std::string error;
  check_traffic(P, true, P - 1, error);
  EXPECT_EQ(error, "") << "P=" << P;
}

INSTANTIATE_TEST_SUITE_P(Ranks, KeyDigestTraffic, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16),
                         [](const ::testing::TestParamInfo<int>& info) { return cat("P", info.param); });

struct Case {
  KVStoreType type;
  int P;
};

class KVStoreKeyCache : public ::testing::TestWithParam<Case> {};

TEST_P(KVStoreKeyCache, CachedKeysSkipTheCoordinatorAndMismatchesStillFail) {
  const Case c = GetParam();
  EXPECT_EQ(run_ranks(c.P, [&](Communicator& comm,
                               const AbortFlag&) { scenarios::cached_keys_skip_the_coordinator(comm, c.type); }),
            "");
}

std::vector<Case> cases() {
  std::vector<Case> result;
  for (auto type : {KVStoreType::kFunneled, KVStoreType::kConcurrent, KVStoreType::kDepChain})
    for (int P : {1, 2, 3, 4, 8, 16}) result.push_back({type, P});
  return result;
}

INSTANTIATE_TEST_SUITE_P(Designs, KVStoreKeyCache, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return cat(kvstore_type_name(info.param.type), "_P", info.param.P);
                         });

}  // namespace
}  // namespace concord::kvstore
