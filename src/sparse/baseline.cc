#include "sparse/baseline.h"

#include "common/enforce.h"
#include "sparse/options.h"

namespace concord::sparse {

SparseBaseline::SparseBaseline(Communicator& comm, const SparseOptions& options) : comm_(comm), options_(options) {
  validate_options(options_);
}

void SparseBaseline::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, name(), ": gradient length n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n > 0) run(acc, n, result);
}

void SelectGatherSum::run(float* acc, int64_t n, SparseResult& result) {
  select(acc, n, indices_);
  take_entries(acc, indices_, selected_);
  const std::vector<int64_t> counts = counts_known() ? std::vector<int64_t>(comm_.size(), selected_.size())
                                                     : gather_.allgather_counts(selected_.size());
  gather_.allgatherv(selected_, counts, coo_index_bytes(n), all_);
  sum_entries(accumulator_, n, all_, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, indices_, result);
}

}  // namespace concord::sparse
