// Straightforward, test-side references of the sparse baselines' semantics
// (src/sparse/{topka,topkdsa,gtopk,gaussiank,dense}.h): given every rank's accumulator
// before a call, the U every rank must return, the residual each rank must keep, and the
// bytes each rank must send (the formulas of the headers and docs/algorithms.md). Written
// without the code under test, except gaussian_threshold (tested on its own). Unlike
// Ok-Topk's exact mode (sparse_reference.h), the baselines' top-k keeps zero entries: it
// always selects exactly k, the count TopkA and gTopk put on the wire.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "sparse/sparse_allreduce.h"
#include "sparse/topk.h"
#include "sparse_reference.h"  // reference_topk
#include "transport/communicator.h"

namespace concord::testing_util {

/// What one call must produce.
struct SparseExpectation {
  sparse::SparseResult U;
  std::vector<std::vector<float>> residual;  ///< by rank
  std::vector<uint64_t> bytes_sent;          ///< by rank (empty: not checked here)
  std::vector<uint64_t> messages_sent;       ///< by rank
};

/// `expected` with no byte and no message sent by any of the P ranks.
inline SparseExpectation silent(SparseExpectation expected, int P) {
  expected.bytes_sent.assign(P, 0);
  expected.messages_sent.assign(P, 0);
  return expected;
}

/// `expected` with only the length check's traffic (by rank): what n = 0 sends.
inline SparseExpectation check_only(SparseExpectation expected, const std::vector<TrafficCounters>& check) {
  expected.bytes_sent.clear();
  expected.messages_sent.clear();
  for (const TrafficCounters& c : check) {
    expected.bytes_sent.push_back(c.bytes_sent);
    expected.messages_sent.push_back(c.messages_sent);
  }
  return expected;
}

/// U of "every rank's selection summed in rank order, exact zeros dropped, / P", and the
/// residuals acc_i with S_i ∩ supp U zeroed.
inline SparseExpectation reference_selection_sum(const std::vector<std::vector<float>>& acc,
                                                 const std::vector<std::vector<int64_t>>& selected) {
  const int P = static_cast<int>(acc.size());
  std::map<int64_t, float> sum;
  for (int i = 0; i < P; ++i)
    for (int64_t j : selected[i]) sum[j] = sum.count(j) ? sum[j] + acc[i][j] : acc[i][j];
  SparseExpectation expected;
  for (const auto& [j, value] : sum)
    if (value != 0.0f) {
      expected.U.indices.push_back(j);
      expected.U.values.push_back(value / static_cast<float>(P));
    }
  expected.residual = acc;
  for (int i = 0; i < P; ++i)
    for (int64_t j : selected[i])
      if (std::binary_search(expected.U.indices.begin(), expected.U.indices.end(), j)) expected.residual[i][j] = 0.0f;
  return expected;
}

/// Entries of `indices` (ascending) in [begin, end).
inline int64_t count_in(const std::vector<int64_t>& indices, int64_t begin, int64_t end) {
  return std::lower_bound(indices.begin(), indices.end(), end) -
         std::lower_bound(indices.begin(), indices.end(), begin);
}

/// S_i = TopK(acc_i, k) of every rank.
inline std::vector<std::vector<int64_t>> local_topk(const std::vector<std::vector<float>>& acc, int64_t k) {
  std::vector<std::vector<int64_t>> selected;
  for (const auto& a : acc) selected.push_back(reference_topk(a, k));
  return selected;
}

/// TopkA: S_i = TopK(acc_i, k); the length check's traffic (`check_traffic`, by rank: an
/// allgather of one int64) + 8k(P-1) bytes (int32 indices) in P-1 messages per rank.
inline SparseExpectation reference_topka(const std::vector<std::vector<float>>& acc, double density,
                                         const std::vector<TrafficCounters>& check_traffic) {
  const int P = static_cast<int>(acc.size());
  const auto n = static_cast<int64_t>(acc[0].size());
  const int64_t k = sparse::topk_count(n, density);
  const std::vector<std::vector<int64_t>> selected = local_topk(acc, k);
  SparseExpectation expected = reference_selection_sum(acc, selected);
  if (n == 0) return check_only(expected, check_traffic);
  for (int r = 0; r < P; ++r) {
    expected.bytes_sent.push_back(check_traffic[r].bytes_sent + 8 * static_cast<uint64_t>(k) * (P - 1));
    expected.messages_sent.push_back(check_traffic[r].messages_sent + (P - 1));
  }
  return expected;
}

/// Gaussiank: S_i = { j : |acc_i[j]| >= gaussian_threshold(acc_i) }; the traffic of the
/// {count, n} allgather (`counts_traffic`, by rank: two int64 per rank) + 8 (C - c_{(r+1) mod P}) bytes of
/// entries in P-1 messages (none when C = 0).
inline SparseExpectation reference_gaussiank(const std::vector<std::vector<float>>& acc, double density,
                                             int corrections, const std::vector<TrafficCounters>& counts_traffic) {
  const int P = static_cast<int>(acc.size());
  const auto n = static_cast<int64_t>(acc[0].size());
  std::vector<std::vector<int64_t>> selected(P);
  uint64_t total = 0;
  for (int i = 0; i < P && n > 0; ++i) {
    const float th = sparse::gaussian_threshold(acc[i].data(), n, density, corrections);
    for (int64_t j = 0; j < n; ++j)
      if (std::abs(acc[i][j]) >= th) selected[i].push_back(j);
    total += selected[i].size();
  }
  SparseExpectation expected = reference_selection_sum(acc, selected);
  if (n == 0) return check_only(expected, counts_traffic);
  for (int r = 0; r < P; ++r) {
    const bool gathers = P > 1 && total > 0;
    expected.bytes_sent.push_back(counts_traffic[r].bytes_sent + 8 * (total - selected[(r + 1) % P].size()));
    expected.messages_sent.push_back(counts_traffic[r].messages_sent + (gathers ? P - 1 : 0));
  }
  return expected;
}

/// TopkDSA: the same U as TopkA (exact for dyadic data: the owner sums in another order);
/// bytes 16(P-1) (count exchange) + 8 (entries for other regions, one message per non-empty
/// block) + the count allgather's (`counts_traffic`) + 8 (T - c_{r+1}) when 3T < n (no
/// messages when T = 0), else 4 (n - |region r+1|), in P-1 messages.
inline SparseExpectation reference_topkdsa(const std::vector<std::vector<float>>& acc, double density,
                                           const std::vector<TrafficCounters>& counts_traffic) {
  const int P = static_cast<int>(acc.size());
  const auto n = static_cast<int64_t>(acc[0].size());
  const int64_t k = sparse::topk_count(n, density);
  const std::vector<std::vector<int64_t>> selected = local_topk(acc, k);
  SparseExpectation expected = reference_selection_sum(acc, selected);
  const int64_t width = n / P;
  auto region_begin = [&](int q) { return q * width; };
  auto region_end = [&](int q) { return q == P - 1 ? n : (q + 1) * width; };
  const auto T = static_cast<int64_t>(expected.U.indices.size());
  if (P == 1) return silent(expected, P);
  if (n == 0) {  // the count exchange alone (it carries n)
    expected.bytes_sent.assign(P, 16 * static_cast<uint64_t>(P - 1));
    expected.messages_sent.assign(P, P - 1);
    return expected;
  }
  for (int r = 0; r < P; ++r) {
    const int next = (r + 1) % P;
    uint64_t bytes = 16 * static_cast<uint64_t>(P - 1) + counts_traffic[r].bytes_sent;
    uint64_t messages = (P - 1) + counts_traffic[r].messages_sent;
    for (int q = 0; q < P; ++q) {
      const int64_t block = count_in(selected[r], region_begin(q), region_end(q));
      if (q != r && block > 0) {
        bytes += 8 * static_cast<uint64_t>(block);
        ++messages;
      }
    }
    if (3 * T < n) {
      bytes += 8 * static_cast<uint64_t>(T - count_in(expected.U.indices, region_begin(next), region_end(next)));
      messages += T > 0 ? P - 1 : 0;
    } else {
      bytes += 4 * static_cast<uint64_t>(n - (region_end(next) - region_begin(next)));
      messages += P - 1;
    }
    expected.bytes_sent.push_back(bytes);
    expected.messages_sent.push_back(messages);
  }
  return expected;
}

/// gTopk on the binomial tree rooted at 0: rank v merges its children v+1, v+2, v+4, ...
/// (while below its lowest set bit and below P), summing common indices (own + child) and
/// keeping the top-k of the union; dropped entries go back to v's residual. U = nonzero
/// entries of the root's set / P. Bytes: the length check's (`check_traffic`, by rank: an
/// allgather of one int64) + 8k ((v != 0) + children(v)).
inline SparseExpectation reference_gtopk(const std::vector<std::vector<float>>& acc, double density,
                                         const std::vector<TrafficCounters>& check_traffic) {
  const int P = static_cast<int>(acc.size());
  const auto n = static_cast<int64_t>(acc[0].size());
  SparseExpectation expected;
  expected.residual = acc;
  if (n == 0) return check_only(expected, check_traffic);
  const int64_t k = sparse::topk_count(n, density);
  std::vector<std::map<int64_t, float>> set(P);
  for (int v = 0; v < P; ++v)
    for (int64_t j : reference_topk(acc[v], k)) {
      set[v][j] = acc[v][j];
      expected.residual[v][j] = 0.0f;
    }
  auto children = [&](int v) {
    std::vector<int> result;
    for (int bit = 1; bit < P && (v == 0 || bit < (v & -v)); bit <<= 1)
      if (v + bit < P) result.push_back(v + bit);
    return result;
  };
  // Post-order: a child's subtree is complete before its parent merges it; children have
  // larger ranks than their parent, so descending rank order is a post-order.
  for (int v = P - 1; v >= 0; --v)
    for (int c : children(v)) {
      std::map<int64_t, float> merged = set[v];
      for (const auto& [j, value] : set[c]) merged[j] = merged.count(j) ? merged[j] + value : value;
      std::vector<int64_t> idx;
      std::vector<float> val;
      for (const auto& [j, value] : merged) {
        idx.push_back(j);
        val.push_back(value);
      }
      std::vector<int64_t> keep = reference_topk(val, k);
      set[v].clear();
      for (size_t p = 0, kept = 0; p < idx.size(); ++p) {
        if (kept < keep.size() && keep[kept] == static_cast<int64_t>(p)) {
          set[v][idx[p]] = val[p];
          ++kept;
        } else {
          expected.residual[v][idx[p]] += val[p];
        }
      }
    }
  for (const auto& [j, value] : set[0])
    if (value != 0.0f) {
      expected.U.indices.push_back(j);
      expected.U.values.push_back(value / static_cast<float>(P));
    }
  for (int v = 0; v < P; ++v) {
    const uint64_t messages = (v != 0 ? 1 : 0) + children(v).size();
    expected.messages_sent.push_back(check_traffic[v].messages_sent + messages);
    expected.bytes_sent.push_back(check_traffic[v].bytes_sent + 8 * static_cast<uint64_t>(k) * messages);
  }
  return expected;
}

/// Dense: U[j] = (sum_i acc_i[j]) / P for every j, zero residuals; bytes are those of the
/// dense algorithm (checked against its Cost by the test, not here).
inline SparseExpectation reference_dense(const std::vector<std::vector<float>>& acc) {
  const int P = static_cast<int>(acc.size());
  const auto n = static_cast<int64_t>(acc[0].size());
  SparseExpectation expected;
  for (int64_t j = 0; j < n; ++j) {
    float sum = 0.0f;
    for (int i = 0; i < P; ++i) sum += acc[i][j];
    expected.U.indices.push_back(j);
    expected.U.values.push_back(sum / static_cast<float>(P));
  }
  expected.residual.assign(P, std::vector<float>(static_cast<size_t>(n), 0.0f));
  return expected;
}

}  // namespace concord::testing_util
