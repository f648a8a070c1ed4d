// SparseAllreduceTopkA ("topka"), the TopkA baseline of Li & Hoefler (PPoPP 2022; spec
// ../shared/specs/oktopk.md, "Baselines"): every rank selects its exact local top-k and all
// ranks allgather everybody's k entries, then each sums them locally.
//
// Steps (SelectGatherSum, sparse/baseline.h) for P ranks, n entries, k = topk_count(n, d):
//   1. S_i = TopK(acc_i, k) (sparse/topk.h: ties by lower index; zero entries too, so
//      exactly k), ascending indices.
//   2. No count exchange: every rank sends k entries.
//   3. Ring allgatherv of the k COO entries of every rank.
//   4. U[j] = (sum over ranks i in rank order with j in S_i of acc_i[j]) / P, exact zeros
//      dropped; identical bits on every rank.
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U.
// Bytes on the wire: every rank sends P-1 messages of k entries: 8k(P-1) bytes with int32
// indices (12k(P-1) with int64 ones), i.e. 2k(P-1) words, growing with P. n = 0 sends
// nothing. Ranks passing different n are caught only when an index falls outside [0, n)
// (MismatchError); the count exchange that would always catch it is not part of TopkA.
#pragma once

#include "sparse/baseline.h"

namespace concord::sparse {

class SparseAllreduceTopkA : public SelectGatherSum {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density. Throws
  /// InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceTopkA(Communicator& comm, const SparseOptions& options) : SelectGatherSum(comm, options) {}
  const char* name() const override { return "topka"; }

  /// Bytes every rank sends in one call: coo_wire_bytes(k) (P-1).
  static uint64_t bytes_sent(int64_t n, double density, int ranks);

 private:
  void select(const float* acc, int64_t n, std::vector<int64_t>& indices) override;
  bool counts_known() const override { return true; }
};

}  // namespace concord::sparse
