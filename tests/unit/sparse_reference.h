// Test-side reference of the sparse allreduce's exact-mode semantics
// (docs/algorithms.md, "Ok-Topk sparse allreduce"), written without the code under test
// (full sorts instead of selection): S_i = TopK(acc_i, k) (ties: larger |x|, then lower
// index; zero entries dropped, as they change neither U nor the residual), R = sum of the
// selected entries (exact zeros dropped), G = TopK(R, min(k, nnz R)), U = R|_G / P,
// eps_i = acc_i with S_i ∩ G zeroed. R sums ranks in rank order: tests that compare values
// bit for bit use data whose sums are exact in float32 (small integers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

namespace concord::testing_util {

struct SparseReference {
  std::vector<std::vector<int64_t>> selected;  ///< S_i, ascending
  std::vector<int64_t> reduced_indices;        ///< supp R, ascending
  std::vector<float> reduced_values;           ///< R on supp R
  std::vector<int64_t> global;                 ///< G, ascending
  std::vector<float> result;                   ///< U on G (R / P)
  std::vector<std::vector<float>> residual;    ///< eps_i
};

/// The indices of the k largest |x[j]| (ties: lower index), ascending; by a full sort.
inline std::vector<int64_t> reference_topk(const std::vector<float>& x, int64_t k) {
  std::vector<int64_t> order(x.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(std::max<int64_t>(k, 0))));
  std::sort(order.begin(), order.end());
  return order;
}

/// Exact-mode reference for the accumulators of all P ranks (equal lengths) and target k.
inline SparseReference exact_reference(const std::vector<std::vector<float>>& acc, int64_t k) {
  const int P = static_cast<int>(acc.size());
  SparseReference ref;
  std::map<int64_t, float> reduced;
  for (int i = 0; i < P; ++i) {
    std::vector<int64_t> s;
    for (int64_t j : reference_topk(acc[i], k))
      if (acc[i][j] != 0) s.push_back(j);
    for (int64_t j : s) reduced[j] += acc[i][j];
    ref.selected.push_back(s);
  }
  for (const auto& [j, v] : reduced) {
    if (v == 0) continue;
    ref.reduced_indices.push_back(j);
    ref.reduced_values.push_back(v);
  }
  for (int64_t e : reference_topk(ref.reduced_values, k)) {
    ref.global.push_back(ref.reduced_indices[e]);
    ref.result.push_back(ref.reduced_values[e] / static_cast<float>(P));
  }
  ref.residual = acc;
  for (int i = 0; i < P; ++i)
    for (int64_t j : ref.global)
      if (std::binary_search(ref.selected[i].begin(), ref.selected[i].end(), j)) ref.residual[i][j] = 0;
  return ref;
}

}  // namespace concord::testing_util
