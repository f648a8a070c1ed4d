#include "algorithms/tree_pipeline.h"

#include <algorithm>

namespace concord {

TreePipeline::TreePipeline(Communicator& comm, patterns::TreeNode node, int up_tag, int down_tag, bool overlap)
    : comm_(comm), node_(node), up_tag_(up_tag), down_tag_(down_tag), overlap_(overlap) {}

void TreePipeline::start(uint8_t* data, const patterns::ChunkPlan& plan, DataType dtype, ReduceOp op, uint8_t* scratch,
                         FinalRanges& final, size_t final_offset, Kernels& kernels, Kernels::Ticket data_ready) {
  kernels_ = &kernels;
  data_ready_ = data_ready;
  data_ = data;
  scratch_ = scratch;
  final_ = &final;
  final_offset_ = final_offset;
  plan_ = plan;
  dtype_ = dtype;
  op_ = op;
  next_ = 0;
  next_receive_ = 0;
  sent_up_ = 0;
  posted_down_ = 0;
  forwarded_ = 0;
  slot_readers_.fill(0);
  reduced_.clear();
  sends_.clear();
  parent_receives_.clear();
  up_sends_.clear();
  for (auto& slots : child_receives_)
    for (auto& request : slots) request.reset();
  if (plan_.chunks == 0 || (node_.is_root() && node_.is_leaf())) {  // nothing to exchange
    phase_ = Phase::kDone;
    return;
  }
  phase_ = overlap_ ? Phase::kOverlapped : Phase::kReduce;
  if (overlap_ && !node_.is_root()) {
    up_sends_.resize(plan_.chunks);
    parent_receives_.resize(plan_.chunks);
  }
  post_free_child_receives();
}

uint8_t* TreePipeline::slot(int child, int chunk) const {
  return scratch_ + (static_cast<size_t>(child) * kWindow + chunk % kWindow) * plan_.largest_bytes();
}

void TreePipeline::post_child_receives(int chunk) {
  for (int i = 0; i < node_.child_count(); ++i)
    child_receives_[i][chunk % kWindow] = comm_.irecv(slot(i, chunk), plan_.bytes(chunk), node_.children[i], up_tag_);
}

void TreePipeline::post_free_child_receives() {
  // A slot is received into again once the kernel reading its last chunk is done.
  while (next_receive_ < std::min(next_ + kWindow, plan_.chunks) &&
         kernels_->done(slot_readers_[next_receive_ % kWindow]))
    post_child_receives(next_receive_++);
}

bool TreePipeline::reduce_next_chunk() {
  if (next_ == plan_.chunks) return false;
  post_free_child_receives();
  if (next_receive_ == next_) return false;  // its slots are still being read
  const int s = next_ % kWindow;
  for (int i = 0; i < node_.child_count(); ++i)
    if (!reap_one(child_receives_[i][s])) return false;
  uint8_t* own = data_ + plan_.offset_bytes(next_);
  Kernels::Ticket ready = data_ready_;
  for (int i = 0; i < node_.child_count(); ++i) {  // children[0] first, then children[1]
    ready = kernels_->reduce(own, own, slot(i, next_), plan_.chunk(next_).count, dtype_, op_);
  }
  if (node_.child_count() > 0) slot_readers_[s] = ready;
  reduced_.push(next_, ready);
  ++next_;
  post_free_child_receives();
  pass_on_reduced();
  return true;
}

bool TreePipeline::pass_on_reduced() {
  return reduced_.run_ready(*kernels_, [&](int chunk) {
    if (!node_.is_root()) {
      RequestPtr up = comm_.isend(data_ + plan_.offset_bytes(chunk), plan_.bytes(chunk), node_.parent, up_tag_);
      if (overlap_) {
        up_sends_[chunk] = std::move(up);
        sent_up_ = chunk + 1;
      } else {
        sends_.post(std::move(up));
      }
    } else {
      mark_final(chunk);
      if (overlap_) send_down(chunk);  // chunk is final: start it down the tree now
    }
  });
}

bool TreePipeline::reduce_ready_chunks() {
  while (reduce_next_chunk()) {
  }
  return next_ == plan_.chunks;
}

void TreePipeline::start_broadcast() {
  next_ = 0;
  if (node_.is_root()) {  // the reduction is complete here: send everything down
    for (int c = 0; c < plan_.chunks; ++c) send_down(c);
    next_ = plan_.chunks;
    return;
  }
  // The sends up read from the chunks these receives overwrite; they have completed.
  parent_receives_.reserve(plan_.chunks);
  for (int c = 0; c < plan_.chunks; ++c)
    parent_receives_.push_back(comm_.irecv(data_ + plan_.offset_bytes(c), plan_.bytes(c), node_.parent, down_tag_));
}

void TreePipeline::send_down(int chunk) {
  for (int i = 0; i < node_.child_count(); ++i)
    sends_.post(comm_.isend(data_ + plan_.offset_bytes(chunk), plan_.bytes(chunk), node_.children[i], down_tag_));
}

bool TreePipeline::forward_ready_chunks() {
  for (; next_ < plan_.chunks; ++next_) {
    if (!reap_one(parent_receives_[next_])) return false;
    mark_final(next_);
    send_down(next_);
  }
  return true;
}

void TreePipeline::serve_parent() {
  // Chunk c's receive from the parent may overwrite chunk c once its send up (posted once
  // its kernel was done) has completed.
  for (; posted_down_ < sent_up_; ++posted_down_) {
    if (!reap_one(up_sends_[posted_down_])) break;
    parent_receives_[posted_down_] =
        comm_.irecv(data_ + plan_.offset_bytes(posted_down_), plan_.bytes(posted_down_), node_.parent, down_tag_);
  }
  for (; forwarded_ < posted_down_; ++forwarded_) {
    if (!reap_one(parent_receives_[forwarded_])) break;
    mark_final(forwarded_);
    send_down(forwarded_);
  }
}

bool TreePipeline::progress_overlapped() {
  // At most one chunk step per call, with the parent link served before and after it. A
  // rank whose children are far ahead (their chunks already here, or pulled in by the very
  // test() that polls them, as MPI_Test does on shared memory) would otherwise reduce every
  // chunk before it posts the receive of chunk 0 from its parent, and chunk 0 would become
  // final only at the end of the allreduce (tests/unit/test_overlapped_tree_turnaround.cc).
  // Returning after each step also lets the driver hand the core to the ranks it waits for
  // when ranks outnumber cores (concord-turnaround, 4 ranks on 2 cores, 32 MiB: chunk 0
  // final on every rank after 4-11 % of the allreduce, 65-82 % when a call ran every
  // ready step, 90-100 % with the reduction loop ahead of the parent link).
  const bool passed = pass_on_reduced();
  if (!node_.is_root()) serve_parent();
  if (reduce_next_chunk() && !node_.is_root()) serve_parent();
  const bool sent = sends_.reap_in_order();
  const bool received = node_.is_root() || forwarded_ == plan_.chunks;
  return next_ == plan_.chunks && passed && reduced_.empty() && received && sent;
}

Progress TreePipeline::progress() {
  if (phase_ == Phase::kOverlapped) {
    if (!progress_overlapped()) return Progress::kInProgress;
    parent_receives_.clear();
    up_sends_.clear();
    phase_ = Phase::kDone;
  }
  if (phase_ == Phase::kReduce) {
    const bool reduced = reduce_ready_chunks();
    const bool passed = pass_on_reduced();
    sends_.reap_in_order();
    if (!reduced || !passed) return Progress::kInProgress;
    phase_ = Phase::kAwaitSendsUp;
  }
  if (phase_ == Phase::kAwaitSendsUp) {
    if (!sends_.reap_in_order()) return Progress::kInProgress;
    start_broadcast();
    phase_ = Phase::kBroadcast;
  }
  if (phase_ == Phase::kBroadcast) {
    const bool forwarded = forward_ready_chunks();
    if (!sends_.reap_in_order() || !forwarded) return Progress::kInProgress;
    parent_receives_.clear();
    phase_ = Phase::kDone;
  }
  return Progress::kDone;
}

TreeAllreduce::TreeAllreduce(ScratchBuffer& scratch, size_t chunk_bytes, std::vector<TreePipeline> trees)
    : host_kernels_(std::make_unique<HostKernels>(scratch)),
      kernels_(*host_kernels_),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      trees_(std::move(trees)) {}

TreeAllreduce::TreeAllreduce(Kernels& kernels, size_t chunk_bytes, std::vector<TreePipeline> trees)
    : kernels_(kernels), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)), trees_(std::move(trees)) {}

void TreeAllreduce::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  start_after(data, count, dtype, op, 0);
}

void TreeAllreduce::start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  const Kernels::Ticket copied =
      input != output && count > 0 ? kernels_.copy(output, input, count * dtype_size(dtype)) : 0;
  start_after(output, count, dtype, op, copied);
}

void TreeAllreduce::start_after(void* data, size_t count, DataType dtype, ReduceOp op, Kernels::Ticket data_ready) {
  const int T = static_cast<int>(trees_.size());
  const size_t element_size = dtype_size(dtype);
  std::vector<patterns::ChunkPlan> plans;
  size_t scratch_bytes = 0;
  for (int t = 0; t < T; ++t) {
    plans.push_back(patterns::ChunkPlan::make(patterns::segment(count, T, t).count, element_size, chunk_bytes_));
    scratch_bytes += TreePipeline::scratch_bytes(plans.back());
  }
  uint8_t* scratch = kernels_.scratch(scratch_bytes);
  data_ready_ = data_ready;
  final_.reset(count * element_size);
  for (int t = 0; t < T; ++t) {
    const size_t offset = patterns::segment(count, T, t).offset * element_size;
    trees_[t].start(static_cast<uint8_t*>(data) + offset, plans[t], dtype, op, scratch, final_, offset, kernels_,
                    data_ready);
    scratch += TreePipeline::scratch_bytes(plans[t]);
  }
}

Progress TreeAllreduce::progress() {
  bool done = true;
  for (auto& tree : trees_) done = (tree.progress() == Progress::kDone) && done;
  // P = 1 out of place: nothing was exchanged, the copy is the result.
  if (!done || !kernels_.done(data_ready_)) return Progress::kInProgress;
  final_.finish();  // P = 1: nothing was exchanged, the whole buffer is final now
  return Progress::kDone;
}

DeviceSteps tree_allreduce_device_steps(const Problem& problem, int trees, bool overlapped) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return {};
  const auto chunks = patterns::ChunkPlan::make(patterns::segment(problem.count, trees, 0).count, problem.element_size,
                                                problem.chunk_bytes)
                          .chunks;
  int fan_in = 0;
  for (int r = 0; r < P; ++r) {
    int children = 0;
    for (int t = 0; t < trees; ++t) children += patterns::double_binary_tree(r, P, t).child_count();
    fan_in = std::max(fan_in, children);
  }
  const double steps = patterns::tree_height(P) + chunks - 1;
  const double message_steps = overlapped ? 2.0 * patterns::tree_height(P) + chunks - 1 : 2 * steps;
  return {fan_in * steps, message_steps};
}

Cost tree_allreduce_cost(const Problem& problem, int trees, bool overlapped) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  std::array<patterns::ChunkPlan, 2> plans{};
  for (int t = 0; t < trees; ++t) {
    const size_t count = patterns::segment(problem.count, trees, t).count;
    plans[t] = patterns::ChunkPlan::make(count, problem.element_size, problem.chunk_bytes);
  }
  int fan_in = 0;
  int links = 0;  // the most tree links (children + parent) of one rank, over all trees
  for (int r = 0; r < P; ++r) {
    uint64_t messages = 0;
    uint64_t bytes = 0;
    int children = 0;
    int peers_all = 0;
    for (int t = 0; t < trees; ++t) {
      if (plans[t].chunks == 0) continue;
      const patterns::TreeNode node = patterns::double_binary_tree(r, P, t);
      const uint64_t peers = static_cast<uint64_t>(node.child_count()) + (node.is_root() ? 0 : 1);
      messages += peers * static_cast<uint64_t>(plans[t].chunks);
      bytes += peers * plans[t].count * plans[t].element_size;
      children += node.child_count();
      peers_all += static_cast<int>(peers);
    }
    fan_in = std::max(fan_in, children);
    links = std::max(links, peers_all);
    cost.max_messages_sent = std::max(cost.max_messages_sent, messages);
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, bytes);
    cost.total_messages_sent += messages;
    cost.total_bytes_sent += bytes;
  }
  const double steps = patterns::tree_height(P) + plans[0].chunks - 1;
  const double chunk = static_cast<double>(plans[0].largest_bytes());
  cost.reduce_bytes = fan_in * chunk * steps;
  if (overlapped) {  // one pipeline: D steps up, D down, K - 1 behind the first chunk
    const double pipeline = 2.0 * patterns::tree_height(P) + plans[0].chunks - 1;
    cost.rounds = pipeline;
    cost.wire_bytes = links * chunk * pipeline;
  } else {
    cost.rounds = 2 * steps;
    cost.wire_bytes = 2 * fan_in * chunk * steps;
  }
  return cost.place(problem.nodes);
}

}  // namespace concord
