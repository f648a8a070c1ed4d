#include "device/allreduce_device_ring.h"

#include <algorithm>

#include "common/enforce.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllreduceRing;
constexpr size_t kEvents = 16;  // pool; an event re-recorded later only completes later
}  // namespace

AllreduceDeviceRing::AllreduceDeviceRing(Communicator& comm, Device& device, size_t chunk_bytes)
    : comm_(comm),
      device_(device),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      ring_{comm.rank(), comm.size()},
      stream_(device.create_stream()) {
  for (size_t i = 0; i < kEvents; ++i) events_.push_back(device.create_event());
}

AllreduceDeviceRing::~AllreduceDeviceRing() {
  try {
    stream_->synchronize();  // kernels of an abandoned operation may still read the scratch
  } catch (...) {
  }
}

Event* AllreduceDeviceRing::next_event() {
  Event* event = events_[next_event_++ % kEvents].get();
  stream_->record(*event);
  return event;
}

void AllreduceDeviceRing::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  begin(data, count, dtype, op, nullptr);
}

void AllreduceDeviceRing::start_out_of_place(const void* input, void* output, size_t count, DataType dtype,
                                             ReduceOp op) {
  if (input == output || count == 0) return begin(output, count, dtype, op, nullptr);
  stream_->copy(output, input, count * dtype_size(dtype), CopyKind::kDeviceToDevice);
  begin(output, count, dtype, op, next_event());
}

void AllreduceDeviceRing::begin(void* data, size_t count, DataType dtype, ReduceOp op, Event* ready) {
  CONCORD_ENFORCE(op != ReduceOp::kAdasum, InvalidArgument,
                  "device ring allreduce: adasum is not element-wise (use the host adasum algorithm)");
  data_ = static_cast<uint8_t*>(data);
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  element_size_ = dtype_size(dtype);
  step_ = 0;
  next_chunk_ = 0;
  next_receive_step_ = 0;
  pending_.clear();
  sends_.clear();
  reduce_scatter_sends_.clear();
  receives_.clear();
  receives_.resize(2 * ring_.steps());
  final_.reset(count * element_size_);
  if (ring_.size == 1 || count == 0) {  // nothing to exchange; wait only for the copy
    step_ = 2 * ring_.steps();
    chunks_ = 0;
    reduce_scatter_sends_left_ = 0;
    if (ready != nullptr) pending_.push_back({-1, 0, ready});
    return;
  }
  const size_t largest_segment = patterns::segment(count, ring_.size, 0).count * element_size_;
  chunks_ = static_cast<int>(std::max<size_t>(1, (largest_segment + chunk_bytes_ - 1) / chunk_bytes_));
  slot_bytes_ = largest_segment;
  if (scratch_.bytes() < 2 * slot_bytes_) {
    stream_->synchronize();
    scratch_ = DeviceBuffer(device_, 2 * slot_bytes_);
  }
  scratch_free_[0] = scratch_free_[1] = nullptr;  // the previous operation's kernels are done
  reduce_scatter_sends_left_ = ring_.steps() * chunks_;
  // Receives of the first two steps go out before any send (both scratch halves are free).
  for (; next_receive_step_ < std::min(2, ring_.steps()); ++next_receive_step_) post_receives(next_receive_step_);
  for (int c = 0; c < chunks_; ++c) pending_.push_back({0, c, ready});
  post_ready_sends();
}

AllreduceDeviceRing::Chunk AllreduceDeviceRing::chunk(int segment, int index) const {
  const auto seg = patterns::segment(count_, ring_.size, segment);
  const auto sub = patterns::segment(seg.count, chunks_, index);
  return {(seg.offset + sub.offset) * element_size_, sub.count * element_size_};
}

uint8_t* AllreduceDeviceRing::receive_slot(int step, int index) const {
  const auto seg = patterns::segment(count_, ring_.size, ring_.reduce_scatter_recv(step));
  const auto sub = patterns::segment(seg.count, chunks_, index);
  return static_cast<uint8_t*>(scratch_.data()) + (step % 2) * slot_bytes_ + sub.offset * element_size_;
}

void AllreduceDeviceRing::post_receives(int step) {
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

bool AllreduceDeviceRing::post_ready_sends() {
  while (!pending_.empty()) {
    const PendingSend send = pending_.front();
    if (send.ready != nullptr && !send.ready->query()) return false;
    pending_.pop_front();
    if (send.step < 0) continue;  // the out-of-place copy of a one-rank operation
    if (in_reduce_scatter(send.step)) {
      const Chunk piece = chunk(ring_.reduce_scatter_send(send.step), send.chunk);
      reduce_scatter_sends_.post(comm_.isend(data_ + piece.offset, piece.bytes, ring_.right(), kDataTag));
      --reduce_scatter_sends_left_;
    } else {
      const Chunk piece = chunk(ring_.allgather_send(send.step - ring_.steps()), send.chunk);
      // The first allgather step sends this rank's own segment: its kernel has completed.
      if (send.step == ring_.steps()) final_.add(piece.offset, piece.bytes);
      sends_.post(comm_.isend(data_ + piece.offset, piece.bytes, ring_.right(), kDataTag));
    }
  }
  return true;
}

Progress AllreduceDeviceRing::progress() {
  const int total_steps = 2 * ring_.steps();
  post_ready_sends();
  while (step_ < total_steps) {
    if (in_reduce_scatter(step_)) {
      // Receives of the current and the next step, once no kernel reads their half.
      while (next_receive_step_ < ring_.steps() && next_receive_step_ <= step_ + 1) {
        Event* busy = scratch_free_[next_receive_step_ % 2];
        if (busy != nullptr && !busy->query()) break;
        scratch_free_[next_receive_step_ % 2] = nullptr;
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
    if (in_reduce_scatter(step_)) {
      const Chunk piece = chunk(ring_.reduce_scatter_recv(step_), next_chunk_);
      // data = op(data, received): AllreduceRing's in-place operands.
      stream_->reduce(data_ + piece.offset, receive_slot(step_, next_chunk_), piece.bytes / element_size_, dtype_, op_);
      Event* reduced = next_event();
      pending_.push_back({step_ + 1, next_chunk_, reduced});
      if (next_chunk_ + 1 == chunks_) scratch_free_[step_ % 2] = reduced;
    } else {
      const Chunk piece = chunk(ring_.allgather_recv(step_ - ring_.steps()), next_chunk_);
      final_.add(piece.offset, piece.bytes);
      if (step_ + 1 < total_steps) pending_.push_back({step_ + 1, next_chunk_, nullptr});
    }
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
