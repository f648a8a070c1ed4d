// Pure rank arithmetic of balanced binary trees over ranks 0..P-1 (no communication), as
// used by the pipelined tree and double binary tree allreduce (algorithms/allreduce_tree.h,
// allreduce_double_tree.h) and by the simulator.
//
// Binary tree (NCCL's in-order "btree"; Sanders, Speck & Traeff, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan", Parallel Computing 2009): rank 0 is the
// root with one child, the largest power of two below P. For rank r > 0 with lowest set
// bit b: parent (r XOR b) | 2b, or r XOR b when that is >= P; children r - b/2 and r + b/2,
// where r + b/2 is replaced by r + b/4, r + b/8, ... while it is >= P. Odd ranks are
// leaves. Height (edges from root to the deepest leaf) ceil(log2 P).
//   P=8: 0->4; 4->2,6; 2->1,3; 6->5,7.
//
// Double binary tree (NCCL): tree 0 is the binary tree; tree 1 is its mirror image
// (r -> P-1-r) when P is even, and the binary tree shifted by one (r -> r+1 mod P) when P
// is odd. Inner nodes of tree 0 are even ranks; those of tree 1 are odd ranks (plus rank 0
// when P is odd, which is thus inner in both trees: NCCL's layout). So every other rank is
// a leaf in at least one tree and inner in at most one, which balances the traffic when
// each tree carries half of the data.
//   P=8, tree 1: 7->3; 3->5,1; 1->2,0; 5->6,4.
#pragma once

#include <array>

namespace concord::patterns {

/// One rank's place in a tree: its parent (-1 at the root) and up to two children (-1 when
/// absent; children[0] is filled first). Reductions combine own, children[0], children[1]
/// in that order.
struct TreeNode {
  int parent = -1;
  std::array<int, 2> children = {-1, -1};

  constexpr int child_count() const { return (children[0] >= 0) + (children[1] >= 0); }
  constexpr bool is_root() const { return parent < 0; }
  constexpr bool is_leaf() const { return child_count() == 0; }
};

/// `rank`'s node in the in-order binary tree over `size` ranks (header comment). Requires
/// 0 <= rank < size.
constexpr TreeNode binary_tree(int rank, int size) {
  TreeNode node;
  if (rank == 0) {
    int top = 1;  // largest power of two below size
    while (2 * top < size) top *= 2;
    if (size > 1) node.children[0] = top;
    return node;
  }
  const int b = rank & -rank;  // lowest set bit
  node.parent = (rank ^ b) | (2 * b);
  if (node.parent >= size) node.parent = rank ^ b;
  if (b > 1) {
    node.children[0] = rank - b / 2;
    int step = b / 2;
    while (step > 0 && rank + step >= size) step /= 2;
    if (step > 0) node.children[1] = rank + step;
  }
  return node;
}

/// `rank`'s node in tree `index` (0 or 1) of the double binary tree over `size` ranks.
constexpr TreeNode double_binary_tree(int rank, int size, int index) {
  if (index == 0) return binary_tree(rank, size);
  // Tree 1 relabels tree 0: rank r plays the role of `role(r)` and every neighbour n of
  // that role maps back to rank `back(n)`. Mirror and shift-by-one are both bijections.
  const bool mirror = size % 2 == 0;
  const auto role = [&](int r) { return mirror ? size - 1 - r : (r + size - 1) % size; };
  const auto back = [&](int n) { return n < 0 ? -1 : (mirror ? size - 1 - n : (n + 1) % size); };
  const TreeNode base = binary_tree(role(rank), size);
  TreeNode node;
  node.parent = back(base.parent);
  node.children = {back(base.children[0]), back(base.children[1])};
  return node;
}

/// The root of tree `index` of the double binary tree: 0 for tree 0; P-1 (mirror) or 1
/// (shift) for tree 1; 0 when size is 1.
constexpr int double_binary_tree_root(int size, int index) {
  if (index == 0 || size == 1) return 0;
  return size % 2 == 0 ? size - 1 : 1;
}

/// Number of edges from `rank` up to the root in tree `index` of the double binary tree
/// (tree 0 is the binary tree).
constexpr int tree_depth(int rank, int size, int index = 0) {
  int depth = 0;
  for (int r = rank; !double_binary_tree(r, size, index).is_root(); r = double_binary_tree(r, size, index).parent)
    ++depth;
  return depth;
}

/// Height of the binary tree over `size` ranks: the largest depth, ceil(log2 size). Tree 1
/// of the double binary tree is a relabelling and has the same height.
constexpr int tree_height(int size) {
  int height = 0;
  while ((1 << height) < size) ++height;
  return height;
}

}  // namespace concord::patterns
