// IEEE 754 binary16 (float16) and bfloat16 conversions to and from float32, with
// round-to-nearest-even, NaN preserved (quieted) and overflow to infinity.
//
// Every conversion is branch-free: each case (normal, subnormal, zero, infinity, NaN) is
// computed and the right one selected, so loops over arrays of them vectorise (the
// reduction kernels in reduce.cc rely on it) on any instruction set, without F16C.
// The same functions are compiled into the CUDA kernels (CONCORD_HD; device/cuda/
// kernels.cu), so GPU results carry the CPU's rounding and NaN payloads bit for bit.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define CONCORD_HD __host__ __device__
#else
#define CONCORD_HD
#endif

namespace concord {

CONCORD_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

CONCORD_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

/// bfloat16 bits -> float32 (exact).
CONCORD_HD inline float bfloat16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

/// float32 -> bfloat16 bits, round to nearest even; NaN stays NaN.
CONCORD_HD inline uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t nan = (u >> 16) | 0x0040u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/// float16 bits -> float32 (exact, subnormals included).
CONCORD_HD inline float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa in place
  const uint32_t exponent = magnitude & 0x0f800000u;
  const uint32_t normal = magnitude + 0x38000000u;   // rebias 15 -> 127
  const uint32_t special = magnitude + 0x70000000u;  // exponent 31 -> 255: infinity or NaN
  // Subnormal or zero: 2^-14 * (1 + m/1024) - 2^-14 = m * 2^-24, exact in float32.
  const uint32_t subnormal = float_bits(bits_float(magnitude + 0x38800000u) - bits_float(0x38800000u));
  const uint32_t value = exponent == 0x0f800000u ? special : (exponent == 0 ? subnormal : normal);
  return bits_float(sign | value);
}

/// float32 -> float16 bits, round to nearest even, overflow to infinity, NaN stays NaN.
CONCORD_HD inline uint16_t float_to_float16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  const uint32_t nan = 0x7e00u | ((abs >> 13) & 0x3ffu);
  const uint32_t normal = (abs + 0xfffu + ((abs >> 13) & 1u) - 0x38000000u) >> 13;  // for abs >= 2^-14
  // Subnormal or zero: adding 0.5 (2^-1) makes the float adder round to nearest even at 2^-24.
  const uint32_t subnormal = float_bits(bits_float(abs) + 0.5f) - 0x3f000000u;
  const uint32_t value = abs > 0x7f800000u    ? nan
                         : abs >= 0x477ff000u ? 0x7c00u  // rounds to >= 65520: infinity
                         : abs >= 0x38800000u ? normal
                                              : subnormal;
  return static_cast<uint16_t>(sign | value);
}

}  // namespace concord
