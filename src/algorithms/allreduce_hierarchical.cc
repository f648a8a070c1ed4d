#include "algorithms/allreduce_hierarchical.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "common/enforce.h"
#include "common/reduce.h"
#include "patterns/binomial_tree.h"
#include "patterns/ring.h"
#include "transport/tags.h"

namespace concord {
namespace {

constexpr int kReduceTag = tags::kHierarchicalReduce;
constexpr int kBroadcastTag = tags::kHierarchicalBroadcast;

// ceil(bytes / chunk_bytes), at least 1 and at most `count` (chunks are never empty).
int chunk_count(size_t count, size_t bytes, size_t chunk_bytes) {
  if (count == 0) return 0;
  const size_t chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
  return static_cast<int>(std::clamp<size_t>(chunks, 1, count));
}

int ceil_log2(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

}  // namespace

AllreduceHierarchical::AllreduceHierarchical(const AlgorithmContext& ctx)
    : scratch_(ctx.scratch), chunk_bytes_(std::max<size_t>(ctx.chunk_bytes, 1)), cost_params_(ctx.cost_params) {
  Communicator& comm = ctx.comm;
  const auto& nodes = ctx.node_of_rank;
  CONCORD_ENFORCE(nodes.empty() || static_cast<int>(nodes.size()) == comm.size(), InvalidArgument,
                  "hierarchical allreduce: node_of_rank has ", nodes.size(), " entries for ", comm.size(), " ranks");
  const int node = nodes.empty() ? 0 : nodes[comm.rank()];
  CONCORD_ENFORCE(node >= 0, InvalidArgument, "hierarchical allreduce: rank ", comm.rank(), " has node ", node,
                  " (must be >= 0)");
  local_ = comm.split(node, comm.rank());
  inter_ = comm.split(local_->rank() == 0 ? 0 : -1, comm.rank());
  const patterns::BinomialTree tree{local_->rank(), local_->size(), 0};
  parent_ = tree.parent();
  children_ = tree.children();
}

AllreduceHierarchical::Range AllreduceHierarchical::chunk(int index) const {
  const auto piece = patterns::segment(count_, chunks_, index);
  return {piece.offset * element_size_, piece.count * element_size_};
}

uint8_t* AllreduceHierarchical::slot(size_t child, int index) {
  return scratch_.get(2 * children_.size() * slot_bytes_) + (2 * child + index % 2) * slot_bytes_;
}

void AllreduceHierarchical::post_child_receive(size_t child, int index) {
  child_receives_[child][index % 2] =
      local_->irecv(slot(child, index), chunk(index).bytes, children_[child], kReduceTag);
}

void AllreduceHierarchical::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  data_ = static_cast<uint8_t*>(data);
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  element_size_ = dtype_size(dtype);
  chunks_ = chunk_count(count, count * element_size_, chunk_bytes_);
  slot_bytes_ = chunks_ == 0 ? 0 : patterns::segment(count, chunks_, 0).count * element_size_;
  reduce_next_ = 0;
  receive_posted_ = 0;
  broadcast_next_ = 0;
  inter_algorithm_ = nullptr;
  inter_done_ = false;
  child_receives_.clear();
  child_receives_.resize(children_.size());
  reduce_sends_.clear();
  reduce_sends_.resize(chunks_);
  broadcast_receives_.clear();
  broadcast_receives_.resize(chunks_);
  broadcast_sends_.clear();
  final_.reset(count * element_size_);
  scratch_.get(2 * children_.size() * slot_bytes_);  // grow once, before any pointer is taken
  for (size_t child = 0; child < children_.size(); ++child) {
    child_receives_[child].resize(2);
    for (int index = 0; index < std::min(chunks_, 2); ++index) post_child_receive(child, index);
  }
}

// Reduces every chunk whose children's parts have all arrived, in chunk order, and sends it
// up (posting the receive of chunk c+2 into the freed slot).
void AllreduceHierarchical::advance_reduce() {
  while (reduce_next_ < chunks_) {
    const int c = reduce_next_;
    bool arrived = true;
    for (auto& receives : child_receives_) arrived = reap_one(receives[c % 2]) && arrived;
    if (!arrived) return;
    const Range piece = chunk(c);
    for (size_t child = 0; child < children_.size(); ++child) {
      reduce_inplace(data_ + piece.offset, slot(child, c), piece.bytes / element_size_, dtype_, op_);
      if (c + 2 < chunks_) post_child_receive(child, c + 2);
    }
    if (!is_local_root()) reduce_sends_[c] = local_->isend(data_ + piece.offset, piece.bytes, parent_, kReduceTag);
    ++reduce_next_;
  }
}

// Non-roots: the final chunk c may land in `data` once chunk c's reduce send has completed.
void AllreduceHierarchical::post_broadcast_receives() {
  if (is_local_root()) return;
  while (receive_posted_ < reduce_next_ && reap_one(reduce_sends_[receive_posted_])) {
    const Range piece = chunk(receive_posted_);
    broadcast_receives_[receive_posted_] = local_->irecv(data_ + piece.offset, piece.bytes, parent_, kBroadcastTag);
    ++receive_posted_;
  }
}

// Local roots, once the node's sum is complete: the inter-node allreduce. True when done.
bool AllreduceHierarchical::advance_inter() {
  if (inter_done_) return true;
  if (!is_local_root() || reduce_next_ < chunks_) return false;
  if (!inter_ || inter_->size() == 1) return inter_done_ = true;
  if (inter_algorithm_ == nullptr) {
    Problem problem;
    problem.ranks = local_->size() * inter_->size();  // as the cost model sees it: uniform nodes
    problem.nodes = inter_->size();
    problem.count = count_;
    problem.element_size = element_size_;
    problem.dtype = dtype_;
    problem.op = op_;
    problem.chunk_bytes = chunk_bytes_;
    const auto& entry = inter_algorithm(problem, cost_params_);
    auto& instance = inter_algorithms_[entry.name];
    if (!instance) {
      std::vector<int> own_nodes(inter_->size());
      std::iota(own_nodes.begin(), own_nodes.end(), 0);
      instance = entry.create(AlgorithmContext{*inter_, inter_scratch_, chunk_bytes_, own_nodes, cost_params_});
    }
    inter_algorithm_ = instance.get();
    inter_algorithm_->start(data_, count_, dtype_, op_);
  }
  inter_done_ = inter_algorithm_->progress() == Progress::kDone;
  return inter_done_;
}

// Sends every final chunk down the tree, in order, and reports it final: at the root once
// the inter-node allreduce is done (on a single node, as soon as the chunk is reduced),
// elsewhere once it has arrived from the parent.
void AllreduceHierarchical::advance_broadcast() {
  const bool alone = !inter_ || inter_->size() == 1;
  while (broadcast_next_ < chunks_) {
    const int c = broadcast_next_;
    bool ready = false;
    if (is_local_root()) {
      ready = alone ? c < reduce_next_ : inter_done_;
    } else {
      ready = c < receive_posted_ && reap_one(broadcast_receives_[c]);
    }
    if (!ready) return;
    const Range piece = chunk(c);
    final_.add(piece.offset, piece.bytes);  // final here; only read from now on
    for (int child : children_)
      broadcast_sends_.post(local_->isend(data_ + piece.offset, piece.bytes, child, kBroadcastTag));
    ++broadcast_next_;
  }
}

Progress AllreduceHierarchical::progress() {
  advance_reduce();
  post_broadcast_receives();
  advance_inter();
  advance_broadcast();
  if (broadcast_next_ < chunks_) return Progress::kInProgress;
  return broadcast_sends_.reap() ? Progress::kDone : Progress::kInProgress;
}

std::string AllreduceHierarchical::declines(const Problem& problem) {
  if (problem.nodes <= 1) return "one node: nothing to split";
  if (!problem.uniform_nodes) return "nodes hold different numbers of ranks";
  if (problem.ranks <= problem.nodes) return "one rank per node: no intra-node level";
  return "";
}

Problem AllreduceHierarchical::inter_problem(const Problem& problem) {
  Problem inter = problem;
  inter.ranks = problem.nodes;
  inter.nodes = problem.nodes;
  inter.native_available = false;  // Concord's own algorithms, whose traffic is counted
  inter.uniform_nodes = true;
  return inter;
}

const AllreduceEntry& AllreduceHierarchical::inter_algorithm(const Problem& problem, const CostParams& params) {
  return select_algorithm(allreduce_algorithms(), inter_problem(problem), params);
}

Cost AllreduceHierarchical::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  const int N = std::max(problem.nodes, 1);
  if (P == 1 || problem.count == 0) return cost;
  const int L = std::max(P / N, 1);
  const uint64_t n = problem.bytes();
  const uint64_t K = chunk_count(problem.count, n, std::max<size_t>(problem.chunk_bytes, 1));
  Cost inter;
  if (N > 1) {
    inter = inter_algorithm(problem, CostParams{}).cost(inter_problem(problem));
  }
  // Per local rank v: K messages up (v > 0) and K per child down.
  uint64_t node_messages = 0, node_bytes = 0;
  for (int v = 0; v < L; ++v) {
    const uint64_t children = patterns::BinomialTree{v, L, 0}.children().size();
    const uint64_t messages = K * (children + (v > 0 ? 1 : 0));
    const uint64_t bytes = n * (children + (v > 0 ? 1 : 0));
    node_messages += messages;
    node_bytes += bytes;
    cost.max_messages_sent = std::max(cost.max_messages_sent, messages + (v == 0 ? inter.max_messages_sent : 0));
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, bytes + (v == 0 ? inter.max_bytes_sent : 0));
  }
  cost.total_messages_sent = N * node_messages + inter.total_messages_sent;
  cost.total_bytes_sent = N * node_bytes + inter.total_bytes_sent;
  const int d = ceil_log2(L);
  if (d > 0) {
    cost.rounds = 2.0 * static_cast<double>(d + K - 1);
    cost.wire_bytes = 2.0 * d * static_cast<double>(n);
    cost.reduce_bytes = d * static_cast<double>(n);
  }
  cost.rounds += inter.rounds;
  cost.wire_bytes += inter.wire_bytes;
  cost.inter_rounds = inter.inter_rounds;
  cost.inter_wire_bytes = inter.inter_wire_bytes;
  cost.reduce_bytes += inter.reduce_bytes;
  return cost;
}

}  // namespace concord
