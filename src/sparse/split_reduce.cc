#include "sparse/split_reduce.h"

namespace concord::sparse {

void SplitReduce::run(const CooBlock& selected, const Regions& regions, int64_t n, size_t index_bytes, int bucket_steps,
                      const std::string& algorithm, CooBlock& reduced) {
  const int P = comm_.size(), r = comm_.rank();
  positions_ = regions.split(selected.indices);
  std::vector<int64_t> send_counts(P);
  for (int q = 0; q < P; ++q) send_counts[q] = positions_[q + 1] - positions_[q];
  const std::vector<int64_t> recv_counts = exchange_counts(comm_, send_counts, n, algorithm);

  send_wire_.resize(coo_wire_bytes(selected.size(), index_bytes));
  size_t offset = 0;
  for (int q = 0; q < P; ++q) {
    coo_pack(selected, positions_[q], send_counts[q], index_bytes, send_wire_.data() + offset);
    offset += coo_wire_bytes(send_counts[q], index_bytes);
  }
  const int64_t base = regions.start(r), length = regions.end(r) - base;
  if (static_cast<int64_t>(region_.size()) < length) region_.resize(length, 0.0f);
  exchange_.run(send_wire_.data(), send_counts, recv_counts, index_bytes, bucket_steps,
                [&](int, const uint8_t* wire, int64_t count) {
                  coo_scatter_add(wire, count, index_bytes, base, length, region_.data());
                });
  reduced.clear();
  for (int64_t j = 0; j < length; ++j) {
    if (region_[j] != 0) reduced.push_back(base + j, region_[j]);
    region_[j] = 0;
  }
}

}  // namespace concord::sparse
