#include "common/reduce.h"

#include <algorithm>
#include <cstdint>

#include "common/enforce.h"
#include "common/half.h"

namespace concord {
namespace {

template <typename T>
void reduce_typed(T* __restrict dst, const T* __restrict src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        // Wrap-around as unsigned: signed overflow is undefined behaviour in C++.
        using U = std::make_unsigned_t<T>;
        for (size_t i = 0; i < n; ++i)
          dst[i] = static_cast<T>(static_cast<U>(dst[i]) + static_cast<U>(src[i]));
      } else {
        for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
      }
      return;
    case ReduceOp::kProduct:
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        using U = std::make_unsigned_t<T>;
        for (size_t i = 0; i < n; ++i)
          dst[i] = static_cast<T>(static_cast<U>(dst[i]) * static_cast<U>(src[i]));
      } else {
        for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] * src[i]);
      }
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] > dst[i] ? src[i] : dst[i];
      return;
  }
  CONCORD_THROW(InvalidArgument, "unknown reduce op code ", static_cast<int>(op));
}

// 16-bit floats: widen to float32, reduce, round back. Done in blocks so the widening and
// the arithmetic vectorise.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half(uint16_t* dst, const uint16_t* src, size_t n, ReduceOp op) {
  constexpr size_t kBlock = 256;
  float a[kBlock], b[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = std::min(kBlock, n - base);
    for (size_t i = 0; i < m; ++i) a[i] = ToFloat(dst[base + i]);
    for (size_t i = 0; i < m; ++i) b[i] = ToFloat(src[base + i]);
    reduce_typed<float>(a, b, m, op);
    for (size_t i = 0; i < m; ++i) dst[base + i] = FromFloat(a[i]);
  }
}

template <typename T, typename Compute>
void scale_typed(T* dst, const T* src, size_t n, Compute factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<Compute>(src[i]) * factor);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_half(uint16_t* dst, const uint16_t* src, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) dst[i] = FromFloat(ToFloat(src[i]) * factor);
}

}  // namespace

void reduce_inplace(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kFloat32:
      return reduce_typed(static_cast<float*>(dst), static_cast<const float*>(src), count, op);
    case DataType::kFloat64:
      return reduce_typed(static_cast<double*>(dst), static_cast<const double*>(src), count, op);
    case DataType::kInt32:
      return reduce_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, op);
    case DataType::kInt64:
      return reduce_typed(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, op);
    case DataType::kInt8:
      return reduce_typed(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, op);
    case DataType::kUInt8:
      return reduce_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, op);
    case DataType::kFloat16:
      return reduce_half<float16_to_float, float_to_float16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, op);
    case DataType::kBFloat16:
      return reduce_half<bfloat16_to_float, float_to_bfloat16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, op);
  }
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}

void scale_buffer(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kFloat32:
      return scale_typed(static_cast<float*>(dst), static_cast<const float*>(src), count,
                         static_cast<float>(factor));
    case DataType::kFloat64:
      return scale_typed(static_cast<double*>(dst), static_cast<const double*>(src), count, factor);
    case DataType::kInt32:
      return scale_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, factor);
    case DataType::kInt64:
      return scale_typed(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count, factor);
    case DataType::kInt8:
      return scale_typed(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count, factor);
    case DataType::kUInt8:
      return scale_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count, factor);
    case DataType::kFloat16:
      return scale_half<float16_to_float, float_to_float16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
          static_cast<float>(factor));
    case DataType::kBFloat16:
      return scale_half<bfloat16_to_float, float_to_bfloat16>(
          static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count,
          static_cast<float>(factor));
  }
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}

}  // namespace concord
