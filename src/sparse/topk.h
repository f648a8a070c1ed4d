// Top-k selection by magnitude for sparse allreduce (Phase 0 of
// Li & Hoefler, "Near-Optimal Sparse Allreduce for Distributed Deep Learning", PPoPP 2022).
// float32 values, int64 indices. Every function is O(n) (no full sort) and vectorised
// where it scans; results are deterministic (identical inputs give identical outputs).
// Magnitudes are ordered by their bits with the sign cleared: for non-NaN values that is
// the order of |x| (+0 == -0), and a NaN ranks above +inf in topk_exact and
// kth_largest_magnitude; select_above and gaussian_threshold's counts compare in IEEE
// arithmetic (a NaN never passes). Implementation: topk.cc, kernels in topk_scan.h.
#pragma once

#include <cstdint>
#include <vector>

namespace concord::sparse {

/// k = max(1, floor(n * density)) for n > 0, 0 for n = 0: the number of entries a density
/// keeps. Throws InvalidArgument unless 0 < density <= 1 and n >= 0.
int64_t topk_count(int64_t n, double density);

/// The k-th largest |x[j]| over j in [0, n) (k in [1, n]); average O(n) (selection, not a
/// sort). Throws InvalidArgument for k outside [1, n].
float kth_largest_magnitude(const float* x, int64_t n, int64_t k);

/// Exact top-k: the indices of the k entries of largest |x| (ties broken by larger |x|,
/// then lower index), in ascending index order, written to `indices` (resized to
/// min(k, n)). k = 0 or n = 0 gives an empty result. Average O(n).
void topk_exact(const float* x, int64_t n, int64_t k, std::vector<int64_t>& indices);

/// Indices j (ascending) with |x[j]| >= threshold, or > threshold when `strict`, written to
/// `indices`. Vectorised scan.
void select_above(const float* x, int64_t n, float threshold, bool strict, std::vector<int64_t>& indices);

/// Feedback rule of the reused threshold: after selecting `selected` entries with target k,
/// th /= factor if selected < lo * k; th *= factor if selected > hi * k.
struct ThresholdFeedback {
  double lo = 2.0 / 3.0;
  double hi = 5.0 / 4.0;
  double factor = 1.012;
  /// The threshold for the next call.
  float adjust(float threshold, int64_t selected, int64_t k) const;
};

/// Gaussiank's threshold estimate (Shi et al. 2019): mean + Phi^-1(1 - density/2) * std of
/// x (n > 0, 0 < density <= 1), then corrected up to `corrections` times (divide by 1.02
/// while fewer than 3k/4 entries pass, multiply while more than 5k/4 pass).
float gaussian_threshold(const float* x, int64_t n, double density, int corrections = 3);

}  // namespace concord::sparse
