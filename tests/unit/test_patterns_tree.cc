// Pure rank arithmetic of the binary tree and the double binary tree
// (src/patterns/binary_tree.h), checked for every world size 1..64 without communication.
#include <gtest/gtest.h>

#include <vector>

#include "patterns/binary_tree.h"
#include "test_support/dtype_util.h"

namespace concord::patterns {
namespace {

class BinaryTreePattern : public ::testing::TestWithParam<int> {};

// Checks that tree `index` over P ranks is a tree: one root, parent and child tables agree,
// every rank reaches the root (no cycles), height ceil(log2 P).
void check_tree(int P, int index) {
  SCOPED_TRACE(::testing::Message() << "P=" << P << " tree " << index);
  int roots = 0;
  int max_depth = 0;
  for (int r = 0; r < P; ++r) {
    const TreeNode node = double_binary_tree(r, P, index);
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    if (node.is_root()) {
      ++roots;
      EXPECT_EQ(r, double_binary_tree_root(P, index));
    } else {
      ASSERT_GE(node.parent, 0);
      ASSERT_LT(node.parent, P);
      const TreeNode parent = double_binary_tree(node.parent, P, index);
      EXPECT_TRUE(parent.children[0] == r || parent.children[1] == r)
          << "parent " << node.parent << " does not list me";
    }
    EXPECT_FALSE(node.children[0] < 0 && node.children[1] >= 0) << "children[0] is filled first";
    for (int child : node.children) {
      if (child < 0) continue;
      ASSERT_LT(child, P);
      EXPECT_NE(child, r);
      EXPECT_EQ(double_binary_tree(child, P, index).parent, r) << "child " << child << " names another parent";
    }
    // Walking up ends at the root within P steps (no cycle).
    int depth = 0;
    for (int at = r; !double_binary_tree(at, P, index).is_root(); at = double_binary_tree(at, P, index).parent) {
      ASSERT_LT(++depth, P) << "cycle above rank " << r;
    }
    EXPECT_EQ(depth, tree_depth(r, P, index));
    max_depth = std::max(max_depth, depth);
  }
  EXPECT_EQ(roots, 1);
  EXPECT_EQ(max_depth, tree_height(P)) << "height must be ceil(log2 P)";
  // Every rank is reached from the root through the child tables (the tree spans all).
  std::vector<bool> seen(P, false);
  std::vector<int> stack = {double_binary_tree_root(P, index)};
  int reached = 0;
  while (!stack.empty()) {
    const int r = stack.back();
    stack.pop_back();
    ASSERT_FALSE(seen[r]) << "rank " << r << " reached twice";
    seen[r] = true;
    ++reached;
    for (int child : double_binary_tree(r, P, index).children)
      if (child >= 0) stack.push_back(child);
  }
  EXPECT_EQ(reached, P);
}

TEST_P(BinaryTreePattern, BothTreesSpanAllRanksWithConsistentTables) {
  check_tree(GetParam(), 0);
  check_tree(GetParam(), 1);
}

TEST_P(BinaryTreePattern, BinaryTreeIsInOrderWithOddLeaves) {
  const int P = GetParam();
  for (int r = 0; r < P; ++r) {
    const TreeNode node = binary_tree(r, P);
    if (r % 2 == 1) {
      EXPECT_TRUE(node.is_leaf()) << "P=" << P << " odd rank " << r << " must be a leaf";
    }
    // In-order: the left child is smaller, the right child larger than the node (not the root).
    if (r > 0 && node.children[0] >= 0) {
      EXPECT_LT(node.children[0], r) << "P=" << P << " rank " << r;
    }
    if (node.children[1] >= 0) {
      EXPECT_GT(node.children[1], r) << "P=" << P << " rank " << r;
    }
  }
  if (P > 1) {
    EXPECT_EQ(binary_tree(0, P).child_count(), 1) << "P=" << P << ": the root has one child";
  }
}

TEST_P(BinaryTreePattern, DoubleTreeRanksAreInnerInAtMostOneTree) {
  const int P = GetParam();
  for (int r = 0; r < P; ++r) {
    const bool inner0 = !double_binary_tree(r, P, 0).is_leaf();
    const bool inner1 = !double_binary_tree(r, P, 1).is_leaf();
    // NCCL's shift-by-one for odd P leaves rank 0 (tree 0's root, one child) inner in both.
    if (P > 2 && !(P % 2 == 1 && r == 0)) {
      EXPECT_FALSE(inner0 && inner1) << "P=" << P << " rank " << r << " is inner in both trees";
    }
    if (P % 2 == 1 && r == 0) {
      EXPECT_EQ(double_binary_tree(0, P, 0).child_count(), P > 1 ? 1 : 0);
    }
  }
}

TEST(BinaryTreePatternExamples, EightRanksAsInTheSpec) {
  // tree 0: 0->4; 4->2,6; 2->1,3; 6->5,7
  EXPECT_EQ(binary_tree(0, 8).children[0], 4);
  EXPECT_EQ(binary_tree(4, 8).children, (std::array<int, 2>{2, 6}));
  EXPECT_EQ(binary_tree(2, 8).children, (std::array<int, 2>{1, 3}));
  EXPECT_EQ(binary_tree(6, 8).children, (std::array<int, 2>{5, 7}));
  // tree 1: 7->3; 3->5,1; 1->2,0; 5->6,4
  EXPECT_EQ(double_binary_tree(7, 8, 1).children[0], 3);
  EXPECT_EQ(double_binary_tree(7, 8, 1).parent, -1);
  EXPECT_EQ(double_binary_tree(3, 8, 1).children, (std::array<int, 2>{5, 1}));
  EXPECT_EQ(double_binary_tree(1, 8, 1).children, (std::array<int, 2>{2, 0}));
  EXPECT_EQ(double_binary_tree(5, 8, 1).children, (std::array<int, 2>{6, 4}));
}

TEST(BinaryTreePatternExamples, NonPowerOfTwoRightChildFallsBack) {
  // P=6: 4's right child 6 is out of range, so it takes 5 instead; 5's parent is 4.
  EXPECT_EQ(binary_tree(4, 6).children, (std::array<int, 2>{2, 5}));
  EXPECT_EQ(binary_tree(5, 6).parent, 4);
  // P=3 (odd): tree 1 is tree 0 shifted by one: 1->0->2.
  EXPECT_EQ(double_binary_tree(1, 3, 1).children[0], 0);
  EXPECT_EQ(double_binary_tree(0, 3, 1).children[0], 2);
  EXPECT_EQ(double_binary_tree_root(3, 1), 1);
}

INSTANTIATE_TEST_SUITE_P(Sizes1To64, BinaryTreePattern, ::testing::Range(1, 65),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

}  // namespace
}  // namespace concord::patterns
