// SparseAllreduceGTopk ("gtopk"), global top-k sparse allreduce by tree reduction (Shi et
// al., "A Distributed Synchronous SGD Algorithm with Global Top-k Sparsification for Low
// Bandwidth Networks", ICDCS 2019), the gTopk baseline of Li & Hoefler (PPoPP 2022;
// docs/algorithms.md, "Sparse baselines"). Any P (not only powers of two).
//
// Steps for P ranks, n entries, k = topk_count(n, density) (k <= n, so every set below has
// exactly k entries), on the binomial tree rooted at rank 0 (patterns/binomial_tree.h):
//   0. Length check (SparseBaseline::check_length): allgather of every rank's n; ranks
//      passing different n all throw MismatchError before any entry is sent.
//   1. Each rank's set: S_i = TopK(acc_i, k) with its values, ascending indices.
//   2. Reduction, ceil(log2 P) rounds: in round s a rank receives the set of its child
//      v + 2^s (virtual rank v, children nearest first) and merges: common indices add
//      (own value + child's value), then the set becomes the top-k of the union by |value|
//      (ties: lower index). After its last child, a non-root rank sends its set (k entries)
//      to its parent.
//   3. The root's set G (k entries) is broadcast down the same binomial tree
//      (BroadcastBinomial).
//   U[j] = G[j] / P for the entries of G whose value is not exactly zero; identical bits on
//   every rank (one chain of merges computed them, then they were copied).
//   Residual: acc_i[j] = 0 for every j in S_i (the whole selection is sent up); then every
//   entry a merge on rank i drops from the union (its partial sum, which may hold other
//   ranks' contributions) is added back: acc_i[j] += dropped[j]. A contribution dropped at
//   an inner node is only visible there, so it is kept by that node, and no gradient mass
//   is lost: sum_i acc_i(after) + P U == sum_i acc_i(before) up to rounding.
// Bytes sent by rank r (e = 8 with int32 indices, 12 with int64): e k (r != 0 ? 1 : 0) to
// the parent + e k |children(r)| in the broadcast, as many messages; the root sends
// e k ceil(log2 P) (2k log2 P words); the critical path carries 2 ceil(log2 P) messages of
// 2k words (the spec's ~4k log P). Plus the length check's CooGather::words_traffic(P, r, 1)
// (log2 P messages, 8(P-1) bytes on a power of two). n = 0 sends only the length check.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/baseline.h"
#include "sparse/coo.h"

namespace concord::sparse {

class SparseAllreduceGTopk : public SparseBaseline {
 public:
  /// Binds to `comm` (which must outlive this object); uses options.density. Throws
  /// InvalidArgument for invalid options (sparse/options.h).
  SparseAllreduceGTopk(Communicator& comm, const SparseOptions& options) : SparseBaseline(comm, options) {}
  const char* name() const override { return "gtopk"; }

  /// Bytes rank `rank` of `ranks` sends in one call for n entries (length check included;
  /// only the length check for n = 0).
  static uint64_t bytes_sent(int64_t n, double density, int ranks, int rank);

 private:
  void run(float* acc, int64_t n, SparseResult& result) override;
  // Merges the child's set into set_ (step 2), adding dropped entries to acc.
  void merge_child(float* acc, int64_t k, const CooBlock& child);

  ScratchBuffer wire_;
  std::vector<int64_t> selected_;
  CooBlock set_;    // this node's current set
  CooBlock child_;  // a child's set
  CooBlock union_;  // set_ merged with child_
  std::vector<int64_t> keep_;
};

}  // namespace concord::sparse
