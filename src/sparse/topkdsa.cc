#include "sparse/topkdsa.h"

#include <algorithm>

#include "algorithms/allgather_ring.h"
#include "sparse/coo_exchange.h"

namespace concord::sparse {

SparseAllreduceTopkDSA::SparseAllreduceTopkDSA(Communicator& comm, const SparseOptions& options)
    : SparseBaseline(comm, options), split_reduce_(comm) {}

void SparseAllreduceTopkDSA::run(float* acc, int64_t n, SparseResult& result) {
  topk_exact(acc, n, topk_count(n, options_.density), indices_);
  take_entries(acc, indices_, selected_);
  const Regions regions = Regions::equal(n, comm_.size());
  split_reduce_.run(selected_, regions, n, coo_index_bytes(n), options_.bucket_steps, "topkdsa", reduced_);
  gather_reduced(n, regions, result);
  zero_delivered(acc, indices_, result);
}

void SparseAllreduceTopkDSA::check_empty(int64_t n) {
  exchange_counts(comm_, std::vector<int64_t>(comm_.size(), 0), n, name());
}

void SparseAllreduceTopkDSA::gather_reduced(int64_t n, const Regions& regions, SparseResult& result) {
  const int P = comm_.size();
  const int r = comm_.rank();
  const auto divisor = static_cast<float>(P);
  const std::vector<int64_t> counts = gather_.allgather_counts(reduced_.size());
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (3 * total < n) {
    gather_.allgatherv(reduced_, counts, coo_index_bytes(n), all_);
    result.indices = all_.indices;  // regions in order, each ascending
    result.values.resize(all_.values.size());
    for (size_t e = 0; e < all_.values.size(); ++e) result.values[e] = all_.values[e] / divisor;
    return;
  }
  dense_.resize(static_cast<size_t>(n));
  std::fill(dense_.begin() + regions.start(r), dense_.begin() + regions.end(r), 0.0f);
  for (int64_t e = 0; e < reduced_.size(); ++e) dense_[reduced_.indices[e]] = reduced_.values[e];
  std::vector<size_t> block_bytes(P);
  for (int q = 0; q < P; ++q) block_bytes[q] = static_cast<size_t>(regions.end(q) - regions.start(q)) * sizeof(float);
  if (P > 1) {
    AllgatherRing ring(comm_);
    ring.start(dense_.data(), block_bytes);
    run_to_completion(ring);
  }
  for (int64_t j = 0; j < n; ++j)
    if (dense_[j] != 0.0f) {
      result.indices.push_back(j);
      result.values.push_back(dense_[j] / divisor);
    }
}

}  // namespace concord::sparse
