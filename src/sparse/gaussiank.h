// SparseAllreduceGaussianK ("gaussiank"), the Gaussiank baseline (Shi et al., "Understanding
// Top-k Sparsification in Distributed Deep Learning", 2019; compared against in Li &
// Hoefler, PPoPP 2022; docs/algorithms.md, "Sparse baselines"): each rank picks its
// entries by a threshold estimated from a normal fit of acc instead of an exact top-k, so
// the number selected varies per rank and call.
//
// Steps (SelectGatherSum, sparse/baseline.h) for P ranks, n entries, density d:
//   1. th_i = gaussian_threshold(acc_i, n, d, options.gaussian_corrections) (sparse/topk.h:
//      mean + Phi^-1(1 - d/2) std, corrected while the count is outside [3k/4, 5k/4]);
//      S_i = { j : |acc_i[j]| >= th_i } (> with options.strict), ascending.
//   2. Allgather of {c_i = |S_i|, n} (recursive doubling of two int64 per rank); ranks
//      passing different n all throw MismatchError (check_lengths) before any entry moves.
//   3. Ring allgatherv of the COO entries of every rank (nothing when every c_i is 0).
//   4. U[j] = (sum over ranks i in rank order with j in S_i of acc_i[j]) / P, exact zeros
//      dropped; identical bits on every rank.
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U.
// Bytes sent by rank r: the {count, n} allgather's CooGather::words_traffic(P, r, 2)
// (16(P-1) on a power of two, log2 P messages) + e (C - c_{(r+1) mod P}) in P-1 messages (entries), C = sum_i c_i, e = 8 with int32
// indices (12 with int64). About 2 C (P-1)/P words, with C ~ P k: like TopkA, it grows
// with P. n = 0 sends only the length check.
#pragma once

#include "sparse/baseline.h"

namespace concord::sparse {

class SparseAllreduceGaussianK : public SelectGatherSum {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density, .strict and
  /// .gaussian_corrections. Throws InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceGaussianK(Communicator& comm, const SparseOptions& options) : SelectGatherSum(comm, options) {}
  const char* name() const override { return "gaussiank"; }

 private:
  void select(const float* acc, int64_t n, std::vector<int64_t>& indices) override;
  bool counts_known() const override { return false; }
};

}  // namespace concord::sparse
