#include "sparse/baseline.h"

#include <algorithm>
#include <limits>

#include "common/enforce.h"
#include "sparse/coo_exchange.h"
#include "sparse/options.h"

namespace concord::sparse {

SparseBaseline::SparseBaseline(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options), gather_(comm) {
  validate_options(options_);
}

void SparseBaseline::allreduce(float* acc, int64_t n, SparseResult& result) {
  result.indices.clear();
  result.values.clear();
  if (n > 0) run(acc, n, result);
  else check_empty(n);  // throws on every rank unless every rank passed 0
}

void SparseBaseline::check_length(int64_t n) { check_lengths(gather_.allgather_counts(n), n, name()); }

void SelectGatherSum::run(float* acc, int64_t n, SparseResult& result) {
  const int P = comm_.size();
  if (counts_known()) check_length(n);
  select(acc, n, indices_);
  take_entries(acc, indices_, selected_);
  std::vector<int64_t> counts(P, selected_.size());
  if (!counts_known()) counts = gather_counts_and_lengths(static_cast<int64_t>(selected_.size()), n);
  gather_.allgatherv(selected_, counts, coo_index_bytes(n), all_);
  sum_sorted_blocks(all_, counts, n, static_cast<float>(comm_.size()), result);
  zero_delivered(acc, indices_, result);
}

std::vector<int64_t> SelectGatherSum::gather_counts_and_lengths(int64_t count, int64_t n) {
  const int P = comm_.size();
  const std::vector<int64_t> words = gather_.allgather_words({count, n});
  std::vector<int64_t> counts(P), lengths(P);
  for (int q = 0; q < P; ++q) {
    counts[q] = words[2 * q];
    lengths[q] = words[2 * q + 1];
  }
  check_lengths(lengths, n, name());
  return counts;
}

void SelectGatherSum::check_empty(int64_t n) {
  if (counts_known()) check_length(n);
  else gather_counts_and_lengths(0, n);
}

void sum_sorted_blocks(const CooBlock& all, const std::vector<int64_t>& counts, int64_t n, float divisor,
                       SparseResult& out) {
  const size_t P = counts.size();
  std::vector<int64_t> head(P), end(P);
  int64_t at = 0;
  for (size_t q = 0; q < P; ++q) {
    head[q] = at;
    at += counts[q];
    end[q] = at;
  }
  out.indices.clear();
  out.values.clear();
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  for (;;) {
    int64_t j = kNone;
    for (size_t q = 0; q < P; ++q)
      if (head[q] < end[q]) j = std::min(j, all.indices[head[q]]);
    if (j == kNone) return;
    CONCORD_ENFORCE(j >= 0 && j < n, MismatchError, "sparse allreduce received index ", j, " outside [0, ", n,
                    "): ranks passed different n");
    float sum = 0.0f;
    for (size_t q = 0; q < P; ++q)
      if (head[q] < end[q] && all.indices[head[q]] == j) sum += all.values[head[q]++];
    if (sum != 0.0f) {
      out.indices.push_back(j);
      out.values.push_back(sum / divisor);
    }
  }
}

void take_entries(const float* dense, const std::vector<int64_t>& indices, CooBlock& out) {
  out.indices = indices;
  out.values.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) out.values[i] = dense[indices[i]];
}

void zero_delivered(float* acc, const std::vector<int64_t>& selected, const SparseResult& result) {
  size_t at = 0;
  const size_t m = result.indices.size();
  for (int64_t index : selected) {
    while (at < m && result.indices[at] < index) ++at;
    if (at == m) break;
    if (result.indices[at] == index) acc[index] = 0.0f;
  }
}

}  // namespace concord::sparse
