// Message schedules of the allreduce algorithms, generated from the same rank arithmetic the
// algorithms run (src/patterns/): who sends which bytes to whom, after which receives, and
// how many bytes each receive reduces. Each generator mirrors its algorithm's code message
// for message, so Schedule::traffic() equals the algorithm's Cost counts (tests/unit/
// test_sim_schedules.cc checks that).
//
// Generators work on a Group: a subset of the world's ranks (member i is world rank
// ranks[i]) whose members may each have to wait for one operation before they start (how the
// hierarchical schedule chains its phases). They return, per member, the operation after
// which that member holds its result.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/cost_model.h"
#include "sim/schedule.h"

namespace concord::sim {

struct Group {
  std::vector<int> ranks;   ///< world rank of each member
  std::vector<OpId> ready;  ///< per member, what it waits for before starting (kNoOp: none)

  /// Ranks 0..size-1, nothing to wait for.
  static Group world(int size);
  int size() const { return static_cast<int>(ranks.size()); }
};

/// Parent (-1 at the root) and children of one member of a tree over a group, in the order
/// its algorithm serves them.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};
/// Maps a member index (0..size-1) to its links in the tree.
using TreeShape = std::function<TreeLinks(int member)>;

/// Ring allreduce (AllreduceRing): 2(P-1) steps of C chunks per segment, chunk c of step g+1
/// sent once chunk c of step g has arrived (and been reduced during the reduce-scatter).
/// `count` elements of `element_size` bytes; C from `chunk_bytes` as in the algorithm.
std::vector<OpId> append_ring_allreduce(Schedule& schedule, const Group& group, size_t count, size_t element_size,
                                        size_t chunk_bytes);

/// Tree reduce of `count` elements to the root in `chunks` pipelined chunks (patterns::
/// segment of the buffer): a member sends chunk c up once it has received (and reduced)
/// chunk c from all its children. Returns, per chunk, the join at the root after which that
/// chunk is fully reduced. `window` > 0 models the parent's receives posted `window` chunks
/// ahead (TreePipeline::kWindow; with MPI's rendezvous a large message moves only once its
/// receive is posted): chunk c goes up only after chunk c - window has been reduced there.
std::vector<OpId> append_tree_reduce(Schedule& schedule, const Group& group, const TreeShape& tree, int root,
                                     size_t count, size_t element_size, int chunks, int window = 0);

/// Tree broadcast from the root in `chunks` chunks; chunk c leaves the root after
/// `root_ready[c]` (kNoOp: at once) and is forwarded by each member once received. Returns
/// per member the join after which it holds every chunk; `first_chunk` (when given) gets
/// per member the operation after which it holds chunk 0.
std::vector<OpId> append_tree_broadcast(Schedule& schedule, const Group& group, const TreeShape& tree, int root,
                                        size_t count, size_t element_size, int chunks,
                                        const std::vector<OpId>& root_ready, std::vector<OpId>* first_chunk = nullptr);

/// Number of pipelined chunks of `bytes` bytes at `chunk_bytes` per chunk (at least 1).
int chunk_count(size_t bytes, size_t chunk_bytes);

/// Binomial tree over a group, rooted at member 0 (patterns/binomial_tree.h).
TreeShape binomial_shape(int size);
/// Tree `index` of the double binary tree over a group (patterns/binary_tree.h); index 0 is
/// the plain binary tree.
TreeShape binary_shape(int size, int index);

/// Whole-world schedules of the flat allreduce algorithms for `problem` (ranks, count,
/// element_size, chunk_bytes).
Schedule ring_schedule(const Problem& problem);
/// Whole-vector recursive doubling with the MPICH fold (AllreduceRecursiveDoubling).
Schedule recursive_doubling_schedule(const Problem& problem);
/// Rabenseifner: fold, recursive-halving reduce-scatter, recursive-doubling allgather,
/// unfold (AllreduceHalvingDoubling).
Schedule halving_doubling_schedule(const Problem& problem);
/// Pipelined binary tree (AllreduceTree): reduce all chunks to rank 0, then broadcast them.
Schedule tree_schedule(const Problem& problem);
/// Double binary tree (AllreduceDoubleTree): first half of the buffer on tree 0, second half
/// on tree 1, both pipelined and run concurrently.
Schedule double_tree_schedule(const Problem& problem);
/// A tree allreduce's schedule and, per rank, the operation after which that rank holds
/// the final first chunk of the buffer (tree 0's chunk 0): its gradient turnaround.
struct TreeRun {
  Schedule schedule;
  std::vector<OpId> first_chunk_final;  ///< per rank (empty when P == 1 or count == 0)
};
/// Tree allreduce on `trees` trees (1: AllreducePipelinedTree / AllreduceOverlappedTree;
/// 2: the double binary tree variants, half t of the buffer on tree t). `overlapped`: C-Cube,
/// chunk c leaves the root as soon as the root has reduced it, instead of after every chunk.
TreeRun tree_run(const Problem& problem, int trees, bool overlapped);
/// C-Cube's overlapped binary tree (AllreduceOverlappedTree): tree_run(problem, 1, true).
Schedule overlapped_tree_schedule(const Problem& problem);
/// Overlapped double binary tree (AllreduceOverlappedDoubleTree): tree_run(problem, 2, true).
Schedule overlapped_double_tree_schedule(const Problem& problem);
/// One intra-node phase of the hierarchical schedule, appended on a node's group (root:
/// member 0; members start at once, the root after `root_ready`, kNoOp: at once). Returns
/// the operation after which the phase is done at the root (kNoOp when nothing was sent).
using NodePhase = std::function<OpId(Schedule& schedule, const Group& node, OpId root_ready)>;
/// Hierarchical allreduce (AllreduceHierarchical) on nodes of `ranks_per_node` consecutive
/// ranks, composed of its phases: `reduce` within each node, the allreduce scheduled by
/// `inter` among the nodes' first ranks (a flat schedule on N = nodes ranks, e.g.
/// ring_schedule) once their node's reduce is done, then `broadcast` within each node once
/// its root's inter phase is done.
Schedule hierarchical_schedule(const Problem& problem, int ranks_per_node, const NodePhase& reduce,
                               const std::function<Schedule(const Problem&)>& inter, const NodePhase& broadcast);

/// The chain over a group (patterns/chain.h, root = member 0): member m's parent is m-1.
TreeShape chain_shape(int size);

/// Copies `part` (a schedule over group.size() ranks) into `schedule` on the group's ranks;
/// member m's operations also wait for group.ready[m]. Returns, per member, a join after
/// which it has received everything `part` sends it.
std::vector<OpId> embed(Schedule& schedule, const Schedule& part, const Group& group);

}  // namespace concord::sim
