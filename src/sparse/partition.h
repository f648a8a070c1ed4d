// Space repartition of Ok-Topk (Phase 1; Li & Hoefler,
// PPoPP 2022, sec. 3.2): the index space [0, n) is cut into P contiguous regions, region q
// owned (reduced) by rank q, so that each owner receives about the same number of
// selected entries.
//
// repartition() steps (every tau calls, collective):
// 1. Each rank takes its ascending selected indices I, c = floor(|I|/P), and its local
//    boundaries b_q = I[q*c] for q = 1..P-1 (pure: local_boundaries()).
// 2. Allreduce (SUM, int64, AllreduceRecursiveDoubling) of P words: the P-1 boundaries and
//    a flag counting ranks with |I| < P. log2 P rounds (+2 when P is not a power of two),
//    8P bytes per message.
// 3. Global boundaries gb_q = floor(sum_q / P); regions [0,gb_1), [gb_1,gb_2), ...,
//    [gb_{P-1}, n) (regions may be empty). If some rank had |I| < P, or P = 1, fall back
//    to equal regions (n/P each, remainder to the last).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "transport/communicator.h"

namespace concord::sparse {

/// P contiguous regions covering [0, n): region q is [start(q), end(q)).
class Regions {
 public:
  Regions() = default;
  /// From the P-1 inner boundaries (non-decreasing, each in [0, n]).
  Regions(int64_t n, const std::vector<int64_t>& boundaries);
  /// Equal regions: n/P each, the remainder to the last.
  static Regions equal(int64_t n, int P);

  int size() const { return static_cast<int>(starts_.size()) - 1; }
  int64_t start(int q) const { return starts_[q]; }
  int64_t end(int q) const { return starts_[q + 1]; }
  /// The P-1 inner boundaries gb_1..gb_{P-1}.
  std::vector<int64_t> boundaries() const { return {starts_.begin() + 1, starts_.end() - 1}; }
  /// For ascending `indices` (all in [0, n)): positions[q] = first position whose index is
  /// in region q or later; P+1 entries, so region q's entries are [positions[q], positions[q+1]).
  std::vector<int64_t> split(const std::vector<int64_t>& indices) const;

 private:
  std::vector<int64_t> starts_{0, 0};  // P+1 entries: 0, gb_1, ..., gb_{P-1}, n
};

/// The local boundaries b_q = indices[q * floor(|I|/P)], q = 1..P-1, of ascending
/// `indices` (|I| >= P). Pure.
std::vector<int64_t> local_boundaries(const std::vector<int64_t>& indices, int P);

/// Steps 1-3 of the header comment: collective and blocking over `comm`; every rank passes
/// its ascending selected indices and the same n. Consensus boundaries are clamped to
/// [0, n], so a mismatched n cannot make regions leave this rank's vector. CommError on
/// transport failure.
Regions repartition(Communicator& comm, ScratchBuffer& scratch, const std::vector<int64_t>& selected, int64_t n);

}  // namespace concord::sparse
