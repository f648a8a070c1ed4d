#include "sparse/gaussiank.h"

namespace concord::sparse {

void SparseAllreduceGaussianK::select(const float* acc, int64_t n, std::vector<int64_t>& indices) {
  const float threshold = gaussian_threshold(acc, n, options_.density, options_.gaussian_corrections);
  select_above(acc, n, threshold, options_.strict, indices);
}

}  // namespace concord::sparse
