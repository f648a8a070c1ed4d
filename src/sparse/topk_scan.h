// The scanning kernels behind top-k selection (src/sparse/topk.h): branch-free magnitude
// keys, compaction of the indices that pass a threshold, counting, moments, and the
// standard normal quantile of Gaussiank. Internal to src/sparse (tests use them too).
//
// Magnitude key: the IEEE-754 bits of a float32 with the sign bit cleared. For non-NaN
// values the unsigned order of keys is the order of |x| (+0 and -0 share key 0; subnormals
// and infinities included), and a NaN's key lies above +inf's: a total order, computed
// with one AND, that makes every selection deterministic.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace concord::sparse::detail {

/// The magnitude key of `value`: its bits with the sign cleared (see the file comment).
inline uint32_t magnitude_key(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits & 0x7fffffffu;
}

/// The float whose bits are `key` (the inverse of magnitude_key for non-negative floats).
inline float key_value(uint32_t key) {
  float value;
  std::memcpy(&value, &key, sizeof value);
  return value;
}

/// Appends to `out` (ascending) every j in [0, n) with magnitude_key(x[j]) >= key, and
/// their keys to `*keys` when given (same order; both vectors must have equal sizes).
/// One streaming pass over n * 4 bytes; AVX-512/AVX2 kernels where the CPU has them.
void append_key_at_least(const float* x, int64_t n, uint32_t key, std::vector<int64_t>& out,
                         std::vector<uint32_t>* keys = nullptr);

/// Appends to `out` (ascending) every j in [0, n) with |x[j]| >= threshold, or
/// |x[j]| > threshold when `strict` (IEEE comparisons: a NaN never passes).
void append_abs_above(const float* x, int64_t n, float threshold, bool strict, std::vector<int64_t>& out);

/// The compaction kernels behind append_*: kAuto picks the best the CPU has (AVX-512,
/// else AVX2, else the portable compiler-vectorised loop); all give identical output.
enum class ScanKernel { kAuto, kPortable, kAvx2, kAvx512 };

/// Makes every later append_* call use `kernel` (process-wide; for tests and benchmarks).
/// Returns false, changing nothing, when the CPU lacks it.
bool force_scan_kernel(ScanKernel kernel);

/// The number of j in [0, n) with |x[j]| >= threshold (> when `strict`); IEEE comparisons.
int64_t count_abs_above(const float* x, int64_t n, float threshold, bool strict);

/// Mean and population standard deviation (divide by n) of x[0..n), n > 0, accumulated in
/// float64 in a fixed order (one pass of x - x[0] and its square, 8 interleaved partial
/// sums): identical results on every CPU and every run. Throws InvalidArgument for n <= 0.
struct Moments {
  double mean = 0;
  double stddev = 0;
};
Moments moments(const float* x, int64_t n);

/// Phi^-1(p): the standard normal quantile for p in (0, 1) (Acklam's rational approximation
/// refined by two Halley steps on std::erfc; absolute error below 1e-12 in double).
/// Throws InvalidArgument outside (0, 1).
double normal_quantile(double p);

}  // namespace concord::sparse::detail
