#include "sparse/gaussiank.h"

#include "common/enforce.h"
#include "sparse/coo.h"
#include "sparse/sparse_exchange.h"

namespace concord::sparse {

SparseAllreduceGaussianK::SparseAllreduceGaussianK(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options) {
  topk_count(1, options_.density);  // validates the density
}

void SparseAllreduceGaussianK::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "gaussiank: n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n == 0) return;
  const float threshold = gaussian_threshold(acc, n, options_.density, options_.gaussian_corrections);
  select_above(acc, n, threshold, options_.strict, selected_);
  const std::vector<int64_t> counts = allgather_counts(comm_, static_cast<int64_t>(selected_.size()));
  gather_values(acc, selected_, selected_values_);
  allgatherv_coo(comm_, counts, selected_.data(), selected_values_.data(), coo_index_bytes(n), wire_, all_indices_, all_values_);
  sum_entries(accumulator_, n, all_indices_, all_values_, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, selected_, result);
}

}  // namespace concord::sparse
