#include "algorithms/exchange_schedule.h"

#include <algorithm>
#include <limits>

#include "common/enforce.h"

namespace concord {
namespace {
// Receive pieces of a reducing step in flight at once: one lands while the one before is
// reduced (the size of ExchangeSchedule::slot_readers_).
constexpr size_t kReceiveWindow = 2;
}  // namespace

size_t ExchangeSchedule::piece_size(size_t chunk_bytes) {
  if (chunk_bytes == 0) return std::numeric_limits<size_t>::max();
  return std::max<size_t>(8, chunk_bytes / 8 * 8);  // whole elements of every dtype
}

ExchangeStep send_step(int peer, patterns::Segment bytes) {
  ExchangeStep step;
  step.send_peer = peer;
  step.send_offset = bytes.offset;
  step.send_bytes = bytes.count;
  return step;
}

ExchangeStep recv_step(int peer, patterns::Segment bytes, Combine combine) {
  ExchangeStep step;
  step.recv_peer = peer;
  step.recv_offset = bytes.offset;
  step.recv_bytes = bytes.count;
  step.combine = combine;
  return step;
}

ExchangeStep sendrecv_step(int send_peer, patterns::Segment out, int recv_peer, patterns::Segment in, Combine combine) {
  ExchangeStep step = send_step(send_peer, out);
  step.recv_peer = recv_peer;
  step.recv_offset = in.offset;
  step.recv_bytes = in.count;
  step.combine = combine;
  return step;
}

ExchangeSchedule::ExchangeSchedule(Communicator& comm, ScratchBuffer& scratch, int tag, size_t chunk_bytes)
    : comm_(comm),
      host_kernels_(std::make_unique<HostKernels>(scratch)),
      kernels_(*host_kernels_),
      tag_(tag),
      piece_bytes_(piece_size(chunk_bytes)) {}

ExchangeSchedule::ExchangeSchedule(Communicator& comm, Kernels& kernels, int tag, size_t chunk_bytes)
    : comm_(comm), kernels_(kernels), tag_(tag), piece_bytes_(piece_size(chunk_bytes)) {}

size_t ExchangeSchedule::pieces(size_t bytes, size_t chunk_bytes) {
  return bytes == 0 ? 1 : (bytes - 1) / piece_size(chunk_bytes) + 1;
}

size_t ExchangeSchedule::pieces_of(size_t bytes) const { return bytes == 0 ? 1 : (bytes - 1) / piece_bytes_ + 1; }

patterns::Segment ExchangeSchedule::piece(size_t bytes, size_t index) const {
  const size_t offset = index * piece_bytes_;
  return {offset, std::min(piece_bytes_, bytes - offset)};
}

// True when `step`'s send reads a byte of the range its receive reduces into (recursive
// doubling's whole-buffer exchange): its reductions may then have to wait for the send.
bool ExchangeSchedule::send_overlaps_receive(const ExchangeStep& step) {
  return step.send_peer >= 0 && step.recv_peer >= 0 && step.send_offset < step.recv_offset + step.recv_bytes &&
         step.recv_offset < step.send_offset + step.send_bytes;
}

uint8_t* ExchangeSchedule::scratch_slot(size_t index) {
  return kernels_.scratch(0) + (windowed_ ? index % kReceiveWindow : index) * piece_bytes_;
}

void ExchangeSchedule::start(uint8_t* buffer, std::vector<ExchangeStep> steps, DataType dtype, ReduceOp op) {
  start_out_of_place(buffer, buffer, 0, std::move(steps), dtype, op);
}

void ExchangeSchedule::start_out_of_place(const uint8_t* input, uint8_t* buffer, size_t buffer_bytes,
                                          std::vector<ExchangeStep> steps, DataType dtype, ReduceOp op) {
  buffer_ = buffer;
  input_ = input;
  buffer_bytes_ = input == buffer ? 0 : buffer_bytes;
  written_.clear();
  last_kernel_ = 0;
  // Nothing to exchange: the copy is the result.
  if (steps.empty()) last_kernel_ = materialize(0, buffer_bytes_);
  steps_ = std::move(steps);
  dtype_ = dtype;
  op_ = op;
  step_ = 0;
  prepared_ = false;
  posted_ = false;
  sends_.clear();
  receives_.clear();
  final_.reset(0);  // never finish()ed: only the marked ranges are reported
  size_t scratch_bytes = 0;
  for (const auto& step : steps_) {
    if (step.recv_peer < 0 || step.combine == Combine::kCopy) continue;
    // Two pieces when the step's reductions go as its pieces land; the whole range when
    // they may have to wait for its send (see post()).
    const bool one_piece = piece_bytes_ >= step.recv_bytes;
    scratch_bytes = std::max(
        scratch_bytes, !send_overlaps_receive(step) && !one_piece ? kReceiveWindow * piece_bytes_ : step.recv_bytes);
  }
  kernels_.scratch(scratch_bytes);  // grown before any receive lands in it
}

bool ExchangeSchedule::unwritten(size_t offset, size_t bytes) const {
  if (input_ == buffer_) return false;
  return std::none_of(written_.begin(), written_.end(), [&](const ByteRange& range) {
    return range.offset < offset + bytes && offset < range.offset + range.bytes;
  });
}

Kernels::Ticket ExchangeSchedule::materialize(size_t offset, size_t bytes) {
  if (input_ == buffer_ || bytes == 0) return 0;
  Kernels::Ticket copied = 0;
  size_t cursor = offset;
  const size_t end = offset + bytes;
  for (const ByteRange& range : written_) {  // sorted by offset, never overlapping
    if (range.offset >= end) break;
    if (range.offset > cursor) copied = kernels_.copy(buffer_ + cursor, input_ + cursor, range.offset - cursor);
    cursor = std::max(cursor, range.offset + range.bytes);
  }
  if (cursor < end) copied = kernels_.copy(buffer_ + cursor, input_ + cursor, end - cursor);
  mark_written(offset, bytes);
  return copied;
}

void ExchangeSchedule::mark_written(size_t offset, size_t bytes) {
  if (input_ == buffer_ || bytes == 0) return;
  // Insert, then merge the ranges that now overlap or touch.
  written_.push_back({offset, bytes});
  std::sort(written_.begin(), written_.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> merged;
  for (const ByteRange& range : written_) {
    if (!merged.empty() && range.offset <= merged.back().offset + merged.back().bytes) {
      const size_t end = std::max(merged.back().offset + merged.back().bytes, range.offset + range.bytes);
      merged.back().bytes = end - merged.back().offset;
    } else {
      merged.push_back(range);
    }
  }
  written_ = std::move(merged);
}

Kernels::Ticket ExchangeSchedule::prepare(const ExchangeStep& step) {
  // Out of place, a range no step has written yet is sent straight from the input; a range
  // partly written is completed from the input first. Decided before the receive is
  // posted, which then goes first (no unexpected-message copy on arrival).
  send_source_ = buffer_;
  if (step.send_peer < 0) return 0;
  if (unwritten(step.send_offset, step.send_bytes)) {
    send_source_ = input_;
    return 0;
  }
  return materialize(step.send_offset, step.send_bytes);
}

void ExchangeSchedule::post(const ExchangeStep& step) {
  const uint8_t* source = send_source_;
  posted_pieces_ = combined_pieces_ = receive_pieces_ = 0;
  // A piece is combined as it lands unless that writes what this step's send still reads
  // (recursive doubling sends the whole buffer it reduces into): then, as MPI_Sendrecv, not
  // before the send has completed.
  combine_after_send_ = source == buffer_ && send_overlaps_receive(step);
  if (step.recv_peer >= 0) {
    // Out of place, a reduced range no step has written yet (so the send does not read
    // it) receives straight into the buffer, where its reduction then goes: the buffer's
    // lines are in cache when the reduction writes them.
    received_in_buffer_ = step.combine != Combine::kCopy && unwritten(step.recv_offset, step.recv_bytes);
    receive_pieces_ = pieces_of(step.recv_bytes);
    // Pieces combined in order as they land keep two in flight (each one's slot is free
    // again once it is combined); the others all go at once.
    windowed_ = step.combine != Combine::kCopy && !combine_after_send_;
    slot_readers_[0] = slot_readers_[1] = 0;  // the last step's kernels are done
    const size_t window = windowed_ ? kReceiveWindow : receive_pieces_;
    while (posted_pieces_ < std::min(window, receive_pieces_)) post_receive_piece(step);
  }
  if (step.send_peer >= 0) {
    const size_t count = pieces_of(step.send_bytes);
    for (size_t i = 0; i < count; ++i) {
      const patterns::Segment out = piece(step.send_bytes, i);
      sends_.post(comm_.isend(source + step.send_offset + out.offset, out.count, step.send_peer, tag_));
    }
  }
  posted_ = true;
}

void ExchangeSchedule::post_receive_piece(const ExchangeStep& step) {
  const size_t index = posted_pieces_++;
  const patterns::Segment in = piece(step.recv_bytes, index);
  uint8_t* into = step.combine == Combine::kCopy || received_in_buffer_ ? buffer_ + step.recv_offset + in.offset
                                                                        : scratch_slot(index);
  receives_.push_back(comm_.irecv(into, in.count, step.recv_peer, tag_));
}

void ExchangeSchedule::post_free_receive_pieces(const ExchangeStep& step) {
  // Windowed: piece i goes into slot i mod 2 once the kernel reading that slot is done.
  while (posted_pieces_ < receive_pieces_ && posted_pieces_ < combined_pieces_ + kReceiveWindow &&
         kernels_.done(slot_readers_[posted_pieces_ % kReceiveWindow]))
    post_receive_piece(step);
}

void ExchangeSchedule::combine(const ExchangeStep& step, size_t index) {
  const patterns::Segment in = piece(step.recv_bytes, index);
  const size_t offset = step.recv_offset + in.offset;
  const size_t bytes = in.count;
  if (step.combine == Combine::kCopy) return mark_written(offset, bytes);
  const size_t element = dtype_size(dtype_);
  CONCORD_ENFORCE(bytes % element == 0, InternalError, "exchange step reduces ", bytes,
                  " bytes, not a whole number of ", dtype_name(dtype_), " elements");
  uint8_t* target = buffer_ + offset;
  uint8_t* received = received_in_buffer_ ? target : scratch_slot(index);
  const size_t count = bytes / element;
  // kReduce: target = op(target, received); kReduceLeft: target = op(received, target).
  // Out of place, on first touch, the input stands for the target (no copy pass).
  const bool first_touch = unwritten(offset, bytes);
  const uint8_t* own = first_touch ? input_ + offset : target;
  if (first_touch) {
    last_kernel_ = step.combine == Combine::kReduce ? kernels_.reduce(target, own, received, count, dtype_, op_)
                                                    : kernels_.reduce(target, received, own, count, dtype_, op_);
  } else {
    materialize(offset, bytes);  // a copy posted before the reduction
    if (step.combine == Combine::kReduce) {
      last_kernel_ = kernels_.reduce(target, target, received, count, dtype_, op_);
    } else {
      // Reduced where it was received, then copied: the partner's kReduce runs the same
      // in-place loop (dst = op(dst, src)), so both hold the same bits, NaN payloads included.
      kernels_.reduce(received, received, target, count, dtype_, op_);
      last_kernel_ = kernels_.copy(target, received, bytes);
    }
  }
  if (windowed_ && !received_in_buffer_) slot_readers_[index % kReceiveWindow] = last_kernel_;
  if (first_touch) mark_written(offset, bytes);
}

Progress ExchangeSchedule::progress() {
  while (step_ < steps_.size()) {
    const ExchangeStep& step = steps_[step_];
    if (!posted_) {
      if (!prepared_) {
        send_ready_ = prepare(step);
        prepared_ = true;
      }
      if (!kernels_.done(send_ready_)) return Progress::kInProgress;
      post(step);
    }
    // Receive pieces are combined in order, each as it lands, and the next one posted.
    const bool sent = sends_.reap();
    // Combining waits for the send, but the receives are polled meanwhile: over a transport
    // whose send completes only once the peer's receive has progressed (DirectCommunicator:
    // the receiver's copy completes the sender's request) both partners would otherwise
    // wait for each other. A completed receive leaves a null slot, which reaps at once.
    if (!sent && combine_after_send_)
      for (RequestPtr& receive : receives_) reap_one(receive);
    while (!receives_.empty() && (sent || !combine_after_send_) && reap_one(receives_.front())) {
      receives_.pop_front();
      combine(step, combined_pieces_++);
      if (windowed_) {
        post_free_receive_pieces(step);
      } else if (posted_pieces_ < receive_pieces_) {
        post_receive_piece(step);
      }
    }
    if (windowed_) post_free_receive_pieces(step);
    // The step ends once its last kernel is done: later steps send what it reduced.
    if (!sent || combined_pieces_ < receive_pieces_ || !kernels_.done(last_kernel_)) return Progress::kInProgress;
    if (step.recv_final && step.recv_peer >= 0) final_.add(step.recv_offset, step.recv_bytes);
    prepared_ = posted_ = false;
    ++step_;
    if (step_ == steps_.size()) last_kernel_ = materialize(0, buffer_bytes_);  // out of place: what no step wrote
  }
  return kernels_.done(last_kernel_) ? Progress::kDone : Progress::kInProgress;
}

DeviceSteps schedule_device_steps(int ranks, const std::function<std::vector<ExchangeStep>(int)>& steps_of,
                                  size_t chunk_bytes, double message_rounds) {
  if (ranks == 1) return {};
  double kernels = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    double launches = 0;
    for (const auto& step : steps_of(rank))
      if (step.recv_peer >= 0 && step.combine != Combine::kCopy)
        launches += static_cast<double>(ExchangeSchedule::pieces(step.recv_bytes, chunk_bytes));
    kernels = std::max(kernels, launches);
  }
  return {kernels, message_rounds};
}

void tally_traffic(Cost& cost, int ranks, const std::function<std::vector<ExchangeStep>(int)>& steps_of,
                   size_t chunk_bytes) {
  for (int rank = 0; rank < ranks; ++rank) {
    uint64_t messages = 0, bytes = 0;
    for (const auto& step : steps_of(rank)) {
      if (step.send_peer < 0) continue;
      messages += ExchangeSchedule::pieces(step.send_bytes, chunk_bytes);
      bytes += step.send_bytes;
    }
    cost.max_messages_sent = std::max(cost.max_messages_sent, messages);
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, bytes);
    cost.total_messages_sent += messages;
    cost.total_bytes_sent += bytes;
  }
}

}  // namespace concord
