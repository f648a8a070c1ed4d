// The per-element operations behind every reduction and scaling kernel: the CPU kernels
// (common/reduce.cc) and the CUDA kernels (device/cuda/kernels.cu) are loops over these
// same functions, so both round, wrap and treat NaN and signed zero identically
// (CONCORD_HD compiles them for host and device; tests/unit/test_device_elementwise.cc
// checks them on the host against reduce_inplace/scale_buffer in every run).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/half.h"

namespace concord::reduce_ops {

// Floating-point + and * with the CPU's NaN rule: x86 returns the first NaN operand,
// quieted, with its payload; NVIDIA GPUs return the canonical NaN 0x7fffffff. On the
// device the rule is therefore spelled out (which NaN a NaN-with-NaN keeps may still
// differ between CPU kernel variants: common/reduce.h).
#if defined(__CUDA_ARCH__)
__device__ inline float quiet(float x) { return __uint_as_float(__float_as_uint(x) | 0x00400000u); }
__device__ inline double quiet(double x) {
  return __longlong_as_double(__double_as_longlong(x) | 0x0008000000000000ll);
}
#endif
template <typename T>
CONCORD_HD T add(T a, T b) {
#if defined(__CUDA_ARCH__)
  if (a != a) return quiet(a);
  if (b != b) return quiet(b);
#endif
  return a + b;
}
template <typename T>
CONCORD_HD T mul(T a, T b) {
#if defined(__CUDA_ARCH__)
  if (a != a) return quiet(a);
  if (b != b) return quiet(b);
#endif
  return a * b;
}

// The element-wise combination of each op. Signed integer sums and products wrap as
// unsigned (signed overflow is undefined behaviour in C++). min/max keep dst when the
// comparison is false (so a NaN in src never replaces dst; a NaN in dst stays; -0 vs +0
// keeps dst) -- not fminf/fmaxf nor CUDA's __hmin/__hmax, which pick the non-NaN operand.
template <typename T>
struct Sum {
  CONCORD_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return add(a, b);
    }
  }
};
template <typename T>
struct Product {
  CONCORD_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return mul(a, b);
    }
  }
};
template <typename T>
struct Min {
  CONCORD_HD T operator()(T a, T b) const { return b < a ? b : a; }
};
template <typename T>
struct Max {
  CONCORD_HD T operator()(T a, T b) const { return b > a ? b : a; }
};

// 16-bit floats: widen to float32, combine, round back to nearest even (half.h; NaN keeps
// its payload, quieted, where CUDA's own conversions return 0x7fff).
struct Float16 {
  CONCORD_HD static float widen(uint16_t h) { return float16_to_float(h); }
  CONCORD_HD static uint16_t narrow(float f) { return float_to_float16(f); }
};
struct BFloat16 {
  CONCORD_HD static float widen(uint16_t h) { return bfloat16_to_float(h); }
  CONCORD_HD static uint16_t narrow(float f) { return float_to_bfloat16(f); }
};

/// One element of a 16-bit float reduction: narrow(combine(widen(a), widen(b))).
template <typename Half, typename Combine>
CONCORD_HD uint16_t combine_half(uint16_t a, uint16_t b, Combine combine) {
  return Half::narrow(combine(Half::widen(a), Half::widen(b)));
}

/// One element of scale_buffer for plain dtypes: computed in `Compute` (float for
/// float32, double for float64 and the integers; integers truncate toward zero).
template <typename T, typename Compute>
CONCORD_HD T scale_element(T x, Compute factor) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Compute>(x) * factor);
  } else {
    return mul<Compute>(static_cast<Compute>(x), factor);
  }
}

/// One element of scale_buffer for 16-bit floats (float32 factor, one rounding).
template <typename Half>
CONCORD_HD uint16_t scale_half_element(uint16_t x, float factor) {
  return Half::narrow(mul(Half::widen(x), factor));
}

}  // namespace concord::reduce_ops
