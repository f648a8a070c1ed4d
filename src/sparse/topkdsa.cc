#include "sparse/topkdsa.h"

#include <algorithm>
#include <cstring>

#include "algorithms/allgather_ring.h"
#include "common/enforce.h"
#include "sparse/coo.h"
#include "sparse/sparse_exchange.h"

namespace concord::sparse {

std::vector<int64_t> equal_region_bounds(int64_t n, int parts) {
  std::vector<int64_t> bounds(parts + 1);
  const int64_t width = n / parts;
  for (int q = 0; q < parts; ++q) bounds[q] = q * width;
  bounds[parts] = n;
  return bounds;
}

SparseAllreduceTopkDSA::SparseAllreduceTopkDSA(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options) {
  topk_count(1, options_.density);  // validates the density
}

void SparseAllreduceTopkDSA::allreduce(float* acc, int64_t n, SparseResult& result) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "topkdsa: n = ", n, " < 0");
  result.indices.clear();
  result.values.clear();
  if (n == 0) return;
  const int P = comm_.size();
  const int r = comm_.rank();
  const size_t index_bytes = coo_index_bytes(n);
  topk_exact(acc, n, topk_count(n, options_.density), selected_);
  const std::vector<int64_t> bounds = equal_region_bounds(n, P);

  // Step 2: split by region (selected_ is ascending) and pack each destination's block.
  std::vector<size_t> first(P + 1, selected_.size());
  for (int q = 0; q < P; ++q)
    first[q] = static_cast<size_t>(std::lower_bound(selected_.begin(), selected_.end(), bounds[q]) - selected_.begin());
  std::vector<int64_t> send_counts(P);
  std::vector<size_t> send_offsets(P + 1, 0);
  for (int q = 0; q < P; ++q) {
    send_counts[q] = static_cast<int64_t>(first[q + 1] - first[q]);
    send_offsets[q + 1] = send_offsets[q] + coo_block_bytes(static_cast<size_t>(send_counts[q]), index_bytes);
  }
  const std::vector<int64_t> recv_counts = alltoall_counts(comm_, send_counts);
  const int64_t region = bounds[r + 1] - bounds[r];
  std::vector<size_t> recv_bytes(P);
  for (int q = 0; q < P; ++q) {
    CONCORD_ENFORCE(recv_counts[q] >= 0 && recv_counts[q] <= region, MismatchError, "topkdsa: rank ", q,
                    " sends ", recv_counts[q], " entries for region ", r, " of ", region,
                    " entries: ranks passed different n");
    recv_bytes[q] = coo_block_bytes(static_cast<size_t>(recv_counts[q]), index_bytes);
  }
  uint8_t* send = send_wire_.get(send_offsets[P]);
  gather_values(acc, selected_, selected_values_);
  for (int q = 0; q < P; ++q)
    coo_pack(selected_.data() + first[q], selected_values_.data() + first[q], first[q + 1] - first[q], index_bytes,
             send + send_offsets[q]);

  // Steps 3-4: own block, then the rotation's blocks in step order.
  accumulator_.reset(n);
  for (size_t i = first[r]; i < first[r + 1]; ++i) accumulator_.add(selected_[i], selected_values_[i]);
  rotation_exchange(comm_, send, send_offsets, recv_bytes, options_.bucket_steps, receive_wire_,
                    [&](int source, const uint8_t* data, size_t bytes) {
                      (void)bytes;
                      const auto m = static_cast<size_t>(recv_counts[source]);
                      block_indices_.resize(m);
                      block_values_.resize(m);
                      coo_unpack(data, m, index_bytes, block_indices_.data(), block_values_.data());
                      for (size_t i = 0; i < m; ++i) {
                        CONCORD_ENFORCE(block_indices_[i] >= bounds[r] && block_indices_[i] < bounds[r + 1],
                                        MismatchError, "topkdsa: rank ", source, " sent index ",
                                        block_indices_[i], " outside region ", r, ": ranks passed different n");
                        accumulator_.add(block_indices_[i], block_values_[i]);
                      }
                    });
  reduced_.indices.clear();
  reduced_.values.clear();
  accumulator_.extract(reduced_);

  gather_reduced(n, bounds, result);
  zero_delivered(acc, selected_, result);
}

void SparseAllreduceTopkDSA::gather_reduced(int64_t n, const std::vector<int64_t>& bounds, SparseResult& result) {
  const int P = comm_.size();
  const int r = comm_.rank();
  const auto divisor = static_cast<float>(P);
  const std::vector<int64_t> counts = allgather_counts(comm_, static_cast<int64_t>(reduced_.indices.size()));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (3 * total < n) {
    allgatherv_coo(comm_, counts, reduced_.indices.data(), reduced_.values.data(), coo_index_bytes(n), gather_wire_,
                   all_indices_, all_values_);
    result.indices = all_indices_;  // regions in order, each ascending
    result.values.resize(all_values_.size());
    for (size_t i = 0; i < all_values_.size(); ++i) result.values[i] = all_values_[i] / divisor;
    return;
  }
  dense_.resize(static_cast<size_t>(n));
  std::fill(dense_.begin() + bounds[r], dense_.begin() + bounds[r + 1], 0.0f);
  for (size_t i = 0; i < reduced_.indices.size(); ++i) dense_[reduced_.indices[i]] = reduced_.values[i];
  std::vector<size_t> block_bytes(P);
  for (int q = 0; q < P; ++q) block_bytes[q] = static_cast<size_t>(bounds[q + 1] - bounds[q]) * sizeof(float);
  AllgatherRing ring(comm_);
  ring.start(dense_.data(), block_bytes);
  run_to_completion(ring);
  for (int64_t j = 0; j < n; ++j)
    if (dense_[j] != 0.0f) {
      result.indices.push_back(j);
      result.values.push_back(dense_[j] / divisor);
    }
}

}  // namespace concord::sparse
