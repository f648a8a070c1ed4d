#include "sim/sweep.h"

#include <algorithm>

#include "common/enforce.h"

namespace concord::sim {

std::vector<SweepRow> run_sweep(const SweepSpec& spec, const CostParams& params) {
  std::vector<const SimAlgorithm*> algorithms;
  if (spec.algorithms.empty())
    for (const auto& entry : simulated_algorithms()) algorithms.push_back(&entry);
  else
    for (const auto& name : spec.algorithms) algorithms.push_back(&find_simulated(name));

  std::vector<SweepRow> rows;
  for (const size_t bytes : spec.sizes) {
    for (const int P : spec.ranks) {
      const Topology topology = Topology::from_params(P, spec.ranks_per_node, params);
      const Problem problem = allreduce_problem(bytes, topology, spec.chunk_bytes);
      for (const SimAlgorithm* algorithm : algorithms) {
        if (!algorithm->declines(problem, topology).empty()) continue;
        const Prediction prediction = predict(*algorithm, problem, topology, params.gamma, spec.options);
        rows.push_back({bytes, P, algorithm->name, prediction.seconds, allreduce_busbw(bytes, P, prediction.seconds),
                        prediction.method});
      }
    }
  }
  return rows;
}

std::vector<SweepRow> best_per_point(const std::vector<SweepRow>& rows) {
  std::vector<SweepRow> best;
  for (const SweepRow& row : rows) {
    if (!best.empty() && best.back().bytes == row.bytes && best.back().ranks == row.ranks) {
      if (row.seconds < best.back().seconds) best.back() = row;
    } else {
      best.push_back(row);
    }
  }
  return best;
}

std::vector<size_t> geometric_sizes(size_t min_bytes, size_t max_bytes, double factor) {
  CONCORD_ENFORCE(factor > 1, InvalidArgument, "size factor must be > 1, got ", factor);
  std::vector<size_t> sizes;
  for (double size = static_cast<double>(std::max<size_t>(min_bytes, 1)); size <= static_cast<double>(max_bytes);
       size *= factor)
    sizes.push_back(static_cast<size_t>(size));
  return sizes;
}

std::vector<int> power_of_two_ranks(int min_ranks, int max_ranks) {
  std::vector<int> ranks;
  for (int P = 1; P <= max_ranks && P > 0; P *= 2)
    if (P >= min_ranks) ranks.push_back(P);
  return ranks;
}

}  // namespace concord::sim
