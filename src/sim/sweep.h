// Sweeps of the simulator (what concord-sim prints): every modelled algorithm x message size
// x world size, the predicted time and bus bandwidth of each, and the fastest algorithm per
// (size, world size).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "sim/simulator.h"

namespace concord::sim {

struct SweepSpec {
  std::vector<size_t> sizes;            ///< message sizes in bytes
  std::vector<int> ranks;               ///< world sizes P
  std::vector<std::string> algorithms;  ///< names; empty = every modelled algorithm
  int ranks_per_node = 1;               ///< 1: flat switch at inter constants; else two-level
  size_t chunk_bytes = default_chunk_bytes();
  SimOptions options;
};

struct SweepRow {
  size_t bytes;
  int ranks;
  std::string algorithm;
  double seconds;
  double busbw;  ///< bytes/s (nccl-tests allreduce factor 2(P-1)/P)
  Method method;
};

/// Runs `spec` with machine constants `params` (gamma from params.gamma). Algorithms that
/// decline a topology (hierarchical on a flat switch) are left out. Rows are ordered by
/// size, then P, then algorithm (spec order). Throws InvalidArgument for an unknown name.
std::vector<SweepRow> run_sweep(const SweepSpec& spec, const CostParams& params);

/// Rows of the fastest algorithm per (size, P), in sweep order.
std::vector<SweepRow> best_per_point(const std::vector<SweepRow>& rows);

/// Sizes from `min_bytes` to `max_bytes` (inclusive when hit), multiplied by `factor` (> 1).
std::vector<size_t> geometric_sizes(size_t min_bytes, size_t max_bytes, double factor);
/// Powers of two from `min_ranks` (rounded up to one) to `max_ranks`.
std::vector<int> power_of_two_ranks(int min_ranks, int max_ranks);

}  // namespace concord::sim
