// The shapes every collective algorithm shares (STYLE.md: resumable algorithms): start()
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

#include "concord/types.h"

namespace concord {

enum class Progress { kInProgress, kDone };

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// Advances the operation; never blocks. Throws CommError on transport failure.
  virtual Progress progress() = 0;
};

/// In-place allreduce of `count` elements of `dtype` at `data` with `op` (kAverage reduces
/// as kSum; the caller scales). Every rank calls start() with the same count, dtype and
/// op, and ends with a bit-identical result. `data` stays valid until kDone.
class AllreduceAlgorithm : public Algorithm {
 public:
  virtual void start(void* data, size_t count, DataType dtype, ReduceOp op) = 0;
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

/// Calls progress() until kDone, yielding the CPU whenever no message has completed, so
/// oversubscribed ranks do not starve each other.
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
