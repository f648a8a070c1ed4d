// ExchangeSchedule: runs a fixed list of pairwise exchange steps over nonblocking
// point-to-point, resumably. It is the engine of the recursive halving / doubling family
// (allreduce_halving_doubling.h, allreduce_recursive_doubling.h, reduce_scatter_halving.h,
// allgather_recursive_doubling.h) and of the step-locked ring reduce-scatter: each of those
// only computes its steps from the pure patterns (patterns/recursive_doubling.h, ring.h).
//
// A step sends one byte range of the buffer to one peer and/or receives one range from one
// peer (either may be absent), then combines what it received: copy it in place, or reduce
// it into the buffer (with the received data as the right or the left operand, so that two
// partners can compute op(a, b) with the same operand order). A step ends when its send and
// its receive have both completed (MPI_Sendrecv semantics), so later steps may overwrite
// what earlier ones sent. Received data to be reduced lands in persistent scratch first
// (out of place, in the output range it reduces into when no step has written it yet).
//
// With a piece size (`chunk_bytes`), every message of more than one piece goes as several
// messages of at most that size, sender and receiver splitting the same byte count the
// same way. A reducing receive then keeps only two pieces in flight, each reduced as soon
// as it lands: the received piece is still in cache when it is reduced, and the scratch
// is two pieces instead of the whole range (on shared memory, where the receiver's own
// core makes the copy, the received half otherwise goes through memory twice: at 64 MiB
// and 2 ranks halving-doubling took 20.6-23.2 ms that way, 15.3-16.4 ms in pieces; at
// 1-16 MiB no difference showed, measured when the pieces were introduced).
//
// Reductions and the copies of the out-of-place calls go through Kernels (algorithms/
// kernels.h), as AllreduceRing's do: the CPU kernels at once on host memory, the device's
// kernels on a stream on device memory. A receive slot is received into again only once
// the kernel reading it is done, a step ends (so later steps may send what it reduced, and
// its range is reported final) only once its last kernel is done, and a range copied from
// the input is sent only once that copy is done.
//
// The same step lists price the algorithms: tally_traffic() sums what every rank's list
// sends, which is by construction what the transport's TrafficCounters count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/kernels.h"
#include "concord/types.h"
#include "patterns/ring.h"
#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

/// What a step does with the bytes it received.
enum class Combine {
  kCopy,        ///< received straight into buffer[recv_offset, +recv_bytes)
  kReduce,      ///< buffer = op(buffer, received)
  kReduceLeft,  ///< buffer = op(received, buffer): the partner's data is the left operand
};

/// One step of a schedule. Offsets and sizes are in bytes from the start of the buffer.
struct ExchangeStep {
  int send_peer = -1;  ///< -1: this step sends nothing
  size_t send_offset = 0;
  size_t send_bytes = 0;
  int recv_peer = -1;  ///< -1: this step receives nothing
  size_t recv_offset = 0;
  size_t recv_bytes = 0;
  Combine combine = Combine::kCopy;
  /// Once this step has ended, its received range holds its final value and no later
  /// step writes it: the schedule reports it (take_final_ranges). Only allreduce step
  /// lists set it.
  bool recv_final = false;
};

/// A step that only sends `bytes` of the buffer to `peer`.
ExchangeStep send_step(int peer, patterns::Segment bytes);
/// A step that sends `out` to `send_peer` and receives `in` from `recv_peer` (a sendrecv).
ExchangeStep sendrecv_step(int send_peer, patterns::Segment out, int recv_peer, patterns::Segment in, Combine combine);
/// A sendrecv with one peer.
inline ExchangeStep exchange_step(int peer, patterns::Segment out, patterns::Segment in, Combine combine) {
  return sendrecv_step(peer, out, peer, in, combine);
}
/// A step that only receives `bytes` of the buffer from `peer` and combines them.
ExchangeStep recv_step(int peer, patterns::Segment bytes, Combine combine);

class ExchangeSchedule {
 public:
  /// Messages go over `comm` with `tag` (one tag per algorithm); `scratch` persists across
  /// calls. `chunk_bytes` > 0 splits every message into pieces of at most that many bytes
  /// (rounded down to a multiple of 8, the largest element; see above); 0 sends every
  /// range as one message. Every rank must use the same value.
  ExchangeSchedule(Communicator& comm, ScratchBuffer& scratch, int tag, size_t chunk_bytes = 0);
  /// The same on the memory `kernels` work on (their scratch holds the receive slots);
  /// `comm` must take pointers of that memory. `kernels` must outlive this object.
  ExchangeSchedule(Communicator& comm, Kernels& kernels, int tag, size_t chunk_bytes = 0);

  /// The number of messages a range of `bytes` goes as with `chunk_bytes` (1 for 0 bytes:
  /// an empty message still goes); tally_traffic() counts with it.
  static size_t pieces(size_t bytes, size_t chunk_bytes);
  /// The size of every piece but the last (SIZE_MAX for `chunk_bytes` 0).
  static size_t piece_size(size_t chunk_bytes);

  /// Starts running `steps` on `buffer`. Reducing steps reduce elements of `dtype` with
  /// `op` (kAverage as kSum); their ranges must be whole elements. `buffer` must stay
  /// valid until progress() returns kDone.
  void start(uint8_t* buffer, std::vector<ExchangeStep> steps, DataType dtype = DataType::kUInt8,
             ReduceOp op = ReduceOp::kSum);
  /// Out of place: runs `steps` as if `buffer` (`buffer_bytes` long) held a copy of `input`
  /// (not overlapping it, or equal to it = start()), without making that copy: a range of
  /// the buffer no step has written yet is sent from `input`, reduced as op(input,
  /// received) straight into the buffer, and only the ranges still unwritten when a step
  /// needs them partly written, or when the schedule ends, are copied from `input`.
  void start_out_of_place(const uint8_t* input, uint8_t* buffer, size_t buffer_bytes, std::vector<ExchangeStep> steps,
                          DataType dtype, ReduceOp op);
  /// Advances as far as completed messages allow; never blocks. Throws CommError on
  /// transport failure.
  Progress progress();
  /// Appends the received ranges of the ended steps marked recv_final since the last
  /// call (AllreduceAlgorithm::take_final_ranges); start() begins a new operation.
  void take_final_ranges(std::vector<ByteRange>& out) { final_.take(out); }

 private:
  // Chooses where `step`'s send reads from, copying what it needs from the input first;
  // returns the ticket of that copy (0: none).
  Kernels::Ticket prepare(const ExchangeStep& step);
  void post(const ExchangeStep& step);
  // Posts the receive of piece `posted_pieces_` of `step` (into the buffer or a scratch slot).
  void post_receive_piece(const ExchangeStep& step);
  // Posts the receive pieces of `step` whose scratch slots are free (windowed steps).
  void post_free_receive_pieces(const ExchangeStep& step);
  // Combines piece `index` of `step`'s received range, once it has landed.
  void combine(const ExchangeStep& step, size_t index);
  size_t pieces_of(size_t bytes) const;  // pieces(bytes, this schedule's chunk_bytes)
  // The byte range of piece `index` of a range of `bytes` bytes, relative to its start.
  patterns::Segment piece(size_t bytes, size_t index) const;
  uint8_t* scratch_slot(size_t index);
  static bool send_overlaps_receive(const ExchangeStep& step);
  // Out of place: true when no byte of [offset, offset + bytes) of the buffer has been
  // written yet (it still stands for `input`); then the caller may read input instead.
  bool unwritten(size_t offset, size_t bytes) const;
  // Out of place: copies the parts of [offset, offset + bytes) not written yet from input;
  // returns the ticket of the last copy (0: none).
  Kernels::Ticket materialize(size_t offset, size_t bytes);
  void mark_written(size_t offset, size_t bytes);

  Communicator& comm_;
  std::unique_ptr<HostKernels> host_kernels_;  // the CPU kernels, when constructed with a ScratchBuffer
  Kernels& kernels_;
  int tag_;
  size_t piece_bytes_;  // SIZE_MAX: one message per range
  uint8_t* buffer_ = nullptr;
  const uint8_t* input_ = nullptr;  // == buffer_ in place
  size_t buffer_bytes_ = 0;
  std::vector<ByteRange> written_;  // out of place: the ranges of buffer_ written so far, sorted
  std::vector<ExchangeStep> steps_;
  DataType dtype_ = DataType::kUInt8;
  ReduceOp op_ = ReduceOp::kSum;
  size_t step_ = 0;
  bool prepared_ = false;  // the current step's send source is chosen (send_source_)
  bool posted_ = false;
  const uint8_t* send_source_ = nullptr;
  Kernels::Ticket send_ready_ = 0;            // the copy the current step's send waits for
  Kernels::Ticket last_kernel_ = 0;           // the last kernel of the current step (or the final copy)
  Kernels::Ticket slot_readers_[2] = {0, 0};  // windowed: the last kernel reading each scratch slot
  bool received_in_buffer_ = false;           // out of place: this step receives into buffer_, not scratch
  bool combine_after_send_ = false;           // this step's reductions write what its send reads
  bool windowed_ = false;                     // its receive pieces go two at a time, into two scratch slots
  RequestSet sends_;                          // the current step's send pieces
  std::deque<RequestPtr> receives_;           // its receive pieces in flight, oldest first
  size_t receive_pieces_ = 0;                 // how many pieces its receive goes as
  size_t posted_pieces_ = 0;                  // how many of them are posted
  size_t combined_pieces_ = 0;                // how many of them are combined
  FinalRanges final_;
};

/// Base of an in-place reduction collective (Interface = AllreduceAlgorithm or
/// ReduceScatterAlgorithm) whose every call runs the step list
/// `Derived::steps(rank, P, count, element_size)` (a static function of the algorithm) on an
/// ExchangeSchedule.
template <typename Interface, typename Derived>
class ScheduledReduction : public Interface {
 public:
  /// Starts reducing `count` elements of `dtype` at `data` with `op` (kAverage as kSum; the
  /// caller scales), in place. Every rank must pass the same count, dtype and op; `data`
  /// must stay valid until progress() returns kDone.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override {
    schedule_.start(static_cast<uint8_t*>(data), Derived::steps(comm_.rank(), comm_.size(), count, dtype_size(dtype)),
                    dtype, op);
  }
  /// Out of place through ExchangeSchedule::start_out_of_place (no copy pass for the
  /// allreduce schedules, whose steps write every byte). It overrides
  /// AllreduceAlgorithm::start_out_of_place; ReduceScatterAlgorithm has no such member.
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
    schedule_.start_out_of_place(static_cast<const uint8_t*>(input), static_cast<uint8_t*>(output),
                                 count * dtype_size(dtype),
                                 Derived::steps(comm_.rank(), comm_.size(), count, dtype_size(dtype)), dtype, op);
  }
  Progress progress() override { return schedule_.progress(); }
  /// The ranges of the steps marked recv_final; this overrides
  /// AllreduceAlgorithm::take_final_ranges when Interface is AllreduceAlgorithm.
  void take_final_ranges(std::vector<ByteRange>& out) { schedule_.take_final_ranges(out); }

 protected:
  /// Messages go over `comm` with `tag` in pieces of `chunk_bytes` (ExchangeSchedule);
  /// `scratch` persists across calls.
  ScheduledReduction(Communicator& comm, ScratchBuffer& scratch, int tag, size_t chunk_bytes = 0)
      : comm_(comm), schedule_(comm, scratch, tag, chunk_bytes) {}
  /// The same on the memory `kernels` work on, over `comm`, which must take pointers of
  /// that memory; `kernels` must outlive this object.
  ScheduledReduction(Communicator& comm, Kernels& kernels, int tag, size_t chunk_bytes = 0)
      : comm_(comm), schedule_(comm, kernels, tag, chunk_bytes) {}

 private:
  Communicator& comm_;
  ExchangeSchedule schedule_;
};

/// Sets `cost`'s exact counts (max and total messages and bytes sent) from the step list
/// of every rank 0..ranks-1, as returned by `steps_of(rank)`, each send going as
/// ExchangeSchedule::pieces(bytes, chunk_bytes) messages.
void tally_traffic(Cost& cost, int ranks, const std::function<std::vector<ExchangeStep>(int)>& steps_of,
                   size_t chunk_bytes = 0);

/// The DeviceSteps of a schedule: kernels = the most reduce kernels any rank of 0..ranks-1
/// launches (one per received piece of a reducing step, ExchangeSchedule::pieces(bytes,
/// chunk_bytes)), messages = `message_rounds` (the algorithm's cost().rounds, which already
/// counts its pieces). Zero for one rank.
DeviceSteps schedule_device_steps(int ranks, const std::function<std::vector<ExchangeStep>(int)>& steps_of,
                                  size_t chunk_bytes, double message_rounds);

}  // namespace concord
