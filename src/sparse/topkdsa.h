// SparseAllreduceTopkDSA ("topkdsa"), SparCML's dynamic sparse allreduce (Renggli et al.,
// "SparCML: High-Performance Sparse Communication for Machine Learning", SC 2019) as the
// TopkDSA baseline of Li & Hoefler (PPoPP 2022; spec ../shared/specs/oktopk.md,
// "Baselines"): a sparse reduce-scatter over fixed equal regions, then an allgatherv that
// switches to a dense representation once the reduced result is no longer sparse.
//
// Steps for P ranks, n entries, k = topk_count(n, density), entry size e (8 bytes with
// int32 indices, 12 with int64):
//   1. S_i = TopK(acc_i, k), ascending. Equal regions: region q = [q w, (q+1) w) with
//      w = floor(n/P), the last region ending at n (regions may be empty when n < P).
//   2. Split S_i by region: s_i[q] entries for region q. Pairwise alltoall of the counts.
//   3. Destination rotation (spec Phase 2): at step s = 1..P-1 rank r sends its block for
//      region (r+s) mod P to rank (r+s) mod P and receives from (r-s) mod P, in buckets of
//      min(options.bucket_steps, P) steps, reducing bucket b-1 while bucket b flies.
//   4. The owner r sums its region: own block first, then the received blocks in step
//      order (sources r-1, r-2, ...). Its reduced region is the c_r nonzero sums.
//   5. Ring allgather of the counts c_q; T = sum_q c_q.
//   6. If 3T < n: sparse ring allgatherv of the COO entries of every region; otherwise
//      dense ring allgatherv of every region's float32 values (zeros included).
//   U[j] = reduced[j] / P for the nonzero reduced entries: the same bits on every rank (one
//   owner reduced each entry). No global re-selection: |supp U| can reach P k.
//   Residual: acc_i[j] = 0 for j in S_i with j in supp U.
// Bytes sent by rank r: 8(P-1) (count alltoall) + e sum_{q != r} s_r[q] (rotation) +
// 8(P-1) (count allgather) + [sparse] e (T - c_{(r+1) mod P}) or [dense]
// 4 (n - |region (r+1) mod P|); 4(P-1) messages (zero-byte ones included). n = 0 sends
// nothing.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/sparse_accumulator.h"
#include "sparse/sparse_allreduce.h"

namespace concord::sparse {

/// Region boundaries of the equal partition of [0, n) into `parts` regions: P+1 values,
/// region q = [bounds[q], bounds[q+1]), each floor(n/parts) long, the remainder to the last.
std::vector<int64_t> equal_region_bounds(int64_t n, int parts);

class SparseAllreduceTopkDSA : public SparseAllreduce {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density and
  /// options.bucket_steps. Throws InvalidArgument for a density outside (0, 1].
  SparseAllreduceTopkDSA(Communicator& comm, const SparseOptions& options);
  const char* name() const override { return "topkdsa"; }
  void allreduce(float* acc, int64_t n, SparseResult& result) override;

 private:
  // Steps 5-6: gathers every owner's reduced entries (reduced_) into `result`.
  void gather_reduced(int64_t n, const std::vector<int64_t>& bounds, SparseResult& result);

  Communicator& comm_;
  SparseOptions options_;
  ScratchBuffer send_wire_;
  ScratchBuffer receive_wire_;
  ScratchBuffer gather_wire_;
  SparseAccumulator accumulator_;
  std::vector<int64_t> selected_;
  std::vector<float> selected_values_;
  std::vector<int64_t> block_indices_;
  std::vector<float> block_values_;
  SparseResult reduced_;        // this rank's region, reduced (not divided by P)
  std::vector<float> dense_;    // the dense allgatherv's output (n floats)
  std::vector<int64_t> all_indices_;
  std::vector<float> all_values_;
};

}  // namespace concord::sparse
