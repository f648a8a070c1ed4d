// Pieces the allgather-based sparse baselines share (TopkA, Gaussiank, gTopk, TopkDSA):
// SparseAccumulator sums gathered COO entries in a fixed order; take_entries() turns
// selected indices into a COO block; zero_delivered() applies the residual rule.
//
// SparseAccumulator: scatter-add of sparse (index, value) entries into a dense float32
// buffer that remembers which entries were touched, so a call costs O(entries added) after
// the first (the buffer of n floats is zeroed once and cleaned entry by entry). Entries are
// summed in the order they are added, starting from +0.0f: callers that add in one fixed
// order (e.g. rank order) get the same bits on every rank.
#pragma once

#include <cstdint>
#include <vector>

#include "sparse/coo.h"
#include "sparse/sparse_allreduce.h"

namespace concord::sparse {

class SparseAccumulator {
 public:
  /// Starts a new sum over indices [0, n): everything zero, nothing touched.
  void reset(int64_t n);
  /// sum[index] += value. `index` must lie in [0, n) (not checked here).
  void add(int64_t index, float value) {
    if (!touched_[index]) {
      touched_[index] = 1;
      order_.push_back(index);
    }
    sum_[index] += value;
  }
  /// Moves the touched entries whose sum is not exactly zero to `out` in ascending index
  /// order, each value divided by `divisor` (e.g. P: the same float operation on every
  /// rank), appending to what `out` holds; then clears them (ready for more adds).
  void extract(SparseResult& out, float divisor = 1.0f);

 private:
  std::vector<float> sum_;
  std::vector<uint8_t> touched_;
  std::vector<int64_t> order_;
};

/// U of gathered entries: clears `out`, sums the entries of `all` in their order (blocks
/// in rank order give the same bits on every rank), drops exact zeros and divides by
/// `divisor`; `out` ends in ascending index order. Throws MismatchError when an index lies
/// outside [0, n) (ranks passed different n).
void sum_entries(SparseAccumulator& accumulator, int64_t n, const CooBlock& all, float divisor, SparseResult& out);

/// `out` (replaced) = the entries (j, dense[j]) for j in `indices`, in that order.
void take_entries(const float* dense, const std::vector<int64_t>& indices, CooBlock& out);

/// The residual rule of the sparse baselines: zeroes acc[j] for every j of `selected`
/// (ascending) that appears in `result.indices` (ascending), i.e. the selected entries that
/// reached U. O(|selected| + |result|).
void zero_delivered(float* acc, const std::vector<int64_t>& selected, const SparseResult& result);

}  // namespace concord::sparse
