// SparseAllreduceTopkDSA ("topkdsa"), SparCML's dynamic sparse allreduce (Renggli et al.,
// "SparCML: High-Performance Sparse Communication for Machine Learning", SC 2019) as the
// TopkDSA baseline of Li & Hoefler (PPoPP 2022; docs/algorithms.md, "Sparse baselines"): a
// sparse reduce-scatter over fixed equal regions, then an allgatherv that switches to a dense
// representation once the reduced result is no longer sparse.
//
// Steps for P ranks, n entries, k = topk_count(n, density), entry size e (8 bytes with
// int32 indices, 12 with int64):
//   1. S_i = TopK(acc_i, k), ascending. Equal regions (Regions::equal, sparse/partition.h):
//      floor(n/P) entries each, the remainder to the last (regions may be empty, n < P).
//   2-4. SplitReduce (sparse/split_reduce.h, Ok-Topk's Phase 2): count exchange (16-byte
//      messages, checks n), destination rotation in buckets of min(bucket_steps, P) steps,
//      the owner r sums its region (own block first, then sources r-1, r-2, ...); its
//      reduced region is the c_r nonzero sums.
//   5. Allgather of the counts c_q (CooGather::allgather_counts); T = sum_q c_q.
//   6. If 3T < n: sparse ring allgatherv of the COO entries of every region
//      (CooGather::allgatherv; nothing sent when T = 0); otherwise dense ring allgatherv
//      (AllgatherRing) of every region's float32 values, zeros included.
//   U[j] = reduced[j] / P for the nonzero reduced entries: the same bits on every rank (one
//   owner reduced each entry). No global re-selection: |supp U| can reach P k.
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U.
// Bytes sent by rank r: 16(P-1) (count exchange) + e (k - s_r[r]) (rotation, one message
// per non-empty block) + the count allgather's (8(P-1) on a power of two) + [sparse]
// e (T - c_{(r+1) mod P}) or [dense] 4 (n - |region (r+1) mod P|), in P-1 messages.
// n = 0 sends only the count exchange of step 3 (it carries n).
#pragma once

#include <vector>

#include "sparse/baseline.h"
#include "sparse/coo_gather.h"
#include "sparse/split_reduce.h"

namespace concord::sparse {

class SparseAllreduceTopkDSA : public SparseBaseline {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density and
  /// options.bucket_steps. Throws InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceTopkDSA(Communicator& comm, const SparseOptions& options);
  const char* name() const override { return "topkdsa"; }

 private:
  void run(float* acc, int64_t n, SparseResult& result) override;
  // n <= 0: the count exchange of step 3 (which carries n) with nothing to send.
  void check_empty(int64_t n) override;
  // Steps 5-6: gathers every owner's reduced entries (reduced_) into `result`.
  void gather_reduced(int64_t n, const Regions& regions, SparseResult& result);

  SplitReduce split_reduce_;
  std::vector<int64_t> indices_;
  CooBlock selected_;
  CooBlock reduced_;          // this rank's region, reduced (not divided by P)
  CooBlock all_;              // every region's reduced entries (sparse path)
  std::vector<float> dense_;  // the dense allgatherv's output (n floats)
};

}  // namespace concord::sparse
