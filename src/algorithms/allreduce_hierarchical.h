// AllreduceHierarchical: two-level allreduce for ranks spread over several nodes (the
// hierarchical scheme of docs/algorithms.md; cf. Horovod's hierarchical allreduce and
// Thakur, Rabenseifner & Gropp, IJHPCA 2005, for the building blocks).
//
// Nodes are the groups of AlgorithmContext::node_of_rank (the runtime fills it from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). The constructor splits the communicator once
// (collective): a local communicator per node (local root = the node's lowest rank) and an
// inter-node communicator of the local roots, ordered by rank. Each call then runs:
//   1. intra-node reduce to the local root along a binomial tree
//      (patterns/binomial_tree.h, root 0), pipelined in K chunks: a rank reduces its
//      children's chunk c (in children() order) into its own and sends it to its parent;
//   2. inter-node allreduce of the whole vector among the local roots, by the flat
//      allreduce the registry's cost model picks for N ranks on N nodes (e.g. ring);
//   3. intra-node broadcast from the local root down the same tree, in K chunks; a rank
//      posts its receive of chunk c once its reduce send of chunk c has completed.
// Every element is reduced by one chain on each node, then by the inter algorithm (itself
// bit-identical on the roots), then copied, so all ranks end bit-identical.
//
// Bytes on the wire for P ranks on N nodes of L = P/N ranks, n bytes, K chunks
// (K = ceil(n / chunk_bytes), at most the element count), ch(v) = binomial children of
// local rank v: a non-root local rank sends K messages (n bytes) up and K*ch(v) messages
// (ch(v)*n bytes) down; a local root sends K*ch(0) messages down plus what the inter
// algorithm sends. Critical path, d = ceil(log2 L): 2 (d + K - 1) intra rounds, 2 d n
// intra wire bytes and d n reduced bytes at the root, plus the inter algorithm's cost
// (priced at inter_alpha / inter_beta).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

class AllreduceHierarchical : public AllreduceAlgorithm {
 public:
  /// Splits ctx.comm by ctx.node_of_rank (collective over ctx.comm; empty = one node).
  /// Throws InvalidArgument when node_of_rank is neither empty nor of size comm.size().
  /// Works for any node map; the registry only selects it for several uniform nodes.
  explicit AllreduceHierarchical(const AlgorithmContext& ctx);

  /// Starts an in-place allreduce of `count` elements of `dtype` at `data` with `op`
  /// (kAverage reduces as kSum). Same arguments on every rank; `data` valid until kDone.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  Progress progress() override;
  /// Per-range completion (AllreduceAlgorithm::take_final_ranges): chunk by chunk as this
  /// rank sends it down its node's tree (received from the parent, or at the local root
  /// once the inter-node allreduce is done), so a non-root reports chunk c while later
  /// chunks are still on their way.
  void take_final_ranges(std::vector<ByteRange>& out) override { final_.take(out); }

  /// "" when the problem spans several nodes of equal size with more than one rank each.
  static std::string declines(const Problem& problem);
  /// Exact counts and critical path of one call, for uniform nodes of ranks/nodes ranks;
  /// the inter-node algorithm is the one chosen with default CostParams.
  static Cost cost(const Problem& problem);
  /// The problem the local roots solve: `problem` on `problem.nodes` ranks, one per node.
  static Problem inter_problem(const Problem& problem);
  /// The flat allreduce the local roots run for `problem` (the whole problem, P ranks on
  /// `problem.nodes` nodes): the registry's cheapest for inter_problem(problem) under `params`.
  static const AllreduceEntry& inter_algorithm(const Problem& problem, const CostParams& params);

 private:
  struct Range {
    size_t offset;  // bytes
    size_t bytes;
  };
  Range chunk(int index) const;
  uint8_t* slot(size_t child, int index);
  void post_child_receive(size_t child, int index);
  void advance_reduce();
  void post_broadcast_receives();
  bool advance_inter();
  void advance_broadcast();
  bool is_local_root() const { return parent_ < 0; }

  ScratchBuffer& scratch_;
  size_t chunk_bytes_;
  CostParams cost_params_;
  std::unique_ptr<Communicator> local_;  // ranks of this node
  std::unique_ptr<Communicator> inter_;  // local roots only; null elsewhere
  int parent_ = -1;                      // in local_; -1 at the local root
  std::vector<int> children_;            // in local_, reduction order
  ScratchBuffer inter_scratch_;
  std::map<std::string, std::unique_ptr<AllreduceAlgorithm>> inter_algorithms_;  // by name

  // The current call.
  uint8_t* data_ = nullptr;
  size_t count_ = 0;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  size_t element_size_ = 1;
  int chunks_ = 0;
  size_t slot_bytes_ = 0;
  int reduce_next_ = 0;                            // next chunk to reduce and send up
  int receive_posted_ = 0;                         // broadcast receives posted (non-roots)
  int broadcast_next_ = 0;                         // next chunk to send down
  AllreduceAlgorithm* inter_algorithm_ = nullptr;  // running, or null
  bool inter_done_ = false;
  std::vector<std::vector<RequestPtr>> child_receives_;  // by child, by slot (chunk % 2)
  std::vector<RequestPtr> reduce_sends_;                 // by chunk
  std::vector<RequestPtr> broadcast_receives_;           // by chunk
  RequestSet broadcast_sends_;
  FinalRanges final_;
};

}  // namespace concord
