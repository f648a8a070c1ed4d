// SparseAllreduceTopkA ("topka"), the TopkA baseline of Li & Hoefler (PPoPP 2022; spec
// ../shared/specs/oktopk.md, "Baselines"): every rank selects its exact local top-k and all
// ranks allgather everybody's k entries, then each sums them locally.
//
// Steps for P ranks, n entries, k = topk_count(n, density):
//   1. S_i = TopK(acc_i, k) (sparse/topk.h: ties by lower index), ascending indices.
//   2. Ring allgatherv of the k COO entries of every rank (CooGather::allgatherv,
//      sparse/coo_gather.h); the counts are known (k everywhere), so none are exchanged.
//   3. U[j] = (sum over ranks i in rank order with j in S_i of acc_i[j]) / P, exact zeros
//      dropped; identical bits on every rank (same additions in the same order).
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U (every selected entry reaches the
//   sum; only sums that are exactly zero are left out of U, and those stay in acc_i).
// Bytes on the wire: every rank sends P-1 messages of k entries: 8k(P-1) bytes with int32
// indices (12k(P-1) with int64 ones), i.e. 2k(P-1) words, growing with P. n = 0 sends
// nothing. Ranks passing different n are caught only when an index falls outside [0, n)
// (MismatchError); the count exchange that would always catch it is not part of TopkA.
#pragma once

#include <vector>

#include "sparse/coo_gather.h"
#include "sparse/sparse_accumulator.h"
#include "sparse/sparse_allreduce.h"

namespace concord::sparse {

class SparseAllreduceTopkA : public SparseAllreduce {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density. Throws
  /// InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceTopkA(Communicator& comm, const SparseOptions& options);
  const char* name() const override { return "topka"; }
  void allreduce(float* acc, int64_t n, SparseResult& result) override;

  /// Bytes rank `rank` sends in one call (the same for every rank): coo_wire_bytes(k) (P-1).
  static uint64_t bytes_sent(int64_t n, double density, int ranks);

 private:
  Communicator& comm_;
  SparseOptions options_;
  CooGather gather_;
  SparseAccumulator accumulator_;
  std::vector<int64_t> indices_;
  CooBlock selected_;
  CooBlock all_;
};

}  // namespace concord::sparse
