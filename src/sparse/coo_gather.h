// Allgatherv of COO entries over a Communicator, with the optional load balancing of
// Ok-Topk's Phase 4 (docs/algorithms.md; Li & Hoefler, PPoPP 2022, sec. 3.3).
// Reusable by every sparse allreduce that ends with "everyone gets everyone's entries"
// (Ok-Topk, TopkA, TopkDSA, Gaussiank).
//
// gather() = three steps, each blocking:
// 1. allgather_counts: recursive-doubling allgather of one int64 per rank
//    (AllgatherRecursiveDoubling): log2 P rounds (+2 when P is not a power of two),
//    8(P-1) bytes per rank on a power of two.
// 2. balancing (only when should_balance(counts, factor)): the point-to-point transfers of
//    balance_plan(): each rank sends the parts of its block that belong to other ranks'
//    balanced ranges, so every rank ends with floor(T/P) or ceil(T/P) entries; at most
//    coo_wire_bytes(c_r) bytes sent by rank r, in a few messages.
// 3. allgatherv: ring allgather (AllgatherRing) of the wire-format blocks: P-1 messages per
//    rank; rank r sends every block but its right neighbour's, (P-1)/P * T entries for
//    balanced blocks.
// The gathered array is the rank-ordered concatenation of the (unbalanced) blocks either
// way: balancing changes only performance.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/coo.h"
#include "transport/communicator.h"

namespace concord::sparse {

/// What the last gather() did, for tests and traces.
struct GatherTrace {
  std::vector<int64_t> counts;  ///< c_q of every rank, before balancing
  bool balanced = false;        ///< whether step 2 ran
  CooBlock balanced_block;      ///< this rank's block after step 2 (its own block if !balanced)
};

/// Allgather(v) helpers bound to one communicator; keeps scratch buffers across calls.
/// Every rank must call the same functions in the same order (collective, blocking).
class CooGather {
 public:
  explicit CooGather(Communicator& comm) : comm_(comm) {}

  /// The value `mine` of every rank, in rank order (allgather_words of one word).
  /// CommError on transport failure.
  std::vector<int64_t> allgather_counts(int64_t mine);

  /// The w = mine.size() int64 words of every rank, rank-ordered (P w words; rank q's at
  /// [q w, (q+1) w)): recursive doubling (AllgatherRecursiveDoubling) of 8w-byte blocks.
  /// Every rank must pass the same w. Nothing is sent for P = 1. CommError on transport
  /// failure.
  std::vector<int64_t> allgather_words(const std::vector<int64_t>& mine);

  /// The exact messages and bytes rank `rank` of `ranks` sends in allgather_words() of
  /// `words` words per rank (from AllgatherRecursiveDoubling::steps): log2 P messages and
  /// 8 words (P-1) bytes on a power of two; nothing for P = 1.
  static TrafficCounters words_traffic(int ranks, int rank, size_t words);

  /// Rank-ordered concatenation of every rank's block into `out` (replaced); `counts[q]`
  /// must be rank q's block size on every rank. Wire format: coo.h with `index_bytes`.
  void allgatherv(const CooBlock& mine, const std::vector<int64_t>& counts, size_t index_bytes, CooBlock& out);

  /// Steps 1-3 of the header comment: `out` (replaced) = rank-ordered concatenation of
  /// every rank's `mine`; balances first when max c_q > balance_factor * T / P
  /// (balance_factor <= 0: never).
  void gather(const CooBlock& mine, size_t index_bytes, double balance_factor, CooBlock& out);

  /// Steps 2-3 of gather() with step 1's counts already known (`counts[q]` = rank q's
  /// block size, the same on every rank, e.g. from allgather_counts()).
  void gather_counted(const CooBlock& mine, std::vector<int64_t> counts, size_t index_bytes, double balance_factor,
                      CooBlock& out);

  /// Details of the last gather().
  const GatherTrace& trace() const { return trace_; }

 private:
  void balance(const CooBlock& mine, size_t index_bytes);

  Communicator& comm_;
  ScratchBuffer counts_scratch_;
  ScratchBuffer send_;
  ScratchBuffer receive_;
  std::vector<uint8_t> wire_;
  GatherTrace trace_;
};

}  // namespace concord::sparse
