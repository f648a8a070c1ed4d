// Pure rank arithmetic (src/patterns/): the ring schedule and segmentation, and the binomial
// tree, checked for every world size 1..16 without any communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <queue>
#include <vector>

#include "patterns/binomial_tree.h"
#include "patterns/cross.h"
#include "patterns/ring.h"
#include "test_support/dtype_util.h"

namespace concord::patterns {
namespace {

class RingPattern : public ::testing::TestWithParam<int> {};

// What rank r sends at a step is what its right neighbour receives at that step.
TEST_P(RingPattern, EverySendMatchesTheNeighboursReceive) {
  const int P = GetParam();
  for (int r = 0; r < P; ++r) {
    const Ring ring{r, P};
    const Ring right{ring.right(), P};
    EXPECT_EQ(ring.steps(), P - 1);
    EXPECT_EQ(ring.right(), (r + 1) % P) << "P=" << P << " rank " << r;
    EXPECT_EQ(right.left(), r) << "P=" << P << " rank " << r;
    for (int s = 0; s < ring.steps(); ++s) {
      SCOPED_TRACE(::testing::Message() << "P=" << P << " rank " << r << " step " << s);
      EXPECT_EQ(ring.reduce_scatter_send(s), right.reduce_scatter_recv(s));
      EXPECT_EQ(ring.allgather_send(s), right.allgather_recv(s));
      EXPECT_EQ(ring.gather_send(s), right.gather_recv(s));
      // A rank never receives into the segment it sends at the same step.
      EXPECT_NE(ring.reduce_scatter_send(s), ring.reduce_scatter_recv(s));
      EXPECT_NE(ring.allgather_send(s), ring.allgather_recv(s));
      // Pipelining: the segment received at step s is the one sent at step s + 1.
      if (s + 1 < ring.steps()) {
        EXPECT_EQ(ring.reduce_scatter_recv(s), ring.reduce_scatter_send(s + 1));
        EXPECT_EQ(ring.allgather_recv(s), ring.allgather_send(s + 1));
        EXPECT_EQ(ring.gather_recv(s), ring.gather_send(s + 1));
      }
    }
  }
}

// Simulates the ring allreduce on sets of contributions (bit r = rank r's input): every
// reduction adds disjoint contributions (nothing reduced twice), after the reduce-scatter
// each rank's owned segment holds every rank's contribution, and after the allgather every
// rank holds every segment complete.
TEST_P(RingPattern, ReduceScatterThenAllgatherSimulation) {
  const int P = GetParam();
  const uint32_t everyone = (P == 32) ? ~0u : (1u << P) - 1;
  std::vector<std::vector<uint32_t>> held(P, std::vector<uint32_t>(P));
  for (int r = 0; r < P; ++r)
    for (int seg = 0; seg < P; ++seg) held[r][seg] = 1u << r;
  for (int s = 0; s < P - 1; ++s) {
    const auto before = held;  // all messages of a step carry values from before the step
    for (int r = 0; r < P; ++r) {
      const Ring ring{r, P};
      const int seg = ring.reduce_scatter_send(s);
      const int to = ring.right();
      ASSERT_EQ(held[to][seg] & before[r][seg], 0u)
          << "P=" << P << " step " << s << ": segment " << seg << " reduced twice at rank " << to;
      held[to][seg] |= before[r][seg];
    }
  }
  for (int r = 0; r < P; ++r) EXPECT_EQ(held[r][(Ring{r, P}.owned_segment())], everyone) << "P=" << P << " rank " << r;

  std::vector<std::vector<bool>> complete(P, std::vector<bool>(P, false));
  for (int r = 0; r < P; ++r) complete[r][Ring{r, P}.owned_segment()] = true;
  for (int s = 0; s < P - 1; ++s) {
    const auto before = complete;
    for (int r = 0; r < P; ++r) {
      const Ring ring{r, P};
      const int seg = ring.allgather_send(s);
      ASSERT_TRUE(before[r][seg]) << "P=" << P << " rank " << r << " sends incomplete segment " << seg;
      ASSERT_FALSE(complete[ring.right()][seg]) << "P=" << P << " segment " << seg << " received twice";
      complete[ring.right()][seg] = true;
    }
  }
  for (int r = 0; r < P; ++r)
    for (int seg = 0; seg < P; ++seg) EXPECT_TRUE(complete[r][seg]) << "P=" << P << " rank " << r << " seg " << seg;
}

// The plain allgather: rank r starts with block r, forwards only blocks it has, ends with all.
TEST_P(RingPattern, GatherSimulation) {
  const int P = GetParam();
  std::vector<std::vector<bool>> has(P, std::vector<bool>(P, false));
  for (int r = 0; r < P; ++r) has[r][r] = true;
  for (int s = 0; s < P - 1; ++s) {
    const auto before = has;
    for (int r = 0; r < P; ++r) {
      const Ring ring{r, P};
      ASSERT_TRUE(before[r][ring.gather_send(s)]) << "P=" << P << " rank " << r << " step " << s;
      ASSERT_FALSE(has[ring.right()][ring.gather_send(s)]) << "P=" << P << " duplicate delivery";
      has[ring.right()][ring.gather_send(s)] = true;
    }
  }
  for (int r = 0; r < P; ++r)
    for (int b = 0; b < P; ++b) EXPECT_TRUE(has[r][b]) << "P=" << P << " rank " << r << " block " << b;
}

TEST_P(RingPattern, SegmentsTileTheBufferForManyLengths) {
  const int P = GetParam();
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 40; ++n) lengths.push_back(n);
  for (size_t n : {size_t{1000}, size_t{1023}, size_t{100003}, size_t{1} << 33}) lengths.push_back(n);
  for (size_t n : lengths) {
    size_t end = 0;
    for (int i = 0; i < P; ++i) {
      const Segment seg = segment(n, P, i);
      ASSERT_EQ(seg.offset, end) << "P=" << P << " n=" << n << " segment " << i << ": gap or overlap";
      EXPECT_TRUE(seg.count == n / P || seg.count == n / P + 1) << "P=" << P << " n=" << n << " segment " << i;
      if (i > 0) {
        EXPECT_LE(seg.count, segment(n, P, i - 1).count) << "larger segments come first";
      }
      end += seg.count;
    }
    EXPECT_EQ(end, n) << "P=" << P << " n=" << n;
    EXPECT_EQ(segment(n, P, 0).count, (n + P - 1) / P) << "segment 0 is the largest";
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes1To16, RingPattern, ::testing::Range(1, 17),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

TEST(RingArithmetic, ModIsNonNegative) {
  EXPECT_EQ(mod(-1, 5), 4);
  EXPECT_EQ(mod(-5, 5), 0);
  EXPECT_EQ(mod(-16, 5), 4);
  EXPECT_EQ(mod(7, 5), 2);
  EXPECT_EQ(mod(0, 1), 0);
  EXPECT_EQ(mod(int64_t{-1} << 40, 3), static_cast<int>(((-(int64_t{1} << 40)) % 3 + 3) % 3));
}

// ---------------------------------------------------------------------------------------

class BinomialTreePattern : public ::testing::TestWithParam<int> {};

int ceil_log2(int P) {
  int k = 0;
  while ((1 << k) < P) ++k;
  return k;
}

TEST_P(BinomialTreePattern, EveryRootGivesASpanningTreeOfBoundedDepth) {
  const int P = GetParam();
  for (int root = 0; root < P; ++root) {
    SCOPED_TRACE(::testing::Message() << "P=" << P << " root " << root);
    std::vector<std::vector<int>> children(P);
    int edges = 0;
    for (int r = 0; r < P; ++r) {
      const BinomialTree tree{r, P, root};
      children[r] = tree.children();
      edges += static_cast<int>(children[r].size());
      if (r == root) {
        EXPECT_EQ(tree.parent(), -1);
        continue;
      }
      const int parent = tree.parent();
      ASSERT_GE(parent, 0) << "rank " << r;
      ASSERT_LT(parent, P) << "rank " << r;
      EXPECT_NE(parent, r);
      const auto siblings = BinomialTree{parent, P, root}.children();
      EXPECT_EQ(std::count(siblings.begin(), siblings.end(), r), 1)
          << "rank " << r << " not listed once by its parent " << parent;
    }
    EXPECT_EQ(edges, P - 1) << "a tree on P ranks has P - 1 edges";
    for (int r = 0; r < P; ++r)
      for (int c : children[r]) EXPECT_EQ((BinomialTree{c, P, root}.parent()), r) << "child " << c << " of " << r;

    // Broadcast schedule: a rank sends to its children one per round in list order, starting
    // the round after it received. Every rank is reached, within ceil(log2 P) rounds.
    std::vector<int> round(P, -1);
    round[root] = 0;
    std::queue<int> frontier;
    frontier.push(root);
    while (!frontier.empty()) {
      const int r = frontier.front();
      frontier.pop();
      for (size_t i = 0; i < children[r].size(); ++i) {
        const int c = children[r][i];
        ASSERT_EQ(round[c], -1) << "rank " << c << " reached twice";
        round[c] = round[r] + static_cast<int>(i) + 1;
        frontier.push(c);
      }
    }
    for (int r = 0; r < P; ++r) {
      EXPECT_GE(round[r], 0) << "rank " << r << " not reached";
      EXPECT_LE(round[r], ceil_log2(P)) << "rank " << r << " reached after too many rounds";
    }
  }
}

TEST(BinomialTreeShape, EightRanksRootZero) {
  EXPECT_EQ((BinomialTree{0, 8, 0}.children()), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ((BinomialTree{4, 8, 0}.children()), (std::vector<int>{6, 5}));
  EXPECT_EQ((BinomialTree{6, 8, 0}.children()), (std::vector<int>{7}));
  EXPECT_EQ((BinomialTree{7, 8, 0}.parent()), 6);
  EXPECT_EQ((BinomialTree{5, 8, 0}.parent()), 4);
  // Rotated: root 3 on 5 ranks is virtual rank 0.
  EXPECT_EQ((BinomialTree{3, 5, 3}.children()), (std::vector<int>{2, 0, 4}));
}

INSTANTIATE_TEST_SUITE_P(Sizes1To16, BinomialTreePattern, ::testing::Range(1, 17),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

// Cross communicator (ranks with the same local rank): 2 nodes of 3 ranks, interleaved
// placement, and an uneven 3 + 1 placement.
TEST(CrossPattern, PositionsFollowLocalRanks) {
  const std::vector<int> blocked{0, 0, 0, 1, 1, 1};
  for (int r = 0; r < 6; ++r) {
    CrossPosition p = cross_position(blocked, r);
    EXPECT_EQ(p.rank, r / 3) << "rank " << r;
    EXPECT_EQ(p.size, 2) << "rank " << r;
  }
  const std::vector<int> interleaved{5, 9, 5, 9};
  for (int r = 0; r < 4; ++r) {
    CrossPosition p = cross_position(interleaved, r);
    EXPECT_EQ(p.rank, r % 2) << "rank " << r;
    EXPECT_EQ(p.size, 2) << "rank " << r;
  }
  const std::vector<int> uneven{0, 0, 0, 1};
  EXPECT_EQ(cross_position(uneven, 3).rank, 1);
  EXPECT_EQ(cross_position(uneven, 3).size, 2);
  EXPECT_EQ(cross_position(uneven, 2).rank, 0);
  EXPECT_EQ(cross_position(uneven, 2).size, 1);
  EXPECT_EQ(cross_position({0}, 0).size, 1);
}

}  // namespace
}  // namespace concord::patterns
