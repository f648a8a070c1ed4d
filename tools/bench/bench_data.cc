#include "tools/bench/bench_data.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/half.h"
#include "common/reduce.h"

namespace concord::bench {
namespace {

double reduction_input(int rank, size_t i, ReduceOp op) {
  // Products: one factor in {1, 2, 3} (rank 0), every other factor 1.
  if (op == ReduceOp::kProduct) return rank == 0 ? 1.0 + static_cast<double>(i % 3) : 1.0;
  return static_cast<double>((static_cast<size_t>(rank) + i) % 5);
}

void store(uint8_t* p, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32: {
      const float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DataType::kFloat64: std::memcpy(p, &v, 8); return;
    case DataType::kFloat16: {
      const uint16_t x = float_to_float16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      return;
    }
    case DataType::kBFloat16: {
      const uint16_t x = float_to_bfloat16(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      return;
    }
    case DataType::kInt32: {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DataType::kInt64: {
      const int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      return;
    }
    case DataType::kInt8: {
      const int8_t x = static_cast<int8_t>(v);
      std::memcpy(p, &x, 1);
      return;
    }
    case DataType::kUInt8: {
      const uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(p, &x, 1);
      return;
    }
    case DataType::kInt16: {
      const int16_t x = static_cast<int16_t>(v);
      std::memcpy(p, &x, 2);
      return;
    }
    case DataType::kBool: {
      const uint8_t x = v != 0;
      std::memcpy(p, &x, 1);
      return;
    }
  }
}

// Compares result[0, count) with expected values that `make(buffer, first_index, n)`
// writes, a bounded piece at a time (results may be gigabytes).
template <typename Make>
long compare_in_pieces(const uint8_t* result, size_t first, size_t count, DataType dtype, Make make) {
  constexpr size_t kPiece = size_t{1} << 16;
  const size_t element = dtype_size(dtype);
  std::vector<uint8_t> expected(std::min(count, kPiece) * element);
  long wrong = 0;
  for (size_t done = 0; done < count; done += kPiece) {
    const size_t n = std::min(kPiece, count - done);
    make(expected.data(), first + done, n);
    for (size_t i = 0; i < n; ++i)
      wrong += std::memcmp(result + (done + i) * element, expected.data() + i * element, element) != 0;
  }
  return wrong;
}

}  // namespace

void fill_reduction_input(uint8_t* dst, size_t first, size_t count, DataType dtype, int rank, ReduceOp op) {
  const size_t element = dtype_size(dtype);
  for (size_t i = 0; i < count; ++i) store(dst + i * element, dtype, reduction_input(rank, first + i, op));
}

long count_wrong_reduction(const uint8_t* result, size_t first, size_t count, DataType dtype, int ranks, ReduceOp op) {
  return compare_in_pieces(result, first, count, dtype, [&](uint8_t* expected, size_t start, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      double value = reduction_input(0, start + i, op);
      for (int r = 1; r < ranks; ++r) {
        const double v = reduction_input(r, start + i, op);
        switch (op) {
          case ReduceOp::kSum:
          case ReduceOp::kAverage: value += v; break;
          case ReduceOp::kProduct: value *= v; break;
          case ReduceOp::kMin: value = std::min(value, v); break;
          case ReduceOp::kMax: value = std::max(value, v); break;
          case ReduceOp::kAdasum: break;  // not element-wise; the bench does not offer it
        }
      }
      store(expected + i * dtype_size(dtype), dtype, value);
    }
    if (op == ReduceOp::kAverage) scale_buffer(expected, expected, n, dtype, 1.0 / ranks);
  });
}

void fill_pattern(uint8_t* dst, size_t first, size_t count, DataType dtype, int rank) {
  const size_t element = dtype_size(dtype);
  for (size_t i = 0; i < count; ++i)
    store(dst + i * element, dtype, static_cast<double>((static_cast<size_t>(rank) * 31 + first + i) % 97));
}

long count_wrong_pattern(const uint8_t* result, size_t first, size_t count, DataType dtype, int rank) {
  return compare_in_pieces(result, first, count, dtype, [&](uint8_t* expected, size_t start, size_t n) {
    fill_pattern(expected, start, n, dtype, rank);
  });
}

}  // namespace concord::bench
