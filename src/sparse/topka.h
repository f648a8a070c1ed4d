// SparseAllreduceTopkA ("topka"), the TopkA baseline of Li & Hoefler (PPoPP 2022;
// docs/algorithms.md, "Sparse baselines"): every rank selects its exact local top-k and all
// ranks allgather everybody's k entries, then each sums them locally.
//
// Steps (SelectGatherSum, sparse/baseline.h) for P ranks, n entries, k = topk_count(n, d):
//   0. Length check (SparseBaseline::check_length): allgather of every rank's n; ranks
//      passing different n all throw MismatchError before any entry is sent.
//   1. S_i = TopK(acc_i, k) (sparse/topk.h: ties by lower index; zero entries too, so
//      exactly k), ascending indices.
//   2. No count exchange: every rank sends k entries.
//   3. Ring allgatherv of the k COO entries of every rank.
//   4. U[j] = (sum over ranks i in rank order with j in S_i of acc_i[j]) / P, exact zeros
//      dropped; identical bits on every rank.
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U.
// Bytes on the wire: every rank sends P-1 messages of k entries: 8k(P-1) bytes with int32
// indices (12k(P-1) with int64 ones), i.e. 2k(P-1) words, growing with P; plus the length
// check's CooGather::words_traffic(P, r, 1) (log2 P messages, 8(P-1) bytes on a power of
// two). n = 0 sends only the length check.
#pragma once

#include "sparse/baseline.h"

namespace concord::sparse {

class SparseAllreduceTopkA : public SelectGatherSum {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density. Throws
  /// InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceTopkA(Communicator& comm, const SparseOptions& options) : SelectGatherSum(comm, options) {}
  const char* name() const override { return "topka"; }

  /// Bytes rank `rank` of `ranks` sends in one call for n entries: coo_wire_bytes(k) (P-1)
  /// + the length check's CooGather::words_traffic(ranks, rank, 1).bytes_sent; only the
  /// latter for n = 0.
  static uint64_t bytes_sent(int64_t n, double density, int ranks, int rank);

 private:
  void select(const float* acc, int64_t n, std::vector<int64_t>& indices) override;
  bool counts_known() const override { return true; }
};

}  // namespace concord::sparse
