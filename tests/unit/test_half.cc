// float16 / bfloat16 conversions (src/common/half.h), checked exhaustively over all 65536
// bit patterns and against an independent round-to-nearest-even (dtype_util.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "common/half.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::round_to_bfloat16;
using testing_util::round_to_float16;

bool float16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; }
bool bfloat16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0; }

// Decodes binary16 by its definition, without the code under test.
double float16_by_definition(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Float16, EveryBitPatternDecodesByDefinitionAndRoundTrips) {
  int failures = 0;
  for (uint32_t bits = 0; bits < 65536 && failures < 10; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = float16_to_float(h);
    const uint16_t back = float_to_float16(f);
    if (float16_is_nan(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << "0x" << bits;
      EXPECT_TRUE(float16_is_nan(back)) << std::hex << "0x" << bits << " -> 0x" << back;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << "NaN sign of 0x" << bits;
      failures += !float16_is_nan(back);
      continue;
    }
    const double expected = float16_by_definition(h);
    EXPECT_EQ(static_cast<double>(f), expected) << std::hex << "0x" << bits;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << "sign of 0x" << bits;
    EXPECT_EQ(back, h) << std::hex << "0x" << bits << " -> " << f << " -> 0x" << back;
    failures += back != h || static_cast<double>(f) != expected;
  }
}

// Between every two adjacent finite float16 values (both signs, subnormals included): the
// midpoint rounds to the one with an even mantissa, anything off the midpoint to the nearer.
TEST(Float16, RoundToNearestEvenAtEveryHalfwayPoint) {
  int failures = 0;
  for (uint16_t lower = 0; lower < 0x7bff && failures < 10; ++lower) {
    const uint16_t upper = lower + 1;
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float a = float16_to_float(lower | sign);
      const float b = float16_to_float(upper | sign);
      const float mid = (a + b) / 2;  // exact: needs 12 significant bits
      const uint16_t even = ((lower & 1) == 0 ? lower : upper) | sign;
      const uint16_t at_mid = float_to_float16(mid);
      const uint16_t below = float_to_float16(std::nextafter(mid, a));
      const uint16_t above = float_to_float16(std::nextafter(mid, b));
      EXPECT_EQ(at_mid, even) << std::hex << "midpoint of 0x" << (lower | sign) << " and 0x" << (upper | sign);
      EXPECT_EQ(below, lower | sign) << std::hex << "just inside 0x" << (lower | sign);
      EXPECT_EQ(above, upper | sign) << std::hex << "just inside 0x" << (upper | sign);
      failures += at_mid != even || below != (lower | sign) || above != (upper | sign);
    }
  }
}

TEST(Float16, OverflowToInfinity) {
  EXPECT_EQ(float_to_float16(65504.0f), 0x7bff);                        // largest finite
  EXPECT_EQ(float_to_float16(std::nextafter(65520.0f, 0.0f)), 0x7bff);  // below the midpoint
  EXPECT_EQ(float_to_float16(65520.0f), 0x7c00) << "midpoint ties to even: infinity";
  EXPECT_EQ(float_to_float16(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_float16(1e10f), 0x7c00);
  EXPECT_EQ(float_to_float16(3.4e38f), 0x7c00);
  EXPECT_EQ(float_to_float16(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_float16(-INFINITY), 0xfc00);
}

TEST(Float16, SubnormalsAndZeros) {
  const float min_subnormal = std::ldexp(1.0f, -24);
  EXPECT_EQ(float_to_float16(min_subnormal), 0x0001);
  EXPECT_EQ(float_to_float16(min_subnormal / 2), 0x0000) << "half the smallest subnormal ties to zero";
  EXPECT_EQ(float_to_float16(std::nextafter(min_subnormal / 2, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_float16(1.5f * min_subnormal), 0x0002) << "ties to even";
  EXPECT_EQ(float_to_float16(2.5f * min_subnormal), 0x0002) << "ties to even";
  EXPECT_EQ(float_to_float16(std::ldexp(1023.0f, -24)), 0x03ff) << "largest subnormal";
  EXPECT_EQ(float_to_float16(std::ldexp(1023.5f, -24)), 0x0400) << "rounds up into the normals";
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -14)), 0x0400) << "smallest normal";
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_float16(-std::numeric_limits<float>::denorm_min()), 0x8000) << "keeps the sign";
  EXPECT_EQ(float_to_float16(0.0f), 0x0000);
  EXPECT_EQ(float_to_float16(-0.0f), 0x8000);
  EXPECT_EQ(float16_to_float(0x0001), min_subnormal);
  EXPECT_EQ(float16_to_float(0x8001), -min_subnormal);
}

TEST(Float16, NaNsStayNaN) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u, 0x7fffffffu, 0x7f802000u}) {
    const uint16_t h = float_to_float16(std::bit_cast<float>(bits));
    EXPECT_TRUE(float16_is_nan(h)) << std::hex << "float 0x" << bits << " -> 0x" << h;
    EXPECT_EQ(h & 0x8000, (bits >> 16) & 0x8000) << std::hex << "sign of 0x" << bits;
  }
}

// A stride through all 2^32 float bit patterns against the test-side reference rounding.
TEST(Float16, FloatSweepMatchesReferenceRounding) {
  int failures = 0;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32) && failures < 10; bits += 4093) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    const double expected = round_to_float16(f);
    const uint16_t h = float_to_float16(f);
    const double got = float16_to_float(h);
    EXPECT_EQ(got, expected) << std::hex << "float 0x" << bits << " (" << f << ") -> 0x" << h;
    EXPECT_EQ(std::signbit(got), std::signbit(f)) << std::hex << "float 0x" << bits;
    failures += got != expected;
  }
}

TEST(BFloat16, EveryBitPatternIsTheUpperHalfOfAFloatAndRoundTrips) {
  int failures = 0;
  for (uint32_t bits = 0; bits < 65536 && failures < 10; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = bfloat16_to_float(h);
    EXPECT_EQ(std::bit_cast<uint32_t>(f), bits << 16) << std::hex << "0x" << bits;
    const uint16_t back = float_to_bfloat16(f);
    if (bfloat16_is_nan(h)) {
      EXPECT_TRUE(bfloat16_is_nan(back)) << std::hex << "0x" << bits << " -> 0x" << back;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << "NaN sign of 0x" << bits;
      failures += !bfloat16_is_nan(back);
    } else {
      EXPECT_EQ(back, h) << std::hex << "0x" << bits;
      failures += back != h;
    }
  }
}

TEST(BFloat16, RoundToNearestEvenAtEveryHalfwayPoint) {
  int failures = 0;
  for (uint32_t lower = 0; lower < 0x7f7f && failures < 10; ++lower) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint32_t mid_bits = ((lower | sign) << 16) | 0x8000u;
      const uint16_t even = static_cast<uint16_t>(((lower & 1) == 0 ? lower : lower + 1) | sign);
      const uint16_t at_mid = float_to_bfloat16(std::bit_cast<float>(mid_bits));
      const uint16_t below = float_to_bfloat16(std::bit_cast<float>(mid_bits - 1));
      const uint16_t above = float_to_bfloat16(std::bit_cast<float>(mid_bits + 1));
      EXPECT_EQ(at_mid, even) << std::hex << "midpoint 0x" << mid_bits;
      EXPECT_EQ(below, lower | sign) << std::hex << "below midpoint 0x" << mid_bits;
      EXPECT_EQ(above, (lower + 1) | sign) << std::hex << "above midpoint 0x" << mid_bits;
      failures += at_mid != even || below != (lower | sign) || above != ((lower + 1) | sign);
    }
  }
}

TEST(BFloat16, OverflowNaNAndSubnormals) {
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f) << "largest finite";
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7f8000u)), 0x7f80) << "midpoint ties to infinity";
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bfloat16(INFINITY), 0x7f80);
  for (uint32_t bits : {0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7f80ffffu}) {
    const uint16_t h = float_to_bfloat16(std::bit_cast<float>(bits));
    EXPECT_TRUE(bfloat16_is_nan(h)) << std::hex << "float 0x" << bits << " -> 0x" << h
                                    << " (a NaN whose payload is only in the low half)";
  }
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x00008000u)), 0x0000) << "subnormal tie to even";
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x00018000u)), 0x0002) << "subnormal tie to even";
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x007fffffu)), 0x0080) << "rounds into the normals";
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
}

TEST(BFloat16, FloatSweepMatchesReferenceRounding) {
  int failures = 0;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32) && failures < 10; bits += 4093) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    const double expected = round_to_bfloat16(f);
    const double got = bfloat16_to_float(float_to_bfloat16(f));
    EXPECT_EQ(got, expected) << std::hex << "float 0x" << bits << " (" << f << ")";
    failures += got != expected;
  }
}

}  // namespace
}  // namespace concord
