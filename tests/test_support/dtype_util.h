// Element access shared by every C++ suite that handles typed buffers (unit, MPI, device,
// the KVStore scenarios): store/load an element of any Concord dtype as a double (or as a
// long double, exact for int64), integer elements bit for bit, the lists of dtypes and ops,
// unit roundoff, and an independent (test-side) IEEE round-to-nearest-even used as the
// reference for the 16-bit float conversions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "concord/types.h"
#include "test_support/dtype_lists.h"

namespace concord::testing_util {

/// Concatenates its arguments with operator<< (test names, messages).
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

using testlists::all_dtypes;
using testlists::all_ops;

inline bool is_integer(DataType dtype) {
  return dtype == DataType::kInt32 || dtype == DataType::kInt64 || dtype == DataType::kInt16 ||
         dtype == DataType::kInt8 || dtype == DataType::kUInt8 || dtype == DataType::kBool;
}

/// float32, float64, float16 or bfloat16.
inline bool is_floating(DataType dtype) { return !is_integer(dtype); }

/// Rounds `x` to the nearest value of a binary floating-point format with `precision`
/// significand bits (implicit bit included) and exponent range [emin, emax], ties to even,
/// overflowing to infinity. Written without the code under test (frexp + nearbyint).
inline double round_to_format(double x, int precision, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int k = 0;
  std::frexp(x, &k);  // |x| = m * 2^k, m in [0.5, 1): unbiased exponent k - 1
  const int e = std::max(k - 1, emin);
  const double ulp = std::ldexp(1.0, e - (precision - 1));
  const double q = std::nearbyint(x / ulp) * ulp;  // default rounding: to nearest even
  if (std::fabs(q) >= std::ldexp(1.0, emax + 1)) return std::copysign(INFINITY, x);
  return q;
}
inline double round_to_float16(double x) { return round_to_format(x, 11, -14, 15); }
inline double round_to_bfloat16(double x) { return round_to_format(x, 8, -126, 127); }

/// Unit roundoff (half an ulp, relative) of a floating dtype; 0 for integers. A power of
/// two, so exact in any wider type too.
inline double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return std::ldexp(1.0, -24);
    case DataType::kFloat64: return std::ldexp(1.0, -53);
    case DataType::kFloat16: return std::ldexp(1.0, -11);
    case DataType::kBFloat16: return std::ldexp(1.0, -8);
    default: return 0;
  }
}

/// Writes `value` as element `index` of a buffer of `dtype`. Floats are rounded to the
/// dtype (nearest even); integers are converted through int64 and truncated modulo 2^bits.
/// T is double unless named (store<long double>: int64 values beyond 2^53 stay exact); it is
/// never deduced, so an integer argument goes through double as before.
template <typename T = double>
void store(void* buffer, size_t index, DataType dtype, std::type_identity_t<T> value) {
  auto* p = static_cast<uint8_t*>(buffer) + index * dtype_size(dtype);
  auto put = [p](auto v) { std::memcpy(p, &v, sizeof v); };
  switch (dtype) {
    case DataType::kFloat32: return put(static_cast<float>(value));
    case DataType::kFloat64: return put(static_cast<double>(value));
    case DataType::kFloat16: return put(float_to_float16(static_cast<float>(value)));
    case DataType::kBFloat16: return put(float_to_bfloat16(static_cast<float>(value)));
    case DataType::kInt32: return put(static_cast<int32_t>(static_cast<int64_t>(value)));
    case DataType::kInt64: return put(static_cast<int64_t>(value));
    case DataType::kInt16: return put(static_cast<int16_t>(static_cast<int64_t>(value)));
    case DataType::kInt8: return put(static_cast<int8_t>(static_cast<int64_t>(value)));
    case DataType::kUInt8: return put(static_cast<uint8_t>(static_cast<int64_t>(value)));
    case DataType::kBool: return put(static_cast<uint8_t>(value != 0));
  }
}

/// Reads element `index` of a buffer of `dtype` as a T: a double (exact for every dtype but
/// int64 beyond 2^53) unless named; load<long double> is exact for every dtype (x86-64's
/// 64-bit mantissa).
template <typename T = double>
T load(const void* buffer, size_t index, DataType dtype) {
  const auto* p = static_cast<const uint8_t*>(buffer) + index * dtype_size(dtype);
  auto raw = [p]<typename E>(E v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
    case DataType::kFloat32: return static_cast<T>(raw(float{}));
    case DataType::kFloat64: return static_cast<T>(raw(double{}));
    case DataType::kFloat16: return static_cast<T>(float16_to_float(raw(uint16_t{})));
    case DataType::kBFloat16: return static_cast<T>(bfloat16_to_float(raw(uint16_t{})));
    case DataType::kInt32: return static_cast<T>(raw(int32_t{}));
    case DataType::kInt64: return static_cast<T>(raw(int64_t{}));
    case DataType::kInt16: return static_cast<T>(raw(int16_t{}));
    case DataType::kInt8: return static_cast<T>(raw(int8_t{}));
    case DataType::kUInt8:
    case DataType::kBool: return static_cast<T>(raw(uint8_t{}));
  }
  return static_cast<T>(NAN);
}

/// Reads element `index` of an integer buffer as its bits zero-extended to 64 (for exact
/// comparisons modulo 2^bits).
inline uint64_t load_bits(const void* buffer, size_t index, DataType dtype) {
  const size_t size = dtype_size(dtype);
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const uint8_t*>(buffer) + index * size, size);  // little-endian
  return v;
}

/// Reads element `index` of an integer buffer exactly: sign-extended for the signed types,
/// zero-extended for uint8.
inline int64_t load_int(const void* buffer, size_t index, DataType dtype) {
  const auto* p = static_cast<const uint8_t*>(buffer) + index * dtype_size(dtype);
  switch (dtype) {
    case DataType::kInt8: return static_cast<int8_t>(*p);
    case DataType::kUInt8:
    case DataType::kBool: return *p;
    case DataType::kInt16: {
      int16_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
  }
}

/// Writes the low dtype_size(dtype) bytes of `value` (two's complement truncation) as
/// element `index` of an integer buffer.
inline void store_int(void* buffer, size_t index, DataType dtype, int64_t value) {
  const size_t size = dtype_size(dtype);
  std::memcpy(static_cast<uint8_t*>(buffer) + index * size, &value, size);  // little-endian
}

/// Mask of the low dtype_size(dtype) * 8 bits.
inline uint64_t bits_mask(DataType dtype) {
  const size_t bits = dtype_size(dtype) * 8;
  return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

/// Index of the first element (of `element` bytes) where two equally sized buffers differ, or -1.
inline long first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t element) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i / element);
  return -1;
}

}  // namespace concord::testing_util
