#include "algorithms/allreduce_ring.h"

#include <algorithm>

#include "common/enforce.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllreduceRing;

}  // namespace

AllreduceRing::AllreduceRing(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : comm_(comm),
      host_kernels_(std::make_unique<HostKernels>(scratch)),
      kernels_(*host_kernels_),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      ring_{comm.rank(), comm.size()} {}

AllreduceRing::AllreduceRing(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : comm_(comm), kernels_(kernels), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)), ring_{comm.rank(), comm.size()} {}

void AllreduceRing::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  start_out_of_place(data, data, count, dtype, op);
}

void AllreduceRing::start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  CONCORD_ENFORCE(op != ReduceOp::kAdasum, InvalidArgument,
                  "ring allreduce: adasum is not element-wise (the adasum algorithm runs it)");
  data_ = static_cast<uint8_t*>(output);
  input_ = static_cast<const uint8_t*>(input);
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  element_size_ = dtype_size(dtype);
  step_ = 0;
  next_chunk_ = 0;
  next_receive_step_ = 0;
  slot_readers_[0] = slot_readers_[1] = 0;
  pending_.clear();
  sends_.clear();
  reduce_scatter_sends_.clear();
  receives_.clear();
  receives_.resize(2 * ring_.steps());
  final_.reset(count * element_size_);
  if (ring_.size == 1 || count == 0) {  // nothing to exchange: done once the copy is
    step_ = 2 * ring_.steps();          // (progress() must not look at the empty receives_)
    chunks_ = 0;
    reduce_scatter_sends_left_ = 0;
    if (input_ != data_ && count > 0) pending_.push({-1, 0}, kernels_.copy(data_, input_, count * element_size_));
    return;
  }

  const size_t largest_segment = patterns::segment(count, ring_.size, 0).count * element_size_;
  chunks_ = static_cast<int>(std::max<size_t>(1, (largest_segment + chunk_bytes_ - 1) / chunk_bytes_));
  slot_bytes_ = largest_segment;
  if (input_ == data_) kernels_.scratch(2 * slot_bytes_);  // grown before any receive lands in it
  reduce_scatter_sends_left_ = ring_.steps() * chunks_;
  // Receives of the first two steps go out before any send (both scratch halves are free).
  for (; next_receive_step_ < std::min(2, ring_.steps()); ++next_receive_step_) post_receives(next_receive_step_);
  for (int c = 0; c < chunks_; ++c) pending_.push({0, c}, 0);  // step 0 reads the input itself
  post_ready_sends();
}

AllreduceRing::Chunk AllreduceRing::chunk(int segment, int index) const {
  const auto seg = patterns::segment(count_, ring_.size, segment);
  const auto sub = patterns::segment(seg.count, chunks_, index);
  return {(seg.offset + sub.offset) * element_size_, sub.count * element_size_};
}

uint8_t* AllreduceRing::receive_slot(int step, int index) {
  const int segment = ring_.reduce_scatter_recv(step);
  // Out of place the received partial lands where its reduction goes: on the host the
  // output's lines are then in cache when the reduction writes them (no second, uncached
  // write stream), and no scratch is needed.
  if (input_ != data_) return data_ + chunk(segment, index).offset;
  const auto seg = patterns::segment(count_, ring_.size, segment);
  const auto sub = patterns::segment(seg.count, chunks_, index);
  return kernels_.scratch(2 * slot_bytes_) + (step % 2) * slot_bytes_ + sub.offset * element_size_;
}

void AllreduceRing::post_receives(int step) {
  auto& requests = receives_[step];
  for (int c = 0; c < chunks_; ++c) {
    if (in_reduce_scatter(step)) {
      const Chunk piece = chunk(ring_.reduce_scatter_recv(step), c);
      requests.push_back(comm_.irecv(receive_slot(step, c), piece.bytes, ring_.left(), kDataTag));
    } else {
      const Chunk piece = chunk(ring_.allgather_recv(step - ring_.steps()), c);
      requests.push_back(comm_.irecv(data_ + piece.offset, piece.bytes, ring_.left(), kDataTag));
    }
  }
}

bool AllreduceRing::post_ready_sends() {
  return pending_.run_ready(kernels_, [&](const PendingSend& send) {
    if (send.step < 0) return;  // the copy of a one-rank out-of-place call
    if (in_reduce_scatter(send.step)) {
      // Step 0 sends a segment this rank has not reduced yet: straight from the input.
      const Chunk piece = chunk(ring_.reduce_scatter_send(send.step), send.chunk);
      const uint8_t* source = send.step == 0 ? input_ : data_;
      reduce_scatter_sends_.post(comm_.isend(source + piece.offset, piece.bytes, ring_.right(), kDataTag));
      --reduce_scatter_sends_left_;
    } else {
      const Chunk piece = chunk(ring_.allgather_send(send.step - ring_.steps()), send.chunk);
      // The first allgather step sends this rank's own segment: its last kernel is done.
      if (send.step == ring_.steps()) final_.add(piece.offset, piece.bytes);
      sends_.post(comm_.isend(data_ + piece.offset, piece.bytes, ring_.right(), kDataTag));
    }
  });
}

Progress AllreduceRing::progress() {
  const int total_steps = 2 * ring_.steps();
  post_ready_sends();
  while (step_ < total_steps) {
    if (in_reduce_scatter(step_)) {
      // Receives of the current and the next step, once no kernel reads their half.
      while (next_receive_step_ < ring_.steps() && next_receive_step_ <= step_ + 1) {
        if (!kernels_.done(slot_readers_[next_receive_step_ % 2])) break;
        post_receives(next_receive_step_++);
      }
      if (next_receive_step_ <= step_) return Progress::kInProgress;
    } else if (next_receive_step_ < total_steps) {
      // The allgather receives overwrite the segments the reduce-scatter sent from.
      if (reduce_scatter_sends_left_ > 0 || !reduce_scatter_sends_.reap()) {
        post_ready_sends();
        sends_.reap();
        return Progress::kInProgress;
      }
      for (int step = ring_.steps(); step < total_steps; ++step) post_receives(step);
      next_receive_step_ = total_steps;
    }
    if (!reap_one(receives_[step_][next_chunk_])) {
      sends_.reap();
      return Progress::kInProgress;
    }
    Kernels::Ticket ready = 0;
    if (in_reduce_scatter(step_)) {
      const Chunk piece = chunk(ring_.reduce_scatter_recv(step_), next_chunk_);
      // Each segment is reduced once per rank: output = op(input, received).
      ready = kernels_.reduce(data_ + piece.offset, input_ + piece.offset, receive_slot(step_, next_chunk_),
                              piece.bytes / element_size_, dtype_, op_);
      if (input_ == data_ && next_chunk_ + 1 == chunks_) slot_readers_[step_ % 2] = ready;
    } else {
      const Chunk piece = chunk(ring_.allgather_recv(step_ - ring_.steps()), next_chunk_);
      final_.add(piece.offset, piece.bytes);
    }
    if (step_ + 1 < total_steps) pending_.push({step_ + 1, next_chunk_}, ready);
    post_ready_sends();
    if (++next_chunk_ == chunks_) {
      receives_[step_].clear();
      next_chunk_ = 0;
      ++step_;
    }
  }
  if (!post_ready_sends()) return Progress::kInProgress;
  const bool sends_done = reduce_scatter_sends_.reap() & sends_.reap();
  if (!sends_done) return Progress::kInProgress;
  final_.finish();
  return Progress::kDone;
}

}  // namespace concord

namespace concord {

DeviceSteps AllreduceRing::device_steps(const Problem& problem) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return {};
  return {static_cast<double>(P - 1), 2.0 * (P - 1)};
}

Cost AllreduceRing::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  const size_t e = problem.element_size;
  const size_t largest = patterns::segment(problem.count, P, 0).count * e;
  const size_t chunk = std::max<size_t>(problem.chunk_bytes, 1);
  const uint64_t chunks = std::max<size_t>(1, (largest + chunk - 1) / chunk);
  const uint64_t messages = 2 * static_cast<uint64_t>(P - 1) * chunks;
  // Rank r sends every segment but (r+1) mod P in the reduce-scatter and every segment but
  // (r+2) mod P in the allgather.
  const uint64_t total = problem.count * e;
  for (int r = 0; r < P; ++r) {
    const uint64_t sent = 2 * total - patterns::segment(problem.count, P, (r + 1) % P).count * e -
                          patterns::segment(problem.count, P, (r + 2) % P).count * e;
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, sent);
  }
  cost.max_messages_sent = messages;
  cost.total_messages_sent = messages * P;
  cost.total_bytes_sent = 2 * (P - 1) * total;
  cost.rounds = static_cast<double>(messages);
  cost.wire_bytes = 2.0 * (P - 1) * largest;
  cost.reduce_bytes = static_cast<double>(P - 1) * largest;
  return cost.place(problem.nodes);
}

}  // namespace concord
