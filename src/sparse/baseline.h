// Base classes of the sparse baselines (docs/algorithms.md, "Sparse baselines"):
//   SparseBaseline   the argument handling every baseline shares: options validated at
//                    construction, n <= 0 only takes part in the length check (so a
//                    rank's n = 0 or n < 0 fails every rank instead of hanging them), and
//                    the length check (check_length: an allgather of every rank's n, so
//                    ranks passing different n all throw MismatchError instead of hanging
//                    or exchanging wrong-sized blocks).
//   SelectGatherSum  the allgather family (TopkA, Gaussiank): each rank selects entries of
//                    its accumulator by its own rule, all ranks allgather everybody's
//                    selection, each sums it locally in rank order and divides by P.
// plus the helpers they share: sum_sorted_blocks(), take_entries(), zero_delivered().
#pragma once

#include <cstdint>
#include <vector>

#include "sparse/coo.h"
#include "sparse/coo_gather.h"
#include "sparse/sparse_allreduce.h"

namespace concord::sparse {

class SparseBaseline : public SparseAllreduce {
 public:
  /// n > 0: clears `result` and runs the algorithm (run()). n <= 0: empties `result`,
  /// leaves `acc` alone and only takes part in the length check (check_empty()), so that
  /// every rank throws, naming each rank's n, when ranks differ (MismatchError) or some
  /// n < 0 (InvalidArgument), instead of the others waiting for this rank.
  void allreduce(float* acc, int64_t n, SparseResult& result) final;

 protected:
  /// Binds to `comm` (which must outlive this object). Throws InvalidArgument for invalid
  /// options (sparse/options.h).
  SparseBaseline(Communicator& comm, const SparseOptions& options);
  /// One call with n > 0 and an empty `result` (SparseAllreduce::allreduce's contract).
  /// Must check n across ranks (check_length() or a count exchange that carries n)
  /// before any data moves.
  virtual void run(float* acc, int64_t n, SparseResult& result) = 0;

  /// On a rank with n <= 0: the collective of run() that carries n, alone, then
  /// check_lengths(). It must match what run() sends first on the ranks with n > 0.
  /// Default: check_length(n).
  virtual void check_empty(int64_t n) { check_length(n); }

  /// The length check: allgathers every rank's n (CooGather::allgather_counts) and applies
  /// check_lengths() (sparse/coo_exchange.h): MismatchError naming every rank's n on every
  /// rank when they differ. Sends CooGather::words_traffic(P, r, 1): log2 P messages,
  /// 8(P-1) bytes on a power of two; nothing for P = 1. CommError on transport failure.
  void check_length(int64_t n);

  Communicator& comm_;
  SparseOptions options_;
  CooGather gather_;  ///< small allgathers (lengths, counts) and COO allgathervs
};

/// The allgather family. Steps for P ranks, n entries:
///   1. S_i = select(acc_i) (ascending indices), c_i = |S_i|.
///   0. When every rank selects the same known count (counts_known()), the length check
///      (SparseBaseline::check_length: an allgather of one int64 per rank).
///   2. Otherwise an allgather of {c_i, n} (CooGather::allgather_words: recursive doubling
///      of two int64 per rank), which also checks n (check_lengths).
///   3. Ring allgatherv of every rank's COO entries (CooGather::allgatherv): rank r sends
///      e (C - c_{(r+1) mod P}) bytes in P-1 messages, C = sum_i c_i, e = 8 with int32
///      indices (12 with int64); nothing when C = 0.
///   4. U[j] = (sum over ranks i in rank order with j in S_i of acc_i[j]) / P, exact zeros
///      dropped (sum_sorted_blocks): the same additions in the same order, so identical
///      bits on every rank.
///   Residual: acc_i[j] = 0 for j in S_i with j in supp U (every selected entry reaches
///   the sum; only sums that are exactly zero are left out of U, and those stay in acc_i).
class SelectGatherSum : public SparseBaseline {
 protected:
  SelectGatherSum(Communicator& comm, const SparseOptions& options) : SparseBaseline(comm, options) {}
  /// This rank's selection S_i of acc[0, n), ascending, into `indices`.
  virtual void select(const float* acc, int64_t n, std::vector<int64_t>& indices) = 0;
  /// True when every rank selects the same number of entries for a given n, so step 2 is
  /// replaced by the length check.
  virtual bool counts_known() const = 0;

 private:
  void run(float* acc, int64_t n, SparseResult& result) final;
  void check_empty(int64_t n) final;
  // Step 2: allgathers {count, n} of every rank, checks the n's; returns the counts.
  std::vector<int64_t> gather_counts_and_lengths(int64_t count, int64_t n);

  std::vector<int64_t> indices_;
  CooBlock selected_;
  CooBlock all_;
};

/// U of gathered blocks: `all` holds P blocks back to back, block q being counts[q]
/// entries with ascending indices. `out` (replaced) gets, for every index j in any block in
/// ascending order, (sum over blocks q in order 0..P-1 holding j of its value) / divisor,
/// starting from +0.0f, exact zeros dropped: a P-way merge, O(C + |U| P) for C entries,
/// no dense buffer. Throws MismatchError when an index lies outside [0, n) (ranks passed
/// different n).
void sum_sorted_blocks(const CooBlock& all, const std::vector<int64_t>& counts, int64_t n, float divisor,
                       SparseResult& out);

/// `out` (replaced) = the entries (j, dense[j]) for j in `indices`, in that order.
void take_entries(const float* dense, const std::vector<int64_t>& indices, CooBlock& out);

/// The residual rule of the sparse baselines: zeroes acc[j] for every j of `selected`
/// (ascending) that appears in `result.indices` (ascending), i.e. the selected entries that
/// reached U. O(|selected| + |result|).
void zero_delivered(float* acc, const std::vector<int64_t>& selected, const SparseResult& result);

}  // namespace concord::sparse
