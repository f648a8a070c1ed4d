#include "sparse/topka.h"

namespace concord::sparse {

void SparseAllreduceTopkA::select(const float* acc, int64_t n, std::vector<int64_t>& indices) {
  topk_exact(acc, n, topk_count(n, options_.density), indices);
}

uint64_t SparseAllreduceTopkA::bytes_sent(int64_t n, double density, int ranks, int rank) {
  if (n == 0) return CooGather::words_traffic(ranks, rank, 1).bytes_sent;  // the length check
  return coo_wire_bytes(topk_count(n, density), coo_index_bytes(n)) * static_cast<uint64_t>(ranks - 1) +
         CooGather::words_traffic(ranks, rank, 1).bytes_sent;
}

}  // namespace concord::sparse
