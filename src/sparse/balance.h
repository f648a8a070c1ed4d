// Phase 4 load balancing of Ok-Topk (Phase 4; Li & Hoefler,
// PPoPP 2022, sec. 3.3): pure arithmetic, no communication.
//
// View the entries every rank contributes to an allgatherv as one rank-ordered array: rank
// r holds positions [off_r, off_r + c_r) (off_r = c_0 + ... + c_{r-1}). After balancing,
// rank q holds [boff_q, boff_q + b_q) with b_q = floor(T/P) (+1 for q < T mod P),
// T = sum c_q. Rank r sends rank q the intersection of its range and q's balanced range, so
// each rank sends and receives at most a few blocks and the later allgatherv moves equal
// blocks; the concatenated array is unchanged.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace concord::sparse {

/// One block moved by the balancing step: `count` entries between this rank and `peer`,
/// starting at `offset` within this rank's block (its own block for a send, its balanced
/// block for a receive). peer == this rank is a local copy.
struct BalanceTransfer {
  int peer = 0;
  int64_t offset = 0;
  int64_t count = 0;
};

/// The balanced block sizes b_q of T entries over P ranks.
inline std::vector<int64_t> balanced_counts(int64_t total, int P) {
  std::vector<int64_t> result(P, total / P);
  for (int q = 0; q < total % P; ++q) ++result[q];
  return result;
}

/// True when the balancing step pays: max_q c_q > factor * T / P (factor <= 0: never).
inline bool should_balance(const std::vector<int64_t>& counts, double factor) {
  if (factor <= 0 || counts.empty()) return false;
  int64_t total = 0, largest = 0;
  for (int64_t c : counts) {
    total += c;
    largest = std::max(largest, c);
  }
  return static_cast<double>(largest) > factor * static_cast<double>(total) / static_cast<double>(counts.size());
}

/// The sends (into peers' balanced blocks) and receives (from peers' blocks) of `rank`,
/// given every rank's count c_q; only non-empty transfers, in ascending peer order.
struct BalancePlan {
  std::vector<BalanceTransfer> sends;
  std::vector<BalanceTransfer> receives;
  int64_t balanced_count = 0;  ///< b_rank
};

/// The plan of `rank` for counts c_0..c_{P-1}.
inline BalancePlan balance_plan(const std::vector<int64_t>& counts, int rank) {
  const int P = static_cast<int>(counts.size());
  std::vector<int64_t> offsets(P + 1, 0), balanced_offsets(P + 1, 0);
  int64_t total = 0;
  for (int q = 0; q < P; ++q) offsets[q + 1] = offsets[q] + counts[q];
  total = offsets[P];
  const std::vector<int64_t> balanced = balanced_counts(total, P);
  for (int q = 0; q < P; ++q) balanced_offsets[q + 1] = balanced_offsets[q] + balanced[q];

  BalancePlan plan;
  plan.balanced_count = balanced[rank];
  for (int q = 0; q < P; ++q) {
    // What `rank` (current range) sends to q (balanced range).
    const int64_t send_lo = std::max(offsets[rank], balanced_offsets[q]);
    const int64_t send_hi = std::min(offsets[rank + 1], balanced_offsets[q + 1]);
    if (send_hi > send_lo) plan.sends.push_back({q, send_lo - offsets[rank], send_hi - send_lo});
    // What q (current range) sends to `rank` (balanced range).
    const int64_t recv_lo = std::max(offsets[q], balanced_offsets[rank]);
    const int64_t recv_hi = std::min(offsets[q + 1], balanced_offsets[rank + 1]);
    if (recv_hi > recv_lo) plan.receives.push_back({q, recv_lo - balanced_offsets[rank], recv_hi - recv_lo});
  }
  return plan;
}

}  // namespace concord::sparse
