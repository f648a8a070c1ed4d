#include "sparse/partition.h"

#include "algorithms/allreduce_recursive_doubling.h"
#include "common/enforce.h"

namespace concord::sparse {

Regions::Regions(int64_t n, const std::vector<int64_t>& boundaries) {
  starts_.assign(1, 0);
  for (int64_t b : boundaries) {
    CONCORD_ENFORCE(b >= starts_.back() && b <= n, InternalError, "region boundary ", b,
                    " out of order or outside [0, ", n, "]");
    starts_.push_back(b);
  }
  starts_.push_back(n);
}

Regions Regions::equal(int64_t n, int P) {
  std::vector<int64_t> boundaries(P - 1);
  for (int q = 1; q < P; ++q) boundaries[q - 1] = q * (n / P);
  return Regions(n, boundaries);
}

std::vector<int64_t> Regions::split(const std::vector<int64_t>& indices) const {
  const int P = size();
  std::vector<int64_t> positions(P + 1);
  positions[0] = 0;
  for (int q = 1; q < P; ++q)
    positions[q] = std::lower_bound(indices.begin(), indices.end(), starts_[q]) - indices.begin();
  positions[P] = static_cast<int64_t>(indices.size());
  return positions;
}

std::vector<int64_t> local_boundaries(const std::vector<int64_t>& indices, int P) {
  const int64_t c = static_cast<int64_t>(indices.size()) / P;
  std::vector<int64_t> result(P - 1);
  for (int q = 1; q < P; ++q) result[q - 1] = indices[q * c];
  return result;
}

Regions repartition(Communicator& comm, ScratchBuffer& scratch, const std::vector<int64_t>& selected, int64_t n) {
  const int P = comm.size();
  if (P == 1) return Regions::equal(n, 1);
  // words[0..P-2]: local boundaries; words[P-1]: 1 when this rank has fewer than P entries.
  std::vector<int64_t> words(P, 0);
  if (static_cast<int64_t>(selected.size()) < P) {
    words[P - 1] = 1;
  } else {
    const std::vector<int64_t> local = local_boundaries(selected, P);
    std::copy(local.begin(), local.end(), words.begin());
  }
  AllreduceRecursiveDoubling allreduce(comm, scratch);
  allreduce.start(words.data(), words.size(), DataType::kInt64, ReduceOp::kSum);
  run_to_completion(allreduce);
  if (words[P - 1] > 0) return Regions::equal(n, P);
  std::vector<int64_t> boundaries(P - 1);
  for (int q = 0; q < P - 1; ++q) boundaries[q] = std::clamp<int64_t>(words[q] / P, 0, n);
  for (int q = 1; q < P - 1; ++q) boundaries[q] = std::max(boundaries[q], boundaries[q - 1]);
  return Regions(n, boundaries);
}

}  // namespace concord::sparse
