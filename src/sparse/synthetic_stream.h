// A synthetic gradient stream for the sparse allreduces' benchmark (tools/microbench/sparse_bench.cc)
// and volume tests (tests/unit/test_oktopk_bound.cc): gradient of rank r at call t
// g[j] = s_j (sin(w_j t + phi_j + 0.3 r) + 0.3 z), with s_j log-normal(0, 1.5) (a few large
// coordinates, like real gradients), w_j uniform in [0, 0.05) (slow drift), phi_j uniform
// in [0, 2 pi), all three shared by every rank (seeded by `seed`), and z uniform in [-1, 1)
// per rank and call. With the residual carried, the unselected coordinates grow call after
// call (the regime in which Ok-Topk's reused thresholds over-select).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace concord::sparse {

class SyntheticGradientStream {
 public:
  /// The stream of `rank` for gradients of n float32 entries.
  SyntheticGradientStream(int64_t n, int rank, uint64_t seed)
      : scale_(n), rate_(n), phase_(n), noise_(seed * 7919 + rank) {
    std::mt19937_64 shared(seed);  // the same pattern on every rank
    std::lognormal_distribution<float> scale(0.0f, 1.5f);
    std::uniform_real_distribution<float> rate(0.0f, 0.05f), phase(0.0f, 6.2831853f);
    for (int64_t j = 0; j < n; ++j) {
      scale_[j] = scale(shared);
      rate_[j] = rate(shared);
      phase_[j] = phase(shared) + 0.3f * static_cast<float>(rank);
    }
  }
  /// acc[j] += g(t)[j] for j < n (acc holds at least n floats). Calls must come in order t.
  void add_to(float* acc, int t) {
    std::uniform_real_distribution<float> z(-1.0f, 1.0f);
    for (size_t j = 0; j < scale_.size(); ++j)
      acc[j] += scale_[j] * (std::sin(rate_[j] * static_cast<float>(t) + phase_[j]) + 0.3f * z(noise_));
  }

 private:
  std::vector<float> scale_, rate_, phase_;
  std::minstd_rand noise_;
};

}  // namespace concord::sparse
