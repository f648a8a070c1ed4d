// Timing helper shared by the benchmark tools (concord-kernelbench, concord-topkbench,
// concord-calibrate's round trips): the median wall time of repeated calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace concord::tools {

/// Median seconds (steady_clock) of `iterations` (>= 1) calls of `body` after `warmup`
/// untimed ones.
template <typename Body>
double median_seconds(int warmup, int iterations, Body&& body) {
  for (int i = 0; i < warmup; ++i) body();
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace concord::tools
