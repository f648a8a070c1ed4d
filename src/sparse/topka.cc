#include "sparse/topka.h"

#include "common/enforce.h"
#include "sparse/options.h"

namespace concord::sparse {

SparseAllreduceTopkA::SparseAllreduceTopkA(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options), gather_(comm) {
  validate_options(options_);
}

void SparseAllreduceTopkA::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "topka: n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n == 0) return;
  topk_exact(acc, n, topk_count(n, options_.density), indices_);
  take_entries(acc, indices_, selected_);
  gather_.allgatherv(selected_, std::vector<int64_t>(comm_.size(), selected_.size()), coo_index_bytes(n), all_);
  sum_entries(accumulator_, n, all_, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, indices_, result);
}

uint64_t SparseAllreduceTopkA::bytes_sent(int64_t n, double density, int ranks) {
  if (n == 0) return 0;
  return coo_wire_bytes(topk_count(n, density), coo_index_bytes(n)) * static_cast<uint64_t>(ranks - 1);
}

}  // namespace concord::sparse
