#include "sparse/topk_scan.h"

#include <algorithm>
#include <cmath>

#include "common/enforce.h"

// Entry points are compiled for the baseline and, on x86-64 with GCC/Clang, for x86-64-v3
// (AVX2) and x86-64-v4 (AVX-512); the loader picks one (GNU ifunc), as in common/reduce.cc.
// Every clone does the same integer/IEEE comparisons, so results never depend on the CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CONCORD_SCAN_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#else
#define CONCORD_SCAN_KERNEL
#endif

namespace concord::sparse::detail {
namespace {

// Elements per compaction block: block-local offsets fit a stack buffer of uint32.
constexpr int64_t kBlock = 4096;
// Elements per vector test of a block: "does any of these 16 pass?" is one or two vector
// compares and an OR-reduction; only groups with a hit are compacted element by element.
constexpr int kGroup = 16;

struct KeyAtLeast {
  uint32_t key;
  int operator()(float v) const { return magnitude_key(v) >= key; }
};
struct AbsAtLeast {
  float threshold;
  int operator()(float v) const { return key_value(magnitude_key(v)) >= threshold; }
};
struct AbsGreater {
  float threshold;
  int operator()(float v) const { return key_value(magnitude_key(v)) > threshold; }
};

// Writes the offsets i < len with pass(x[i]) to out (ascending); returns how many.
// Branch-free inside a group: out[m] is always written, m advances only on a pass.
template <typename Pass>
inline int64_t compact_block(const float* __restrict x, int64_t len, Pass pass, uint32_t* __restrict out) {
  int64_t m = 0;
  int64_t i = 0;
  for (; i + kGroup <= len; i += kGroup) {
    int any = 0;
    for (int j = 0; j < kGroup; ++j) any |= pass(x[i + j]);
    if (!any) continue;
    for (int j = 0; j < kGroup; ++j) {
      out[m] = static_cast<uint32_t>(i + j);
      m += pass(x[i + j]);
    }
  }
  for (; i < len; ++i) {
    out[m] = static_cast<uint32_t>(i);
    m += pass(x[i]);
  }
  return m;
}

template <typename Pass>
inline void append_passing(const float* x, int64_t n, Pass pass, std::vector<int64_t>& out) {
  uint32_t local[kBlock];
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t len = std::min(kBlock, n - base);
    const int64_t m = compact_block(x + base, len, pass, local);
    if (m == 0) continue;
    const size_t old = out.size();
    out.resize(old + static_cast<size_t>(m));
    int64_t* dst = out.data() + old;
    for (int64_t i = 0; i < m; ++i) dst[i] = base + local[i];
  }
}

template <typename Pass>
inline int64_t count_passing(const float* __restrict x, int64_t n, Pass pass) {
  int64_t total = 0;
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t len = std::min(kBlock, n - base);
    int32_t block = 0;  // <= kBlock: a 32-bit sum vectorises best
    for (int64_t i = 0; i < len; ++i) block += pass(x[base + i]);
    total += block;
  }
  return total;
}

CONCORD_SCAN_KERNEL void append_key_kernel(const float* x, int64_t n, uint32_t key, std::vector<int64_t>& out) {
  append_passing(x, n, KeyAtLeast{key}, out);
}
CONCORD_SCAN_KERNEL void append_abs_kernel(const float* x, int64_t n, float th, bool strict, std::vector<int64_t>& out) {
  if (strict) {
    append_passing(x, n, AbsGreater{th}, out);
  } else {
    append_passing(x, n, AbsAtLeast{th}, out);
  }
}
CONCORD_SCAN_KERNEL int64_t count_abs_kernel(const float* x, int64_t n, float th, bool strict) {
  return strict ? count_passing(x, n, AbsGreater{th}) : count_passing(x, n, AbsAtLeast{th});
}

// Sums of x[i] (shift = 0) or of (x[i] - shift)^2 (squares), 8 lanes: element i goes to
// lane i % 8, lanes are added pairwise at the end. A fixed order: no reassociation needed
// for the compiler to vectorise it (each lane is its own chain).
constexpr int kLanes = 8;
CONCORD_SCAN_KERNEL double lane_sum(const float* __restrict x, int64_t n, double shift, bool squares) {
  double lane[kLanes] = {};
  int64_t i = 0;
  if (squares) {
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const double d = static_cast<double>(x[i + l]) - shift;
        lane[l] += d * d;
      }
    }
    for (int l = 0; i < n; ++i, ++l) {
      const double d = static_cast<double>(x[i]) - shift;
      lane[l] += d * d;
    }
  } else {
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(x[i + l]);
    }
    for (int l = 0; i < n; ++i, ++l) lane[l] += static_cast<double>(x[i]);
  }
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Acklam's rational approximation of the normal quantile (relative error < 1.15e-9).
double acklam_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  if (p < kLow) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - kLow) return -tail(std::sqrt(-2 * std::log1p(-p)));
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

void append_key_at_least(const float* x, int64_t n, uint32_t key, std::vector<int64_t>& out) {
  append_key_kernel(x, n, key, out);
}

void append_abs_above(const float* x, int64_t n, float threshold, bool strict, std::vector<int64_t>& out) {
  append_abs_kernel(x, n, threshold, strict, out);
}

int64_t count_abs_above(const float* x, int64_t n, float threshold, bool strict) {
  return count_abs_kernel(x, n, threshold, strict);
}

Moments moments(const float* x, int64_t n) {
  CONCORD_ENFORCE(n > 0, InvalidArgument, "moments of an empty buffer (n = ", n, ")");
  Moments result;
  result.mean = lane_sum(x, n, 0.0, false) / static_cast<double>(n);
  result.stddev = std::sqrt(lane_sum(x, n, result.mean, true) / static_cast<double>(n));
  return result;
}

double normal_quantile(double p) {
  CONCORD_ENFORCE(p > 0 && p < 1, InvalidArgument, "normal_quantile needs p in (0, 1), got ", p);
  // Upper half by symmetry: 1 - p is exact for p >= 0.5 (Sterbenz), and Phi(x) - q is then
  // evaluated in the lower tail where erfc has no cancellation.
  if (p > 0.5) return -normal_quantile(1 - p);
  double x = acklam_quantile(p);
  // Halley steps on f(x) = Phi(x) - p, Phi(x) = erfc(-x / sqrt 2) / 2.
  constexpr double kSqrt2 = 1.4142135623730950488;
  constexpr double kSqrt2Pi = 2.5066282746310005024;
  for (int step = 0; step < 2; ++step) {
    const double e = 0.5 * std::erfc(-x / kSqrt2) - p;
    const double u = e * kSqrt2Pi * std::exp(x * x / 2);
    x -= u / (1 + x * u / 2);
  }
  return x;
}

}  // namespace concord::sparse::detail
