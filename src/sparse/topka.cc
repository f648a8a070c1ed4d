#include "sparse/topka.h"

#include "common/enforce.h"
#include "sparse/coo.h"
#include "sparse/sparse_exchange.h"

namespace concord::sparse {

SparseAllreduceTopkA::SparseAllreduceTopkA(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options) {
  topk_count(1, options_.density);  // validates the density
}

void SparseAllreduceTopkA::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "topka: n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n == 0) return;
  const int64_t k = topk_count(n, options_.density);
  topk_exact(acc, n, k, selected_);
  const std::vector<int64_t> counts(comm_.size(), static_cast<int64_t>(selected_.size()));
  gather_values(acc, selected_, selected_values_);
  allgatherv_coo(comm_, counts, selected_.data(), selected_values_.data(), coo_index_bytes(n), wire_, all_indices_, all_values_);
  sum_entries(accumulator_, n, all_indices_, all_values_, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, selected_, result);
}

uint64_t SparseAllreduceTopkA::bytes_sent(int64_t n, double density, int ranks) {
  if (n == 0) return 0;
  return coo_block_bytes(static_cast<size_t>(topk_count(n, density)), coo_index_bytes(n)) *
         static_cast<uint64_t>(ranks - 1);
}

}  // namespace concord::sparse
