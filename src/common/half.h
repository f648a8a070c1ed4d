// IEEE 754 binary16 (float16) and bfloat16 conversions to and from float32, with
// round-to-nearest-even, NaN preserved (quieted) and overflow to infinity.
#pragma once

#include <cstdint>
#include <cstring>

namespace concord {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// bfloat16 bits -> float32 (exact).
inline float bfloat16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

/// float32 -> bfloat16 bits, round to nearest even; NaN stays NaN.
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// float16 bits -> float32 (exact, subnormals included).
inline float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);
  // Subnormal: value = mantissa * 2^-24, exactly representable in float32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return bits_float(sign | float_bits(magnitude));
}

/// float32 -> float16 bits, round to nearest even, overflow to infinity, NaN stays NaN.
inline uint16_t float_to_float16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
  if (abs >= 0x38800000u) {  // normal float16 range (>= 2^-14)
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal or zero: add 0.5 (2^-1) so the float adder rounds to nearest even at 2^-24.
  const float shifted = bits_float(abs) + 0.5f;
  return static_cast<uint16_t>(sign | (float_bits(shifted) - 0x3f000000u));
}

}  // namespace concord
