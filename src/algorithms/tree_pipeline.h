// TreePipeline: the engine of the tree allreduces (AllreducePipelinedTree, AllreduceDoubleTree,
// and C-Cube's AllreduceOverlappedTree / its two-tree variant): reduce up one tree, then
// broadcast down it, both pipelined in chunks, over one contiguous range of elements. Not an
// algorithm of its own; it is driven by one of those.
//
// Reduce phase, chunk by chunk in order: wait for chunk c from every child (received into
// kWindow scratch slots per child), reduce own += children[0], then own += children[1] (a
// fixed order, whatever the arrival order), send chunk c to the parent. The root's data is
// then the reduction over all ranks.
// Broadcast phase, baseline (overlap = false): the root starts once it has reduced every
// chunk and sends each chunk to its children; every other rank, once its sends up have
// completed, receives chunk c from its parent into its data and forwards it to its children.
// Overlapped (overlap = true; C-Cube: Jo, Son & Kim, "Logical/Physical Topology-Aware
// Collective Communication in Deep Learning Training", HPCA 2023): the root sends chunk c
// down as soon as it has reduced it, while later chunks still come up; every other rank
// posts the receive of chunk c from its parent as soon as its send of chunk c up has
// completed (the receive overwrites the bytes that send reads) and forwards chunk c to its
// children as soon as it arrives. Both directions of every tree edge are then busy at once. Same messages, same
// bytes and same reduction order as the baseline: only the moment the broadcast starts moves.
// Each element is reduced along one tree in one order and then copied: bit-identical results.
// Reductions go through the Kernels of the allreduce's context (algorithms/kernels.h), as
// AllreduceRing's do: a chunk is sent up (or, at the root, reported final and sent down)
// only once the kernel that reduced it is done, and a child's receive slot is received into
// again only once the kernel reading it is done (at once with the CPU kernels; on device
// memory the kernels run on the device's stream and the tickets complete later).
//
// Bytes on the wire per rank with n bytes and k children: (k + 1) n sent (k n at the root),
// in (k + 1) K messages of at most n/K bytes (K = ChunkPlan chunks).
// Paper: Sanders, Speck & Traeff, "Two-tree algorithms for full bandwidth broadcast,
// reduction and scan", Parallel Computing 2009 (pipelined binary trees).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/kernels.h"
#include "concord/types.h"
#include "patterns/binary_tree.h"
#include "patterns/chunking.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class TreePipeline {
 public:
  /// Receive slots per child: how many chunks a child may be ahead of the reduction.
  static constexpr int kWindow = 4;

  /// `node` is this rank's place in the tree; messages up use `up_tag`, down `down_tag`.
  /// `overlap` chains the broadcast of each chunk right behind its reduction (C-Cube).
  TreePipeline(Communicator& comm, patterns::TreeNode node, int up_tag, int down_tag, bool overlap = false);

  /// Scratch bytes start() needs for `plan` (2 children x kWindow largest chunks).
  static size_t scratch_bytes(const patterns::ChunkPlan& plan) { return 2 * kWindow * plan.largest_bytes(); }

  /// Starts the allreduce of the `plan.count` elements of `dtype` at `data` with `op`,
  /// reducing with `kernels` (on the memory `data` and `scratch` are in); `scratch` holds
  /// scratch_bytes(plan) bytes. All stay valid until progress() is kDone. `data_ready`
  /// names the kernel that wrote `data` (0: none): nothing is sent from it before that is
  /// done. Chunk c is added to `final` (at `final_offset` + its offset, in bytes) once it is
  /// final on this rank: reduced (its kernel done), at the root; received from the parent,
  /// elsewhere.
  void start(uint8_t* data, const patterns::ChunkPlan& plan, DataType dtype, ReduceOp op, uint8_t* scratch,
             FinalRanges& final, size_t final_offset, Kernels& kernels, Kernels::Ticket data_ready = 0);
  /// Advances as far as completed messages allow; never blocks. Overlapped: at most one
  /// chunk step (one chunk reduced and sent on) per call, the parent link served before
  /// and after it, so chunk 0 goes down the tree while later chunks still come up.
  Progress progress();

 private:
  enum class Phase { kReduce, kAwaitSendsUp, kBroadcast, kOverlapped, kDone };
  uint8_t* slot(int child, int chunk) const;
  void post_child_receives(int chunk);
  void post_free_child_receives();  // receives of the chunks up to next_ + kWindow whose slots are free
  bool reduce_next_chunk();         // reduces chunk next_ if its children's parts are here; false otherwise
  bool pass_on_reduced();           // sends up (root: marks final, overlapped sends down) the chunks whose
                                    // kernels are done; true when none is left
  bool reduce_ready_chunks();       // reduces every chunk ready; true when every chunk is reduced
  void start_broadcast();
  bool forward_ready_chunks();  // true when every chunk has been received and forwarded
  void send_down(int chunk);
  void mark_final(int chunk) { final_->add(final_offset_ + plan_.offset_bytes(chunk), plan_.bytes(chunk)); }
  void serve_parent();         // overlapped, non-root: posts and forwards what the parent link allows
  bool progress_overlapped();  // one chunk step of the overlapped schedule; true when done

  Communicator& comm_;
  Kernels* kernels_ = nullptr;
  patterns::TreeNode node_;
  int up_tag_;
  int down_tag_;
  bool overlap_;
  uint8_t* data_ = nullptr;
  uint8_t* scratch_ = nullptr;
  FinalRanges* final_ = nullptr;
  size_t final_offset_ = 0;
  patterns::ChunkPlan plan_;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  Phase phase_ = Phase::kDone;
  int next_ = 0;          // next chunk to reduce (reduce phase) or to forward (broadcast phase)
  int next_receive_ = 0;  // first chunk whose receives from the children are not posted
  Kernels::Ticket data_ready_ = 0;
  std::array<std::array<RequestPtr, kWindow>, 2> child_receives_;  // by child, by slot
  std::array<Kernels::Ticket, kWindow> slot_readers_{};            // the last kernel reading each slot
  TicketQueue<int> reduced_;                 // chunks reduced, not yet passed on, each behind its kernel
  std::vector<RequestPtr> parent_receives_;  // by chunk
  RequestSet sends_;
  // Overlapped schedule only: the send up of each chunk (by chunk), the chunks whose send
  // up is posted, the chunks whose receive from the parent is posted, and the chunks
  // received and forwarded down.
  std::vector<RequestPtr> up_sends_;
  int sent_up_ = 0;
  int posted_down_ = 0;
  int forwarded_ = 0;
};

/// Allreduce over T TreePipelines run concurrently, tree t on elements
/// patterns::segment(count, T, t): the common body of AllreducePipelinedTree (T = 1) and
/// AllreduceDoubleTree (T = 2), which only choose the trees and their tags.
class TreeAllreduce : public AllreduceAlgorithm {
 public:
  /// Starts an in-place allreduce of `count` elements of `dtype` at `data` with `op`
  /// (kAverage reduces as kSum; the caller scales). Every rank must call it with the same
  /// count, dtype and op. `data` must stay valid until progress() returns kDone; it is in
  /// the memory of the Kernels given at construction (host memory with a ScratchBuffer).
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// Out of place: `input` copied to `output` by the Kernels (one pass, as the default),
  /// then start(output); nothing is sent from `output` before the copy is done.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// Per-range completion (AllreduceAlgorithm::take_final_ranges): chunk by chunk, in order
  /// per tree, as each becomes final on this rank (with overlap, long before kDone).
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

 protected:
  /// On host memory with the CPU kernels: `scratch` persists across calls (T x 2 x
  /// TreePipeline::kWindow chunks); `chunk_bytes` is the pipelining unit (at least one
  /// element per chunk); `trees` may be overlapped.
  TreeAllreduce(ScratchBuffer& scratch, size_t chunk_bytes, std::vector<TreePipeline> trees);
  /// On the memory `kernels` work on (their scratch holds the receive slots); the trees'
  /// communicator must take pointers of that memory. `kernels` must outlive this object.
  TreeAllreduce(Kernels& kernels, size_t chunk_bytes, std::vector<TreePipeline> trees);

 private:
  void start_after(void* data, size_t count, DataType dtype, ReduceOp op, Kernels::Ticket data_ready);

  std::unique_ptr<HostKernels> host_kernels_;  // the CPU kernels, when constructed with a ScratchBuffer
  Kernels& kernels_;
  size_t chunk_bytes_;
  Kernels::Ticket data_ready_ = 0;  // out of place: the copy of the input
  std::vector<TreePipeline> trees_;
  FinalRanges final_;
};

/// Kernel launches and message steps on the critical path of the tree allreduce over
/// `trees` (overlapped: the C-Cube schedule) for `problem`, as tree_allreduce_cost() counts
/// its pipeline steps: f (D + K - 1) reductions (f = the most children of a rank over all
/// trees) and 2 (D + K - 1) message steps (2 D + K - 1 overlapped). Zero for P = 1 or no
/// elements. Device rows price kernel and copy latencies with it (device_seconds()).
DeviceSteps tree_allreduce_device_steps(const Problem& problem, int trees, bool overlapped = false);

/// Cost of reduce-then-broadcast over `trees` (1: the binary tree on all elements; 2: the
/// double binary tree, tree t on half t = patterns::segment(count, 2, t)). Exact counts
/// from the tree tables. Critical path with D = tree height ceil(log2 P), K chunks of at
/// most c bytes (tree 0's, the larger half) and f = the most children any rank has over
/// all trees (the chunks its port carries per pipeline step): each phase is D + K - 1
/// steps; rounds 2(D + K - 1), wire_bytes 2 f c (D + K - 1), reduce_bytes f c (D + K - 1).
/// overlapped = true: the C-Cube schedule, one pipeline of 2 D + K - 1 steps in which a rank
/// receives g chunks per step, g = the most (children + parent) links any rank has over all
/// trees: rounds 2 D + K - 1, wire_bytes g c (2 D + K - 1), reduce_bytes f c (D + K - 1).
/// Exact counts are the same as without overlap.
Cost tree_allreduce_cost(const Problem& problem, int trees, bool overlapped = false);

}  // namespace concord
