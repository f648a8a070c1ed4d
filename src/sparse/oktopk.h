// OkTopk: the Ok-Topk sparse allreduce (Li & Hoefler, "Near-Optimal Sparse Allreduce for
// Distributed Deep Learning", PPoPP 2022, every phase; docs/algorithms.md). One
// blocking call on P ranks, n floats, k = topk_count(n, density):
//
// Phase 0 local selection: S_i = {j : |acc_i[j]| >= th} with th the exact k-th largest
//   |acc_i| every tau_local calls and reused (with lo/hi/f feedback on |S_i|) in between;
//   exact mode takes the exact top-k (ties: lower index). Zero entries are never selected
//   (they change neither U nor the residual). No communication. Volume cap (our addition,
//   options.max_overshoot = eps): when the reused th selects more than (1 + eps) k
//   entries, S_i = the exact top-k among them, and th = their k-th magnitude (the exact
//   threshold of this call) instead of the x/÷ f step; when it selects fewer than lo k,
//   th is re-evaluated exactly at once (O(n), no communication). Without the cap the residual of the
//   unselected entries grows every call and the reused threshold selects 2-3x k for the
//   next ~100-200 calls (tools/plot/plot_oktopk_calls.py shows it).
// Phase 1 space repartition every tau calls (sparse/partition.h): allreduce of P int64.
// Phase 2 split and reduce (sparse/split_reduce.h): count exchange (P-1 messages of 16
//   bytes, which also check n), then the destination-rotated, bucketed exchange of the
//   COO blocks (at most P-1 messages, 8 bytes per entry for n < 2^31), scatter-added by
//   the owner into a dense zeroed region buffer in step order; the reduced region is its
//   nonzeros.
// Phase 3 global selection: every tau_global calls (always in exact mode) all reduced
//   nonzeros are gathered (sparse/coo_gather.h) and G = their exact top-k (threshold
//   th_g = k-th largest |value|); otherwise each owner keeps |reduced| >= th_g, Phase 4
//   gathers the kept entries and th_g follows the lo/hi/f feedback on T = |G|. Volume cap:
//   Phase 4's count allgather runs first; when T > (1 + eps) k every owner keeps its exact
//   top-(proportional_quotas share of k) before any entry moves (|G| = k), and th_g = the
//   smallest |value| of G (identical on every rank). When T < lo k instead (gradients
//   shrank), every owner takes its exact top-(share of k, proportional to its reduced
//   nonzeros, which travel with the counts: 2 words per rank) from its reduced region.
// Phase 4 balance (when max c_q > balance_factor * T/P) + allgatherv (sparse/coo_gather.h).
// Result U = reduced / P on G, bit-identical on every rank (each entry is reduced by its
//   owner alone, then copied). Residual: acc_i with S_i ∩ G zeroed.
//
// Bytes per rank on a call without re-evaluation or repartition (one COO entry = 2 words):
// split and reduce <= 2|S_i| words, balance + allgatherv <= 2(c_r + (P-1)/P T) words, plus
// 4(P-1) words of counts and log-P count allgather: < 6k words for |S_i|, T ~ k; with the
// cap |S_i|, T <= (1 + eps) k on every reuse call, so <= 2(1+eps)k + 4(1+eps)k words.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/coo.h"
#include "sparse/coo_gather.h"
#include "sparse/partition.h"
#include "sparse/sparse_allreduce.h"
#include "sparse/split_reduce.h"

namespace concord::sparse {

/// What the last OkTopk call did on this rank (for tests and diagnostics).
struct OkTopkTrace {
  int64_t call = 0;               ///< t of the call
  int64_t k = 0;                  ///< target count
  CooBlock selected;              ///< S_i with acc_i's values, ascending indices
  float local_threshold = 0;      ///< th used for S_i (0 in exact mode)
  int64_t local_candidates = 0;   ///< entries passing th before any trim (|S_i| if not trimmed)
  bool local_trimmed = false;     ///< S_i = exact top-k of the candidates (> (1 + max_overshoot) k)
  bool repartitioned = false;     ///< Phase 1 ran
  Regions regions;                ///< regions used by Phase 2
  CooBlock reduced;               ///< nonzeros of this rank's reduced region, ascending
  bool exact_global = false;      ///< Phase 3 re-evaluated th_g from all reduced entries
  float global_threshold = 0;     ///< th_g used (reuse) or computed (re-evaluation)
  int64_t global_candidates = 0;  ///< T: entries passing th_g on all owners (reuse calls)
  bool global_trimmed = false;    ///< owners kept proportional_quotas() of their candidates
  GatherTrace gather;             ///< Phase 4 counts and balancing
};

/// Ok-Topk's global trim: splits k among owners in proportion to their candidate counts
/// (floor(c_q k / T), the remaining units to the largest remainders, lower rank first), so
/// that the quotas sum to k and quota_q <= c_q. Returns `counts` unchanged when T <= k.
std::vector<int64_t> proportional_quotas(const std::vector<int64_t>& counts, int64_t k);

class OkTopk : public SparseAllreduce {
 public:
  /// Binds to `comm` (which must outlive this object). Throws InvalidArgument for invalid
  /// options (sparse/options.h).
  OkTopk(Communicator& comm, const SparseOptions& options);

  const char* name() const override { return "oktopk"; }
  /// See SparseAllreduce::allreduce and the header comment. Throws InvalidArgument for
  /// n < 0 and MismatchError for differing n (on every rank, after the count exchange),
  /// CommError on transport failure.
  void allreduce(float* acc, int64_t n, SparseResult& result) override;

  /// The last call's details.
  const OkTopkTrace& trace() const { return trace_; }

 private:
  void select_local(const float* acc, int64_t n, int64_t k);
  void select_global(int64_t k, size_t index_bytes, CooBlock& global);
  /// floor((1 + max_overshoot) k), at least k; no cap for max_overshoot < 0.
  int64_t overshoot_cap(int64_t k) const;

  Communicator& comm_;
  SparseOptions options_;
  int64_t t_ = 0;
  int64_t last_n_ = -1;
  float local_threshold_ = 0;
  float global_threshold_ = 0;
  Regions regions_;
  std::vector<int64_t> indices_;
  std::vector<int64_t> positions_;
  std::vector<float> candidates_;
  CooBlock kept_;
  CooBlock global_;
  ScratchBuffer scratch_;
  SplitReduce split_reduce_;
  CooGather gather_;
  OkTopkTrace trace_;
};

}  // namespace concord::sparse
