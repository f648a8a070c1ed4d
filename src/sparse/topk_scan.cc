#include "sparse/topk_scan.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "common/enforce.h"

// On x86-64 with GCC/Clang the compaction has hand-written AVX-512 and AVX2 kernels chosen
// at run time (__builtin_cpu_supports), and the counting/summing loops are compiled for the
// baseline, x86-64-v3 and x86-64-v4 (target_clones; the loader picks one, as in
// common/reduce.cc). Every variant does the same integer/IEEE comparisons and the same
// additions in the same order, so results never depend on the CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CONCORD_X86_SCAN 1
#include <immintrin.h>
#define CONCORD_SCAN_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#else
#define CONCORD_X86_SCAN 0
#define CONCORD_SCAN_KERNEL
#endif

namespace concord::sparse::detail {
namespace {

// Elements per compaction block: block-local offsets fit a stack buffer of uint32 (plus
// 16 entries of slack for the AVX-512 kernel's full-vector stores).
constexpr int64_t kBlock = 4096;
constexpr int64_t kSlack = 16;
// Elements per vector test of a block: "does any of these 16 pass?" is one or two vector
// compares and an OR-reduction; only groups with a hit are compacted element by element.
constexpr int kGroup = 16;

// The three tests, each on the magnitude |x| obtained by clearing the sign bit.
enum class Test { kKeyAtLeast, kAbsAtLeast, kAbsGreater };
struct Threshold {
  uint32_t key = 0;  // kKeyAtLeast: magnitude_key(x) >= key
  float value = 0;   // kAbsAtLeast / kAbsGreater: |x| >= value / |x| > value (IEEE)
};

template <Test kTest>
inline int passes(float v, Threshold th) {
  if constexpr (kTest == Test::kKeyAtLeast) return magnitude_key(v) >= th.key;
  if constexpr (kTest == Test::kAbsAtLeast) return key_value(magnitude_key(v)) >= th.value;
  return key_value(magnitude_key(v)) > th.value;
}

// Portable kernel (CPUs without AVX2, other architectures, sanitizer builds): writes the
// offsets i < len that pass to out (ascending); returns how many. Branch-free inside a
// group: out[m] is always written, m advances only on a pass.
template <Test kTest>
int64_t compact_block_portable(const float* __restrict x, int64_t len, Threshold th, uint32_t* __restrict out) {
  int64_t m = 0;
  int64_t i = 0;
  for (; i + kGroup <= len; i += kGroup) {
    int any = 0;
    for (int j = 0; j < kGroup; ++j) any |= passes<kTest>(x[i + j], th);
    if (!any) continue;
    for (int j = 0; j < kGroup; ++j) {
      out[m] = static_cast<uint32_t>(i + j);
      m += passes<kTest>(x[i + j], th);
    }
  }
  for (; i < len; ++i) {
    out[m] = static_cast<uint32_t>(i);
    m += passes<kTest>(x[i], th);
  }
  return m;
}

#if CONCORD_X86_SCAN
// AVX-512: one 16-lane compare gives the pass mask; VPCOMPRESSD packs the passing lane
// offsets into a register that is stored whole (the slack absorbs the extra lanes).
template <Test kTest>
__attribute__((target("avx512f"))) int64_t compact_block_avx512(const float* __restrict x, int64_t len, Threshold th,
                                                                uint32_t* __restrict out) {
  const __m512i sign_off = _mm512_set1_epi32(0x7fffffff);
  const __m512i key = _mm512_set1_epi32(static_cast<int>(th.key));  // keys < 2^31: signed compare
  const __m512 value = _mm512_set1_ps(th.value);
  const __m512i step = _mm512_set1_epi32(kGroup);
  __m512i offsets = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t m = 0;
  int64_t i = 0;
  for (; i + kGroup <= len; i += kGroup, offsets = _mm512_add_epi32(offsets, step)) {
    const __m512i bits = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), sign_off);
    __mmask16 mask;
    if constexpr (kTest == Test::kKeyAtLeast) {
      mask = _mm512_cmpge_epi32_mask(bits, key);
    } else if constexpr (kTest == Test::kAbsAtLeast) {
      mask = _mm512_cmp_ps_mask(_mm512_castsi512_ps(bits), value, _CMP_GE_OQ);
    } else {
      mask = _mm512_cmp_ps_mask(_mm512_castsi512_ps(bits), value, _CMP_GT_OQ);
    }
    if (mask == 0) continue;
    _mm512_storeu_si512(out + m, _mm512_maskz_compress_epi32(mask, offsets));
    m += __builtin_popcount(mask);
  }
  for (; i < len; ++i) {
    out[m] = static_cast<uint32_t>(i);
    m += passes<kTest>(x[i], th);
  }
  return m;
}

// AVX2: two 8-lane compares and MOVMSKPS give a 16-bit pass mask; its set bits are
// written out one by one (few at the densities top-k runs at).
template <Test kTest>
__attribute__((target("avx2,bmi"))) int64_t compact_block_avx2(const float* __restrict x, int64_t len, Threshold th,
                                                               uint32_t* __restrict out) {
  const __m256i sign_off = _mm256_set1_epi32(0x7fffffff);
  const __m256i key_minus_1 = _mm256_set1_epi32(static_cast<int>(th.key) - 1);  // bits >= key <=> bits > key-1
  const __m256 value = _mm256_set1_ps(th.value);
  auto lane_mask = [&](const float* p) __attribute__((target("avx2"))) {
    const __m256i bits = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p)), sign_off);
    if constexpr (kTest == Test::kKeyAtLeast) {
      return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(bits, key_minus_1)));
    } else if constexpr (kTest == Test::kAbsAtLeast) {
      return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_castsi256_ps(bits), value, _CMP_GE_OQ));
    } else {
      return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_castsi256_ps(bits), value, _CMP_GT_OQ));
    }
  };
  int64_t m = 0;
  int64_t i = 0;
  for (; i + kGroup <= len; i += kGroup) {
    unsigned mask = static_cast<unsigned>(lane_mask(x + i)) | (static_cast<unsigned>(lane_mask(x + i + 8)) << 8);
    while (mask != 0) {
      out[m++] = static_cast<uint32_t>(i + __builtin_ctz(mask));
      mask &= mask - 1;
    }
  }
  for (; i < len; ++i) {
    out[m] = static_cast<uint32_t>(i);
    m += passes<kTest>(x[i], th);
  }
  return m;
}
#endif

template <Test kTest>
using BlockKernel = int64_t (*)(const float*, int64_t, Threshold, uint32_t*);

bool cpu_has_avx512() {
#if CONCORD_X86_SCAN
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}
bool cpu_has_avx2() {
#if CONCORD_X86_SCAN
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi");
  return has;
#else
  return false;
#endif
}

std::atomic<ScanKernel> g_forced{ScanKernel::kAuto};

// The block kernel in force: the forced one, else the best the CPU has. All give identical
// output.
template <Test kTest>
BlockKernel<kTest> block_kernel() {
  ScanKernel kind = g_forced.load(std::memory_order_relaxed);
  if (kind == ScanKernel::kAuto) {
    kind = cpu_has_avx512() ? ScanKernel::kAvx512 : cpu_has_avx2() ? ScanKernel::kAvx2 : ScanKernel::kPortable;
  }
#if CONCORD_X86_SCAN
  if (kind == ScanKernel::kAvx512) return &compact_block_avx512<kTest>;
  if (kind == ScanKernel::kAvx2) return &compact_block_avx2<kTest>;
#endif
  return &compact_block_portable<kTest>;
}

// Appends the passing indices of x[0..n) to out, block by block; with `keys`, also their
// magnitude keys, read while the block is still in L1.
template <Test kTest>
void append_passing(const float* x, int64_t n, Threshold th, std::vector<int64_t>& out, std::vector<uint32_t>* keys) {
  const BlockKernel<kTest> kernel = block_kernel<kTest>();
  uint32_t local[kBlock + kSlack];
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t len = std::min(kBlock, n - base);
    const int64_t m = kernel(x + base, len, th, local);
    if (m == 0) continue;
    const size_t old = out.size();
    out.resize(old + static_cast<size_t>(m));
    int64_t* dst = out.data() + old;
    for (int64_t i = 0; i < m; ++i) dst[i] = base + local[i];
    if (keys == nullptr) continue;
    keys->resize(old + static_cast<size_t>(m));
    uint32_t* key_dst = keys->data() + old;
    for (int64_t i = 0; i < m; ++i) key_dst[i] = magnitude_key(x[base + local[i]]);
  }
}

template <Test kTest>
inline int64_t count_passing(const float* __restrict x, int64_t n, Threshold th) {
  int64_t total = 0;
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t len = std::min(kBlock, n - base);
    int32_t block = 0;  // <= kBlock: a 32-bit sum vectorises best
    for (int64_t i = 0; i < len; ++i) block += passes<kTest>(x[base + i], th);
    total += block;
  }
  return total;
}

CONCORD_SCAN_KERNEL int64_t count_abs_kernel(const float* x, int64_t n, float value, bool strict) {
  const Threshold th{0, value};
  return strict ? count_passing<Test::kAbsGreater>(x, n, th) : count_passing<Test::kAbsAtLeast>(x, n, th);
}

// Sums of d = x[i] - shift and of d^2 in one pass, 8 lanes each: element i goes to lane
// i % 8, lanes are added pairwise at the end. Written with GCC vector types (8 doubles),
// which every clone lowers to its widest registers doing the same IEEE operations per lane;
// this file is compiled with -ffp-contract=off (no FMA in one clone and not another).
constexpr int kLanes = 8;
typedef float Float8 __attribute__((vector_size(32)));
typedef double Double8 __attribute__((vector_size(64)));
struct ShiftedSums {
  double sum = 0;
  double squares = 0;
};
CONCORD_SCAN_KERNEL ShiftedSums shifted_sums(const float* __restrict x, int64_t n, double shift) {
  Double8 lane = {};
  Double8 lane_sq = {};
  const Double8 shift8 = Double8{} + shift;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Float8 f;
    std::memcpy(&f, x + i, sizeof f);
    const Double8 d = __builtin_convertvector(f, Double8) - shift8;
    lane += d;
    lane_sq += d * d;
  }
  for (int l = 0; i < n; ++i, ++l) {
    const double d = static_cast<double>(x[i]) - shift;
    lane[l] += d;
    lane_sq[l] += d * d;
  }
  auto total = [](const Double8& v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); };
  return ShiftedSums{total(lane), total(lane_sq)};
}

// Acklam's rational approximation of the normal quantile (relative error < 1.15e-9).
double acklam_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
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

bool force_scan_kernel(ScanKernel kernel) {
  if ((kernel == ScanKernel::kAvx512 && !cpu_has_avx512()) || (kernel == ScanKernel::kAvx2 && !cpu_has_avx2())) {
    return false;
  }
  g_forced.store(kernel, std::memory_order_relaxed);
  return true;
}

void append_key_at_least(const float* x, int64_t n, uint32_t key, std::vector<int64_t>& out,
                         std::vector<uint32_t>* keys) {
  append_passing<Test::kKeyAtLeast>(x, n, Threshold{key, 0}, out, keys);
}

void append_abs_above(const float* x, int64_t n, float threshold, bool strict, std::vector<int64_t>& out) {
  if (strict) {
    append_passing<Test::kAbsGreater>(x, n, Threshold{0, threshold}, out, nullptr);
  } else {
    append_passing<Test::kAbsAtLeast>(x, n, Threshold{0, threshold}, out, nullptr);
  }
}

int64_t count_abs_above(const float* x, int64_t n, float threshold, bool strict) {
  return count_abs_kernel(x, n, threshold, strict);
}

Moments moments(const float* x, int64_t n) {
  CONCORD_ENFORCE(n > 0, InvalidArgument, "moments of an empty buffer (n = ", n, ")");
  // One pass around shift = x[0]: var = E[d^2] - E[d]^2 with d = x - shift loses only
  // (mean - shift)^2 / var ulps of float64, far below float32 resolution.
  const double shift = static_cast<double>(x[0]);
  const ShiftedSums sums = shifted_sums(x, n, shift);
  const double mean_d = sums.sum / static_cast<double>(n);
  Moments result;
  result.mean = shift + mean_d;
  result.stddev = std::sqrt(std::max(0.0, sums.squares / static_cast<double>(n) - mean_d * mean_d));
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
