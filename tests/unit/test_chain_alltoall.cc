// BroadcastChain and AlltoallPairwise (src/algorithms/) on the in-process multi-rank
// transport (threads as ranks) for P = 1..16: sizes 0, 1, 7, 1023, 100003 bytes, every root
// for the broadcast, default and tiny chunks; the traffic counters must equal the exact
// counts of each algorithm's cost model. Also the pairwise schedule's arithmetic.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/alltoall_pairwise.h"
#include "algorithms/broadcast_chain.h"
#include "cost_check.h"
#include "patterns/chain.h"
#include "patterns/pairwise.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::drive;
using testing_util::expect_counts;
using testing_util::run_ranks;

constexpr size_t kSizes[] = {0, 1, 7, 1023, 100003};
constexpr size_t kGuard = 8;

uint8_t payload(int rank, size_t j) { return static_cast<uint8_t>(rank * 131 + j * 7 + 1); }

// ---------------------------------------------------------------------------------------
// BroadcastChain from every root.

void check_chain(int P, size_t bytes, size_t chunk) {
  for (int root = 0; root < P; ++root) {
    const std::string what =
        testing_util::cat("BroadcastChain P=", P, " bytes=", bytes, " chunk_bytes=", chunk, " root ", root);
    std::vector<std::vector<uint8_t>> buffers(P, std::vector<uint8_t>(bytes + kGuard, 0xEE));
    for (int rank = 0; rank < P; ++rank)
      for (size_t j = 0; j < bytes; ++j)
        buffers[rank][j] = rank == root ? payload(root, j) : static_cast<uint8_t>(rank);
    std::vector<TrafficCounters> counters(P);
    ASSERT_EQ(run_ranks(P,
                        [&](Communicator& comm, const AbortFlag& aborted) {
                          BroadcastChain chain(comm, chunk);
                          chain.start(buffers[comm.rank()].data(), bytes, root);
                          drive(chain, aborted);
                          counters[comm.rank()] = comm.counters();
                        }),
              "")
        << what;
    for (int r = 0; r < P; ++r) {
      for (size_t b = bytes; b < bytes + kGuard; ++b)
        ASSERT_EQ(buffers[r][b], 0xEE) << what << " rank " << r << " wrote past the end";
      long wrong = -1;
      for (size_t j = 0; j < bytes && wrong < 0; ++j)
        if (buffers[r][j] != payload(root, j)) wrong = static_cast<long>(j);
      EXPECT_EQ(wrong, -1) << what << " rank " << r << ": first wrong byte " << wrong;
    }
    Problem problem;
    problem.ranks = P;
    problem.count = bytes;
    problem.element_size = 1;
    problem.chunk_bytes = chunk;
    expect_counts(what, BroadcastChain::cost(problem), counters);
  }
}

class BroadcastChainTest : public ::testing::TestWithParam<int> {};

TEST_P(BroadcastChainTest, EveryRootReachesEveryRankAndTrafficMatchesCost) {
  for (size_t bytes : kSizes) check_chain(GetParam(), bytes, default_chunk_bytes());
}

TEST_P(BroadcastChainTest, SmallChunksPipelineManyMessages) {
  for (size_t bytes : kSizes) check_chain(GetParam(), bytes, 1000);
  check_chain(GetParam(), 1023, 1);
}

INSTANTIATE_TEST_SUITE_P(Sizes1To16, BroadcastChainTest, ::testing::Range(1, 17),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

TEST(ChainPattern, LinksEveryRankOnceFromTheRoot) {
  for (int P = 1; P <= 16; ++P)
    for (int root = 0; root < P; ++root) {
      int at = root, hops = 0;
      EXPECT_EQ((patterns::Chain{root, P, root}.previous()), -1);
      while (patterns::Chain{at, P, root}.next() >= 0) {
        const int next = patterns::Chain{at, P, root}.next();
        EXPECT_EQ((patterns::Chain{next, P, root}.previous()), at) << "P=" << P << " root " << root;
        at = next;
        ASSERT_LT(++hops, P) << "P=" << P << " root " << root << ": chain longer than P";
      }
      EXPECT_EQ(hops, P - 1) << "P=" << P << " root " << root;
    }
}

// ---------------------------------------------------------------------------------------
// AlltoallPairwise.

TEST(PairwisePattern, EveryPairExchangesOnceAndSendsMatchReceives) {
  for (int P = 1; P <= 33; ++P) {
    for (int r = 0; r < P; ++r) {
      const patterns::PairwiseExchange me{r, P};
      std::vector<int> sent(P, 0), received(P, 0);
      for (int s = 1; s <= me.steps(); ++s) {
        const int to = me.send_to(s);
        ASSERT_GE(to, 0);
        ASSERT_LT(to, P);
        ++sent[to];
        ++received[me.receive_from(s)];
        EXPECT_EQ((patterns::PairwiseExchange{to, P}.receive_from(s)), r)
            << "P=" << P << " rank " << r << " step " << s;
      }
      for (int peer = 0; peer < P; ++peer) {
        EXPECT_EQ(sent[peer], peer == r ? 0 : 1) << "P=" << P << " rank " << r << " peer " << peer;
        EXPECT_EQ(received[peer], peer == r ? 0 : 1) << "P=" << P << " rank " << r << " peer " << peer;
      }
    }
  }
}

uint8_t block_byte(int from, int to, size_t j) { return static_cast<uint8_t>(from * 97 + to * 31 + j * 5 + 3); }

void check_alltoall(int P, size_t block) {
  const std::string what = testing_util::cat("AlltoallPairwise P=", P, " block_bytes=", block);
  const size_t total = block * P;
  std::vector<std::vector<uint8_t>> send(P, std::vector<uint8_t>(total)),
      recv(P, std::vector<uint8_t>(total + kGuard, 0xEE));
  for (int r = 0; r < P; ++r)
    for (int to = 0; to < P; ++to)
      for (size_t j = 0; j < block; ++j) send[r][to * block + j] = block_byte(r, to, j);
  std::vector<TrafficCounters> counters(P);
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        AlltoallPairwise alltoall(comm);
                        alltoall.start(send[comm.rank()].data(), recv[comm.rank()].data(), block);
                        drive(alltoall, aborted);
                        counters[comm.rank()] = comm.counters();
                      }),
            "")
      << what;
  for (int r = 0; r < P; ++r) {
    for (size_t b = total; b < total + kGuard; ++b)
      ASSERT_EQ(recv[r][b], 0xEE) << what << " rank " << r << " wrote past the end";
    for (int from = 0; from < P; ++from) {
      long wrong = -1;
      for (size_t j = 0; j < block && wrong < 0; ++j)
        if (recv[r][from * block + j] != block_byte(from, r, j)) wrong = static_cast<long>(j);
      EXPECT_EQ(wrong, -1) << what << " rank " << r << " block from rank " << from << ": first wrong byte " << wrong;
    }
  }
  Problem problem;
  problem.ranks = P;
  problem.count = total;
  problem.element_size = 1;
  expect_counts(what, AlltoallPairwise::cost(problem), counters);
}

class AlltoallPairwiseTest : public ::testing::TestWithParam<int> {};

TEST_P(AlltoallPairwiseTest, EveryBlockArrivesAndTrafficMatchesCost) {
  for (size_t block : kSizes) check_alltoall(GetParam(), block);
}

INSTANTIATE_TEST_SUITE_P(Sizes1To16, AlltoallPairwiseTest, ::testing::Range(1, 17),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

}  // namespace
}  // namespace concord
