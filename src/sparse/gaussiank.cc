#include "sparse/gaussiank.h"

#include "common/enforce.h"
#include "sparse/options.h"

namespace concord::sparse {

SparseAllreduceGaussianK::SparseAllreduceGaussianK(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options), gather_(comm) {
  validate_options(options_);
}

void SparseAllreduceGaussianK::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "gaussiank: n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n == 0) return;
  const float threshold = gaussian_threshold(acc, n, options_.density, options_.gaussian_corrections);
  select_above(acc, n, threshold, options_.strict, indices_);
  take_entries(acc, indices_, selected_);
  const std::vector<int64_t> counts = gather_.allgather_counts(selected_.size());
  gather_.allgatherv(selected_, counts, coo_index_bytes(n), all_);
  sum_entries(accumulator_, n, all_, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, indices_, result);
}

}  // namespace concord::sparse
