// One KVStore collective as a resumable operation: the cross-rank key check, then, when
// every rank agrees, Concord's own algorithm from the registry (algorithms/registry.h): an
// allreduce for push, a broadcast from rank 0 for init. A push of an initialised key first
// runs the decentralised KeyDigestExchange (kvstore/key_digest.h) and needs the full
// KeyCheck through rank 0 (kvstore/key_check.h) only when the digests differ; init always
// runs the full KeyCheck. KVStore's funneled design drives it with run_to_completion() on the pushing
// thread; the concurrent and depchain designs hand it to a CollectiveDriver thread.
//
// Bytes on the wire: the digest's log2 P messages of 40 B per rank (push) and, when it
// fails or for init, KeyCheck's 2(P-1) small messages, then the selected algorithm's
// (docs/algorithms.md), e.g. ring allreduce 2(P-1)/P * n per rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "kvstore/key_check.h"
#include "kvstore/key_digest.h"

namespace concord::kvstore {

/// How the key checks of a communicator went (counted on every rank alike).
struct KeyCheckStats {
  uint64_t fast = 0;  ///< pushes whose digest agreed: no coordinator round
  uint64_t full = 0;  ///< full KeyChecks through rank 0 (init, and pushes whose digest failed)
};

/// One communicator of a KVStore with the algorithm instances (and their scratch) that
/// run on it. Used by one thread at a time (the KVStore serialises its collectives per
/// communicator).
class CommSlot {
 public:
  /// `forced`: allreduce algorithm name ("" = cost model). `nonblocking_only` excludes
  /// algorithms whose progress() blocks (the MPI library's own allreduce): required where
  /// one thread drives collectives of several communicators at once.
  CommSlot(std::unique_ptr<Communicator> comm, std::string forced, bool nonblocking_only, size_t chunk_bytes,
           CostParams params);
  Communicator& comm() { return *comm_; }
  /// The allreduce algorithm for `count` elements of `dtype` with `op` (selected by
  /// select_algorithm, created once per name). Throws InvalidArgument for an unknown
  /// forced name.
  AllreduceAlgorithm& allreduce(size_t count, DataType dtype, ReduceOp op);
  /// The broadcast algorithm for `bytes` bytes, as allreduce().
  BroadcastAlgorithm& broadcast(size_t bytes);
  /// Counts one key check (fast: the digest agreed). Thread-safe.
  void count_check(bool fast) { (fast ? fast_checks_ : full_checks_).fetch_add(1, std::memory_order_relaxed); }
  /// The checks counted so far. Thread-safe.
  KeyCheckStats check_stats() const { return {fast_checks_.load(), full_checks_.load()}; }

 private:
  AlgorithmContext context();

  std::unique_ptr<Communicator> comm_;
  std::string forced_;
  bool nonblocking_only_;
  size_t chunk_bytes_;
  CostParams params_;
  ScratchBuffer scratch_;
  std::map<std::string, std::unique_ptr<AllreduceAlgorithm>> allreduces_;
  std::map<std::string, std::unique_ptr<BroadcastAlgorithm>> broadcasts_;
  std::atomic<uint64_t> fast_checks_{0};
  std::atomic<uint64_t> full_checks_{0};
};

/// The key check of `mine` (push of a `verified` key: the digest, and the KeyCheck only
/// if the digests differ; otherwise the KeyCheck), then (push) an in-place allreduce of mine.num_elements elements of
/// mine.dtype at `data` with mine.op (kAverage divides by P afterwards), or (init) a
/// broadcast of the bytes at `data` from rank 0. `data` may be null when this rank reported
/// a problem (the collective is then skipped everywhere) or the tensor is empty.
class KeyCollective : public Algorithm {
 public:
  /// `verified`: this rank holds mine.key initialised (its dtype and shape were checked
  /// across ranks by init); only then may a push take the digest's fast path.
  KeyCollective(CommSlot& slot, const KeyHeader& mine, void* data, bool verified);
  /// Advances; never blocks (unless the slot allows a blocking algorithm). Throws
  /// MismatchError / InvalidArgument (on every rank alike) when the check fails,
  /// CommError on transport failure.
  Progress progress() override;

 private:
  enum class Phase { kDigest, kCheck, kCollective, kDone };
  void start_collective();

  CommSlot& slot_;
  KeyHeader mine_;
  void* data_;
  Phase phase_ = Phase::kCheck;
  std::optional<KeyDigestExchange> digest_;
  std::optional<KeyCheck> check_;
  Algorithm* collective_ = nullptr;
};

}  // namespace concord::kvstore
