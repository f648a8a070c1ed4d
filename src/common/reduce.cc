#include "common/reduce.h"

#include <cstdint>
#include <type_traits>

#include "common/enforce.h"
#include "common/half.h"
#include "common/reduce_ops.h"

// The kernels are compiled for the baseline instruction set and, on x86-64 with GCC or
// Clang, also for x86-64-v3 (AVX2, FMA, F16C) and x86-64-v4 (AVX-512); the dynamic loader
// picks the best clone for the CPU (GNU ifunc). float16 additionally has an F16C kernel
// (hardware conversions, chosen at run time). Every variant performs the same IEEE
// operations element by element, so results do not depend on which one runs.
// This file is compiled with -fno-trapping-math (src/CMakeLists.txt): FP exceptions are
// never observed, and it lets the branch-free conversions be if-converted and vectorised.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CONCORD_X86_KERNELS 1
#include <immintrin.h>
#define CONCORD_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#else
#define CONCORD_X86_KERNELS 0
#define CONCORD_KERNEL
#endif

namespace concord {
namespace {

using reduce_ops::BFloat16;
using reduce_ops::Float16;
using reduce_ops::Max;
using reduce_ops::Min;
using reduce_ops::Product;
using reduce_ops::Sum;

// Plain dtypes: dst[i] = combine(dst[i], src[i]), or out of place (a != dst)
// dst[i] = combine(a[i], src[i]). Two loops so that each one's pointers are restrict.
template <typename T, typename Combine>
void combine_loop(T* __restrict dst, const T* __restrict src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = combine(dst[i], src[i]);
}
template <typename T, typename Combine>
void combine_right_loop(T* __restrict dst, const T* __restrict a, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = combine(a[i], dst[i]);
}
template <typename T, typename Combine>
void combine_into_loop(T* __restrict dst, const T* __restrict a, const T* __restrict src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = combine(a[i], src[i]);
}

// 16-bit floats: widen to float32, combine, round back to nearest even, in one pass; the
// branch-free conversions of half.h let the loop vectorise.
template <typename Half, typename Combine>
void combine_half_loop(uint16_t* __restrict dst, const uint16_t* __restrict src, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduce_ops::combine_half<Half>(dst[i], src[i], combine);
}
template <typename Half, typename Combine>
void combine_half_right_loop(uint16_t* __restrict dst, const uint16_t* __restrict a, size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduce_ops::combine_half<Half>(a[i], dst[i], combine);
}
template <typename Half, typename Combine>
void combine_half_into_loop(uint16_t* __restrict dst, const uint16_t* __restrict a, const uint16_t* __restrict src,
                            size_t n, Combine combine) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduce_ops::combine_half<Half>(a[i], src[i], combine);
}

// Calls loop(combine) with the combination of `op` on T. Throws InvalidArgument for an
// unknown op code.
template <typename T, typename Loop>
void with_combine(ReduceOp op, Loop&& loop) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return loop(Sum<T>{});
    case ReduceOp::kProduct: return loop(Product<T>{});
    case ReduceOp::kMin: return loop(Min<T>{});
    case ReduceOp::kMax: return loop(Max<T>{});
    case ReduceOp::kAdasum: break;  // not element-wise: AllreduceAdasum
  }
  CONCORD_THROW(InvalidArgument, "reduce op code ", static_cast<int>(op), " has no element-wise kernel");
}

// dst = op(a, src); a == dst is the in-place loop, src == dst the right-operand one.
template <typename T>
void reduce_typed(void* dst, const void* a, const void* src, size_t n, ReduceOp op) {
  with_combine<T>(op, [&](auto combine) {
    if (a == dst) {
      combine_loop(static_cast<T*>(dst), static_cast<const T*>(src), n, combine);
    } else if (src == dst) {
      combine_right_loop(static_cast<T*>(dst), static_cast<const T*>(a), n, combine);
    } else {
      combine_into_loop(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(src), n, combine);
    }
  });
}

template <typename Half>
void reduce_half(void* dst, const void* a, const void* src, size_t n, ReduceOp op) {
  with_combine<float>(op, [&](auto combine) {
    auto* d = static_cast<uint16_t*>(dst);
    const auto* s = static_cast<const uint16_t*>(src);
    if (a == dst) {
      combine_half_loop<Half>(d, s, n, combine);
    } else if (src == dst) {
      combine_half_right_loop<Half>(d, static_cast<const uint16_t*>(a), n, combine);
    } else {
      combine_half_into_loop<Half>(d, static_cast<const uint16_t*>(a), s, n, combine);
    }
  });
}

// One cloned entry point per dtype (the clones inline everything below them).
CONCORD_KERNEL void reduce_float32(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<float>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_float64(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<double>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_int32(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<int32_t>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_int64(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<int64_t>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_int8(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<int8_t>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_uint8(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<uint8_t>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_int16(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_typed<int16_t>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_float16(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_half<Float16>(d, a, s, n, op);
}
CONCORD_KERNEL void reduce_bfloat16(void* d, const void* a, const void* s, size_t n, ReduceOp op) {
  reduce_half<BFloat16>(d, a, s, n, op);
}

#if CONCORD_X86_KERNELS
// float16 with the F16C conversions (VCVTPH2PS / VCVTPS2PH, round to nearest even; both
// quiet a NaN exactly as half.h does), 8 elements per step; the tail goes through half.h.
// dst = op(left, src); left or src may be dst (each step loads before it stores).
template <typename Combine>
__attribute__((target("avx2,f16c"))) void combine_float16_f16c(uint16_t* dst, const uint16_t* left, const uint16_t* src,
                                                               size_t n, Combine combine) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(left + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(combine(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) dst[i] = float_to_float16(combine(float16_to_float(left[i]), float16_to_float(src[i])));
}

// The ops on 8 floats, with the scalar ops' exact semantics: MINPS(b, a) = b < a ? b : a.
struct SumF16c {
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256 b) const { return _mm256_add_ps(a, b); }
  float operator()(float a, float b) const { return a + b; }
};
struct ProductF16c {
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256 b) const { return _mm256_mul_ps(a, b); }
  float operator()(float a, float b) const { return a * b; }
};
struct MinF16c {
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256 b) const { return _mm256_min_ps(b, a); }
  float operator()(float a, float b) const { return b < a ? b : a; }
};
struct MaxF16c {
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256 b) const { return _mm256_max_ps(b, a); }
  float operator()(float a, float b) const { return b > a ? b : a; }
};

// True when the CPU has F16C and AVX2; then reduces float16 (dst = op(a, src)) and
// returns true.
bool reduce_float16_f16c(void* dst, const void* a, const void* src, size_t n, ReduceOp op) {
  static const bool supported = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  if (!supported) return false;
  auto* d = static_cast<uint16_t*>(dst);
  const auto* l = static_cast<const uint16_t*>(a);
  const auto* s = static_cast<const uint16_t*>(src);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: combine_float16_f16c(d, l, s, n, SumF16c{}); return true;
    case ReduceOp::kProduct: combine_float16_f16c(d, l, s, n, ProductF16c{}); return true;
    case ReduceOp::kMin: combine_float16_f16c(d, l, s, n, MinF16c{}); return true;
    case ReduceOp::kMax: combine_float16_f16c(d, l, s, n, MaxF16c{}); return true;
    case ReduceOp::kAdasum: break;
  }
  return false;  // unknown op: the portable kernel reports it
}
#else
bool reduce_float16_f16c(void*, const void*, const void*, size_t, ReduceOp) { return false; }
#endif

template <typename T, typename Compute>
void scale_typed(T* dst, const T* src, size_t n, Compute factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduce_ops::scale_element<T, Compute>(src[i], factor);
}

template <typename Half>
void scale_half(uint16_t* dst, const uint16_t* src, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduce_ops::scale_half_element<Half>(src[i], factor);
}

}  // namespace

void reduce_into_portable(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kFloat32: return reduce_float32(dst, a, src, count, op);
    case DataType::kFloat64: return reduce_float64(dst, a, src, count, op);
    case DataType::kInt32: return reduce_int32(dst, a, src, count, op);
    case DataType::kInt64: return reduce_int64(dst, a, src, count, op);
    case DataType::kInt8: return reduce_int8(dst, a, src, count, op);
    case DataType::kUInt8: return reduce_uint8(dst, a, src, count, op);
    case DataType::kInt16: return reduce_int16(dst, a, src, count, op);
    case DataType::kBool: break;  // no reduction: the runtime refuses bool reductions at enqueue
    case DataType::kFloat16: return reduce_float16(dst, a, src, count, op);
    case DataType::kBFloat16: return reduce_bfloat16(dst, a, src, count, op);
  }
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}

void reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) {
  if (dtype == DataType::kFloat16 && reduce_float16_f16c(dst, a, src, count, op)) return;
  reduce_into_portable(dst, a, src, count, dtype, op);
}

void reduce_inplace_portable(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  reduce_into_portable(dst, dst, src, count, dtype, op);
}

void reduce_inplace(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  reduce_into(dst, dst, src, count, dtype, op);
}

void scale_buffer(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kFloat32:
      return scale_typed(static_cast<float*>(dst), static_cast<const float*>(src), count, static_cast<float>(factor));
    case DataType::kFloat64:
      return scale_typed(static_cast<double*>(dst), static_cast<const double*>(src), count, factor);
    case DataType::kInt32:
      return scale_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, factor);
    case DataType::kInt64:
      return scale_typed(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, factor);
    case DataType::kInt8: return scale_typed(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, factor);
    case DataType::kUInt8:
      return scale_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, factor);
    case DataType::kInt16:
      return scale_typed(static_cast<int16_t*>(dst), static_cast<const int16_t*>(src), count, factor);
    case DataType::kBool: break;
    case DataType::kFloat16:
      return scale_half<Float16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                                 static_cast<float>(factor));
    case DataType::kBFloat16:
      return scale_half<BFloat16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
                                  static_cast<float>(factor));
  }
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}

}  // namespace concord
