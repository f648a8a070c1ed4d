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

void sum_entries(SparseAccumulator& accumulator, int64_t n, const std::vector<int64_t>& indices,
                 const std::vector<float>& values, float divisor, SparseResult& out) {
  out.indices.clear();
  out.values.clear();
  accumulator.reset(n);
  for (size_t i = 0; i < indices.size(); ++i) {
    CONCORD_ENFORCE(indices[i] >= 0 && indices[i] < n, MismatchError, "sparse allreduce received index ",
                    indices[i], " outside [0, ", n, "): ranks passed different n");
    accumulator.add(indices[i], values[i]);
  }
  accumulator.extract(out, divisor);
}

void gather_values(const float* dense, const std::vector<int64_t>& indices, std::vector<float>& values) {
  values.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) values[i] = dense[indices[i]];
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
