// Kernels: how an algorithm reduces, copies and scales its buffers' bytes without knowing
// where they live (UCC's executor: an algorithm posts reductions through ucc_dt_reduce on
// the ucc_ee_executor of its team, never asking the memory type). The ring, the pipelined
// trees (TreePipeline) and the exchange schedules (halving-doubling, recursive doubling)
// get theirs at construction: HostKernels on the context's ScratchBuffer for the host rows
// of the registry (algorithms/registry.h), the DeviceKernels a device row owns for the
// device rows (OnDevice, algorithms/allreduce_device.h):
//   HostKernels (below)        the CPU kernels of common/reduce.h, run at once;
//   DeviceKernels              the device's kernels on one stream, each followed by an
//   (algorithms/device_kernels.h)  event; work completes later, in posting order.
// Every call returns a Ticket; done(ticket) says, without blocking, whether that work (and
// all posted before it) has completed, so an algorithm sends a reduced chunk, or reuses a
// receive slot, only once the kernel that wrote or read it is done. Results are bit-identical
// across implementations (the device kernels are the CPU kernels' per-element functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "algorithms/algorithm.h"
#include "concord/types.h"
#include "device/device.h"  // CopySpan

namespace concord {

class Kernels {
 public:
  /// Names one posted piece of work; 0 names nothing (always done). Increasing.
  using Ticket = uint64_t;

  virtual ~Kernels() = default;
  /// dst[i] = op(a[i], src[i]) for i < count (common/reduce.h's reduce_into rules: dst may
  /// be a, or src -- a received operand reduced where it lies; kAverage reduces as kSum).
  /// Throws InvalidArgument for an unknown dtype or op.
  virtual Ticket reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) = 0;
  /// Copies `bytes` bytes within this memory kind; the ranges must not overlap.
  virtual Ticket copy(void* dst, const void* src, size_t bytes) = 0;
  /// Copies every span (within this memory kind; destinations must not overlap) in as few
  /// launches as the implementation can: packing tensors into a fusion buffer and out.
  virtual Ticket copy_batch(const std::vector<CopySpan>& spans) = 0;
  /// dst[i] = src[i] * factor (common/reduce.h's scale_buffer rules; dst may equal src).
  virtual Ticket scale(void* dst, const void* src, size_t count, DataType dtype, double factor) = 0;
  /// True once the work `ticket` names, and everything posted before it, has completed.
  /// Never blocks. Throws DeviceError when the device reported a failure.
  virtual bool done(Ticket ticket) = 0;
  /// Blocks until everything posted has completed.
  virtual void synchronize() = 0;
  /// A buffer of at least `bytes` bytes in this memory kind (receive slots), contents
  /// unspecified; valid until the next call with more bytes, which may move it only after
  /// synchronize() (so work posted on the old buffer is complete).
  virtual uint8_t* scratch(size_t bytes) = 0;

  /// Every non-empty span copied, multiplied by `factor` (elements of `dtype`) unless it
  /// is 1: one copy_batch, or one scale per span. Returns the ticket of the last work
  /// posted (0 when there was nothing to do).
  Ticket copy_scaled(const std::vector<CopySpan>& spans, DataType dtype, double factor);
};

/// The CPU kernels on host memory: every call runs at once (tickets are always done);
/// scratch() is the ScratchBuffer given, shared with the other algorithms of a context.
class HostKernels : public Kernels {
 public:
  /// `scratch` must outlive this object.
  explicit HostKernels(ScratchBuffer& scratch) : scratch_(scratch) {}
  Ticket reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) override;
  Ticket copy(void* dst, const void* src, size_t bytes) override;
  Ticket copy_batch(const std::vector<CopySpan>& spans) override;
  Ticket scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override;
  bool done(Ticket) override { return true; }
  void synchronize() override {}
  uint8_t* scratch(size_t bytes) override { return scratch_.get(bytes); }

 private:
  ScratchBuffer& scratch_;
};

/// Work an algorithm may start only once a kernel is done -- the send of a chunk a kernel
/// reduced, a range to report final -- kept in posting order (the order the peer posts its
/// receives in). Shared by the algorithms that reduce through Kernels (AllreduceRing,
/// TreePipeline). Not thread-safe.
template <typename Item>
class TicketQueue {
 public:
  /// Forgets every item (a new operation).
  void clear() { items_.clear(); }
  bool empty() const { return items_.empty(); }
  /// Queues `item`, to run once the work `ready` names is done (0: at the next run_ready()).
  void push(const Item& item, Kernels::Ticket ready) { items_.push_back({item, ready}); }
  /// Calls run(item) for the items at the front whose tickets `kernels` reports done, in
  /// order, stopping at the first that is not; true when none is left. Never blocks.
  template <typename Run>
  bool run_ready(Kernels& kernels, Run&& run) {
    while (!items_.empty()) {
      if (!kernels.done(items_.front().ready)) return false;
      const Item item = items_.front().item;
      items_.pop_front();
      run(item);
    }
    return true;
  }

 private:
  struct Entry {
    Item item;
    Kernels::Ticket ready;
  };
  std::deque<Entry> items_;
};

}  // namespace concord
