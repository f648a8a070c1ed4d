// Inputs whose allreduce is exact in every dtype, and the expected result, for tests of
// algorithms that must produce bit-exact results (unit suite and MPI suite alike).
//
// Values are small integers: sums of up to 16 ranks stay within [-128, 128] (exact in
// float16/bfloat16; int8 and uint8 wrap, and so does the reference), products are of +-1
// and, on ranks below 8, 2 (at most 256 in magnitude). The reference reduces in int64 with
// wrap-around and stores the result in the dtype.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "concord/types.h"
#include "test_support/dtype_util.h"

namespace concord::testlists {

/// Input of `rank` at element `i` for `op`.
inline int64_t exact_input(int rank, size_t i, ReduceOp op) {
  if (op == ReduceOp::kProduct) {
    if (rank < 8 && (i + rank) % 5 == 0) return 2;
    return (i * 3 + rank) % 2 ? -1 : 1;
  }
  return static_cast<int64_t>((rank * 7 + i * 13) % 17) - 8;
}

/// Writes `value` as element `i` of a buffer of `dtype` (integers truncate modulo 2^bits).
inline void store_exact(void* buffer, size_t i, DataType dtype, int64_t value) {
  if (testing_util::is_integer(dtype)) return testing_util::store_int(buffer, i, dtype, value);
  testing_util::store(buffer, i, dtype, static_cast<double>(value));  // |value| <= 256: exact
}

/// Reads element `i` back as the int64 the dtype holds (sign-extended; uint8 zero-extended).
inline int64_t load_exact(const void* buffer, size_t i, DataType dtype) {
  if (testing_util::is_integer(dtype)) return testing_util::load_int(buffer, i, dtype);
  return static_cast<int64_t>(testing_util::load(buffer, i, dtype));
}

/// This rank's input buffer of `n` elements.
inline std::vector<uint8_t> exact_inputs(int rank, size_t n, DataType dtype, ReduceOp op) {
  std::vector<uint8_t> buffer(n * dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) store_exact(buffer.data(), i, dtype, exact_input(rank, i, op));
  return buffer;
}

/// The allreduce of every rank's exact_inputs over `ranks` ranks, as the dtype holds it.
inline std::vector<uint8_t> exact_reduction(int ranks, size_t n, DataType dtype, ReduceOp op) {
  std::vector<uint8_t> expected(n * dtype_size(dtype)), one(dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) {
    int64_t acc = 0;
    for (int r = 0; r < ranks; ++r) {
      store_exact(one.data(), 0, dtype, exact_input(r, i, op));  // the value as the dtype holds it
      const int64_t x = load_exact(one.data(), 0, dtype);
      const auto ua = static_cast<uint64_t>(acc), ux = static_cast<uint64_t>(x);
      if (r == 0) acc = x;
      else if (op == ReduceOp::kMin) acc = std::min(acc, x);
      else if (op == ReduceOp::kMax) acc = std::max(acc, x);
      else if (op == ReduceOp::kProduct) acc = static_cast<int64_t>(ua * ux);
      else acc = static_cast<int64_t>(ua + ux);
    }
    store_exact(expected.data(), i, dtype, acc);
  }
  return expected;
}

/// Index of the first of `n` elements where `got` differs from `expected` bytewise, or -1.
inline long first_mismatch(const std::vector<uint8_t>& got, const std::vector<uint8_t>& expected, DataType dtype) {
  const size_t element = dtype_size(dtype);
  for (size_t b = 0; b < std::min(got.size(), expected.size()); ++b)
    if (got[b] != expected[b]) return static_cast<long>(b / element);
  return got.size() == expected.size() ? -1 : static_cast<long>(std::min(got.size(), expected.size()) / element);
}

}  // namespace concord::testlists
