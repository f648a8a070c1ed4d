// Pure rank arithmetic of recursive halving / doubling with the non-power-of-two fold
// (src/patterns/recursive_doubling.h), checked without communication for P = 1..16 and a
// few larger world sizes: the fold pairs and the virtual-rank renumbering, that every send
// of every round is matched by a receive of the same blocks (and so the same size) on the
// partner, and that the halving leaves each virtual rank a distinct block while the doubling
// gives every rank the whole buffer, under both block layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "patterns/recursive_doubling.h"

namespace concord::patterns {
namespace {

class DoublingPattern : public ::testing::TestWithParam<int> {};

TEST(DoublingPatternArithmetic, PowersOfTwo) {
  const int expected_pof2[] = {0, 1, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16};
  for (int n = 1; n <= 16; ++n) EXPECT_EQ(floor_pow2(n), expected_pof2[n]) << "n=" << n;
  EXPECT_EQ(floor_pow2(1000), 512);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(log2_pow2(1 << k), k) << "2^" << k;
}

// The first 2*extra ranks pair up (even folds out to odd), the pof2 others are renumbered
// onto 0..pof2-1 one to one, and real_rank inverts virtual_rank.
TEST_P(DoublingPattern, FoldPairsAndVirtualRanksAreABijection) {
  const int P = GetParam();
  const int pof2 = floor_pow2(P);
  std::set<int> virtual_ranks;
  int folded_out = 0;
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE(::testing::Message() << "P=" << P << " rank " << r);
    const RecursiveDoubling rd{r, P};
    EXPECT_EQ(rd.pof2(), pof2);
    EXPECT_EQ(rd.extra(), P - pof2);
    EXPECT_EQ(1 << rd.rounds(), pof2);
    EXPECT_FALSE(rd.folds_out() && rd.folds_in());
    if (rd.fold_partner() >= 0) {
      const RecursiveDoubling partner{rd.fold_partner(), P};
      EXPECT_EQ(partner.fold_partner(), r);
      EXPECT_NE(partner.folds_out(), rd.folds_out());
    }
    if (rd.folds_out()) {
      ++folded_out;
      EXPECT_EQ(rd.virtual_rank(), -1);
      continue;
    }
    const int v = rd.virtual_rank();
    ASSERT_GE(v, 0);
    ASSERT_LT(v, pof2);
    EXPECT_TRUE(virtual_ranks.insert(v).second) << "virtual rank " << v << " used twice";
    EXPECT_EQ(rd.real_rank(v), r);
  }
  EXPECT_EQ(folded_out, P - pof2);
  EXPECT_EQ(static_cast<int>(virtual_ranks.size()), pof2);
}

// Doubling: partners are mutual and what one sends is what the other receives; the blocks a
// rank holds double every round, ending with all of them.
TEST_P(DoublingPattern, DoublingSendsMatchPartnerReceivesAndGatherEverything) {
  const int P = GetParam();
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling rd{r, P};
    if (rd.folds_out()) continue;
    BlockRange held{rd.virtual_rank(), rd.virtual_rank() + 1};
    for (int k = 0; k < rd.rounds(); ++k) {
      SCOPED_TRACE(::testing::Message() << "P=" << P << " rank " << r << " doubling round " << k);
      const RecursiveDoubling partner{rd.doubling_partner(k), P};
      ASSERT_FALSE(partner.folds_out());
      EXPECT_EQ(partner.doubling_partner(k), r);
      EXPECT_EQ(rd.doubling_send(k), held);
      EXPECT_EQ(rd.doubling_send(k), partner.doubling_recv(k));
      EXPECT_EQ(rd.doubling_recv(k), partner.doubling_send(k));
      // The received blocks adjoin the held ones.
      const BlockRange in = rd.doubling_recv(k);
      EXPECT_TRUE(in.end == held.begin || in.begin == held.end);
      held = {std::min(held.begin, in.begin), std::max(held.end, in.end)};
    }
    EXPECT_EQ(held, (BlockRange{0, rd.pof2()})) << "P=" << P << " rank " << r;
  }
}

// Halving: what a rank sends is what its partner keeps (and vice versa), the kept and sent
// halves split the current range, and after the last round virtual rank v keeps exactly
// block v, so the pof2 ranks own distinct blocks covering the buffer.
TEST_P(DoublingPattern, HalvingSendsMatchPartnerKeepsAndLeaveOneDistinctBlockEach) {
  const int P = GetParam();
  std::set<int> owned;
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling rd{r, P};
    if (rd.folds_out()) continue;
    BlockRange range{0, rd.pof2()};
    for (int k = 0; k < rd.rounds(); ++k) {
      SCOPED_TRACE(::testing::Message() << "P=" << P << " rank " << r << " halving round " << k);
      const RecursiveDoubling partner{rd.halving_partner(k), P};
      ASSERT_FALSE(partner.folds_out());
      EXPECT_EQ(partner.halving_partner(k), r);
      EXPECT_EQ(rd.halving_send(k), partner.halving_keep(k));
      EXPECT_EQ(rd.halving_keep(k), partner.halving_send(k));
      const BlockRange keep = rd.halving_keep(k), send = rd.halving_send(k);
      EXPECT_EQ(keep.size(), range.size() / 2);
      EXPECT_EQ(send.size(), range.size() / 2);
      EXPECT_EQ(std::min(keep.begin, send.begin), range.begin);
      EXPECT_EQ(std::max(keep.end, send.end), range.end);
      EXPECT_TRUE(keep.end == send.begin || send.end == keep.begin);
      range = keep;
    }
    EXPECT_EQ(range, (BlockRange{rd.virtual_rank(), rd.virtual_rank() + 1})) << "P=" << P << " rank " << r;
    owned.insert(range.begin);
  }
  EXPECT_EQ(static_cast<int>(owned.size()), floor_pow2(P));
}

// Both layouts cut [0, count) into pof2 contiguous virtual blocks, so matched block ranges
// have matched element counts; rank_blocks' virtual block v is exactly the union of the
// segments of the real ranks it stands for (and of the rank folded into it).
TEST_P(DoublingPattern, LayoutsCoverTheBufferAndGroupRealBlocks) {
  const int P = GetParam();
  const int pof2 = floor_pow2(P);
  const RecursiveDoubling rd{0, P};
  for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(P - 1), static_cast<size_t>(P + 1), size_t{7},
                       size_t{1023}, size_t{100003}}) {
    SCOPED_TRACE(::testing::Message() << "P=" << P << " count " << count);
    size_t even_next = 0, rank_next = 0;
    for (int v = 0; v < pof2; ++v) {
      const Segment even = even_blocks(count, pof2, {v, v + 1});
      EXPECT_EQ(even.offset, even_next) << "virtual block " << v;
      EXPECT_EQ(even.count, segment(count, pof2, v).count) << "virtual block " << v;
      even_next = even.offset + even.count;
      const Segment group = rank_blocks(count, rd, {v, v + 1});
      EXPECT_EQ(group.offset, rank_next) << "virtual block " << v;
      rank_next = group.offset + group.count;
      // The real ranks of virtual block v: its player and, when folded, the partner.
      const int player = rd.real_rank(v);
      const RecursiveDoubling real{player, P};
      const int first = real.folds_in() ? player - 1 : player;
      EXPECT_EQ(rd.first_real_block(v), first);
      EXPECT_EQ(group.offset, segment(count, P, first).offset) << "virtual block " << v;
      size_t expected = 0;
      for (int q = first; q <= player; ++q) expected += segment(count, P, q).count;
      EXPECT_EQ(group.count, expected) << "virtual block " << v;
    }
    EXPECT_EQ(even_next, count);
    EXPECT_EQ(rank_next, count);
    const Segment all = even_blocks(count, pof2, {0, pof2});
    EXPECT_EQ(all.offset + all.count, count);
    EXPECT_EQ(all.offset, 0u);
    const Segment all_ranks = rank_blocks(count, rd, {0, pof2});
    EXPECT_EQ(all_ranks.count, count);
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, DoublingPattern,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33, 100),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord::patterns
