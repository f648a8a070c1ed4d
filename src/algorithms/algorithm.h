// The shapes every collective algorithm shares (after UCC's init/start/progress tasks): start()
// posts the first messages, progress() advances as far as completed messages allow and
// says whether the operation is done. One progress thread can so drive an algorithm
// without blocking on any single message.
//
// One abstract class per collective fixes start()'s arguments, so the registry
// (algorithms/registry.h) can hand out any algorithm of a collective behind one type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/backoff.h"
#include "concord/types.h"

namespace concord {

enum class Progress { kInProgress, kDone };

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// Advances the operation; never blocks. Throws CommError on transport failure.
  virtual Progress progress() = 0;
};

/// A byte range [offset, offset + bytes) of a collective's buffer.
struct ByteRange {
  size_t offset = 0;
  size_t bytes = 0;
};

/// In-place allreduce of `count` elements of `dtype` at `data` with `op` (kAverage reduces
/// as kSum; the caller scales). Every rank calls start() with the same count, dtype and
/// op, and ends with a bit-identical result. `data` stays valid until kDone.
///
/// Per-range completion (C-Cube's "gradient queuing", Cho et al.,
/// docs/architecture.md): take_final_ranges() hands out the byte ranges of `data` that
/// have become final on this rank, so a caller can consume them before the whole
/// operation ends.
class AllreduceAlgorithm : public Algorithm {
 public:
  virtual void start(void* data, size_t count, DataType dtype, ReduceOp op) = 0;

  /// Out of place: the same allreduce of the `count` elements at `input`, its result
  /// written to `output` (per-range offsets are from `output`); `input` is only read and
  /// must stay unchanged and valid until kDone. input == output is start(output, ...);
  /// otherwise the two must not overlap. This default copies input to output and then
  /// reduces in place (one extra pass over the data); AllreduceRing and the exchange
  /// schedules (halving-doubling, recursive doubling) override it to read `input` where
  /// the in-place algorithm first reads its buffer and write every element of `output`
  /// once, so out of place costs what in place costs; AllreduceMpi passes both buffers to
  /// MPI_Allreduce.
  virtual void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op);

  /// Appends to `out` the byte ranges of `data` (offsets from `data`) that became final on
  /// this rank since the last call in this operation (start() begins a new operation).
  /// Contract: a range is appended only once its bytes hold the final result in memory
  /// on this rank and the algorithm will neither write nor reduce into them again; ranges
  /// are never empty and never overlap each other (within one operation); ranges are
  /// whole elements. Call it only between progress() calls, on the progress thread.
  /// Completeness: an algorithm may report nothing before kDone. FinalRangeCollector
  /// adds whatever was not reported once progress() returned kDone, so with it the union
  /// is always the whole buffer; this default reports nothing (the whole buffer becomes
  /// final at kDone). AllreduceRing and the halving-doubling schedule report
  /// segments as they arrive, and cover the whole buffer themselves by kDone.
  virtual void take_final_ranges(std::vector<ByteRange>& out) { (void)out; }

  /// Says that the buffer of the next start() holds tensors of these byte sizes back to
  /// back (a fused response; their sum is the buffer's bytes). Algorithms whose result
  /// depends on where tensors begin use it -- AllreduceAdasum takes its dot products per
  /// tensor --; the element-wise ones ignore it (this default). Applies to the next start()
  /// only; without a call the buffer is one tensor.
  virtual void set_tensors(const std::vector<size_t>& tensor_bytes) { (void)tensor_bytes; }
};

/// Bookkeeping of the ranges of one operation reported final: algorithms add() ranges as
/// they become final and take() hands the new ones out; finish() marks everything final,
/// adding the parts of the buffer not added yet. Not thread-safe.
class FinalRanges {
 public:
  /// Starts a new operation on a buffer of `buffer_bytes` bytes; nothing is final.
  void reset(size_t buffer_bytes);
  /// Records [offset, offset + bytes) as final (ignored when bytes == 0). The caller
  /// guarantees it does not overlap any range added before in this operation.
  void add(size_t offset, size_t bytes);
  /// Everything is final: adds the gaps between the ranges added so far (once).
  void finish();
  /// Moves the ranges added since the last take() to the end of `out`.
  void take(std::vector<ByteRange>& out);

 private:
  size_t buffer_bytes_ = 0;
  bool finished_ = false;
  std::vector<ByteRange> added_;    // every range of this operation
  std::vector<ByteRange> pending_;  // not taken yet
};

/// For a driver of an AllreduceAlgorithm: after each progress() call, collect() appends the
/// ranges the algorithm reports final and, once progress() returned kDone, the rest of the
/// buffer, so the union of everything collected is the whole buffer exactly at kDone even
/// for algorithms that do not override take_final_ranges().
class FinalRangeCollector {
 public:
  /// Starts collecting for `algorithm`, just started on a buffer of `buffer_bytes` bytes.
  FinalRangeCollector(AllreduceAlgorithm& algorithm, size_t buffer_bytes);
  /// Appends to `out` what became final, given what the last progress() returned.
  void collect(Progress state, std::vector<ByteRange>& out);

 private:
  AllreduceAlgorithm& algorithm_;
  FinalRanges ranges_;
  std::vector<ByteRange> taken_;
};

/// Allgather of variable-size blocks (allgatherv) into `output`, which holds P blocks back
/// to back in rank order, block r being `block_bytes[r]` bytes; this rank's own block is
/// already in place. Every rank passes the same block_bytes.
class AllgatherAlgorithm : public Algorithm {
 public:
  virtual void start(void* output, const std::vector<size_t>& block_bytes) = 0;
};

/// Broadcast of `bytes` bytes at `data` from `root`, in place on every rank.
class BroadcastAlgorithm : public Algorithm {
 public:
  virtual void start(void* data, size_t bytes, int root) = 0;
};

/// In-place reduce of `count` elements of `dtype` at `data` with `op` to `root`: afterwards
/// the root's `data` holds the reduction over all ranks (kAverage reduces as kSum; the
/// caller scales); the other ranks' `data` holds partial results (unspecified). Every rank
/// passes the same count, dtype, op and root; `data` stays valid until kDone. A phase of
/// composed algorithms (AllreduceHierarchical), not a runtime collective.
class ReduceAlgorithm : public Algorithm {
 public:
  virtual void start(void* data, size_t count, DataType dtype, ReduceOp op, int root) = 0;
};

/// In-place reduce-scatter of `count` elements at `data`: afterwards rank r's block,
/// elements [patterns::segment(count, P, r)), holds the reduction over all ranks; the rest
/// of `data` is unspecified. Same argument rules as AllreduceAlgorithm.
class ReduceScatterAlgorithm : public Algorithm {
 public:
  virtual void start(void* data, size_t count, DataType dtype, ReduceOp op) = 0;
};

/// All-to-all with equal blocks: `send` holds P blocks of `block_bytes` bytes, block j for
/// rank j; afterwards block i of `recv` holds what rank i sent to this rank. send and recv
/// must not overlap.
class AlltoallAlgorithm : public Algorithm {
 public:
  virtual void start(const void* send, void* recv, size_t block_bytes) = 0;
};

/// Calls progress() until kDone, waiting with a Backoff (common/backoff.h) between calls, so oversubscribed
/// ranks do not starve each other.
void run_to_completion(Algorithm& algorithm);

/// A grow-only byte buffer reused across operations, so large collectives do not pay for
/// fresh page faults on every call.
class ScratchBuffer {
 public:
  /// Returns a buffer of at least `bytes` bytes (contents unspecified).
  uint8_t* get(size_t bytes) {
    if (storage_.size() < bytes) storage_.resize(bytes);
    return storage_.data();
  }
  size_t capacity() const { return storage_.size(); }

 private:
  std::vector<uint8_t> storage_;
};

}  // namespace concord
