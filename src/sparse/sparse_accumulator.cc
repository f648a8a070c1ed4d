#include "sparse/sparse_accumulator.h"

#include <algorithm>

#include "common/enforce.h"

namespace concord::sparse {

void SparseAccumulator::reset(int64_t n) {
  const auto size = static_cast<size_t>(n);
  if (sum_.size() < size) {
    sum_.resize(size, 0.0f);
    touched_.resize(size, 0);
  }
  for (int64_t index : order_) {
    sum_[index] = 0.0f;
    touched_[index] = 0;
  }
  order_.clear();
}

void SparseAccumulator::extract(SparseResult& out, float divisor) {
  std::sort(order_.begin(), order_.end());
  for (int64_t index : order_) {
    const float value = sum_[index];
    if (value != 0.0f) {
      out.indices.push_back(index);
      out.values.push_back(value / divisor);
    }
    sum_[index] = 0.0f;
    touched_[index] = 0;
  }
  order_.clear();
}

void sum_entries(SparseAccumulator& accumulator, int64_t n, const CooBlock& all, float divisor, SparseResult& out) {
  out.indices.clear();
  out.values.clear();
  accumulator.reset(n);
  for (int64_t e = 0; e < all.size(); ++e) {
    CONCORD_ENFORCE(all.indices[e] >= 0 && all.indices[e] < n, MismatchError, "sparse allreduce received index ",
                    all.indices[e], " outside [0, ", n, "): ranks passed different n");
    accumulator.add(all.indices[e], all.values[e]);
  }
  accumulator.extract(out, divisor);
}

void take_entries(const float* dense, const std::vector<int64_t>& indices, CooBlock& out) {
  out.indices = indices;
  out.values.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) out.values[i] = dense[indices[i]];
}

void zero_delivered(float* acc, const std::vector<int64_t>& selected, const SparseResult& result) {
  size_t at = 0;
  const size_t m = result.indices.size();
  for (int64_t index : selected) {
    while (at < m && result.indices[at] < index) ++at;
    if (at == m) break;
    if (result.indices[at] == index) acc[index] = 0.0f;
  }
}

}  // namespace concord::sparse
