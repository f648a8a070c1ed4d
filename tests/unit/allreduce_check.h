// Inputs and the reference check shared by the allreduce and reduce-scatter unit tests:
// deterministic per-rank inputs chosen per op, a float64 / modular-integer reference, and the rule that
// every rank's result is bit-identical to rank 0's. Failure messages name the rank, the
// element and `what` (algorithm, P, n, dtype, op).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "test_support/dtype_util.h"

namespace concord::testing_util {

inline uint64_t mix(int rank, size_t index, uint64_t salt) {
  uint64_t h = (index + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(rank) + 1) * 0xC2B2AE3D27D4EB4Full ^ salt;
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

// Deterministic input of `rank` at `index`, chosen per op so that the float64 reference is
// meaningful: sums of values in [-4, 4]; products of values near 1 (no overflow); min/max
// of spread values. Integers use all their bits (sums and products wrap).
inline void fill_input(void* buffer, size_t count, DataType dtype, ReduceOp op, int rank) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(rank, i, static_cast<uint64_t>(op));
    if (is_integer(dtype)) {
      store_int(buffer, i, dtype, static_cast<int64_t>(op == ReduceOp::kProduct ? (h | 1) : h));
      continue;
    }
    double v;
    switch (op) {
      case ReduceOp::kProduct: v = 1.0 + (static_cast<int>(h % 17) - 8) / 64.0; break;
      case ReduceOp::kMin:
      case ReduceOp::kMax: v = (static_cast<int>(h % 20001) - 10000) / 8.0; break;
      default: v = (static_cast<int>(h % 2049) - 1024) / 256.0; break;
    }
    store(buffer, i, dtype, v);
  }
}

/// Checks element `i` of `result` against the reduction with `op` over every rank's
/// `inputs` (float64 reference within P unit roundoffs, or exact modulo 2^bits for
/// integers); `who` names the rank in the failure message. Returns whether it matched.
inline bool expect_reduced_element(const std::vector<std::vector<uint8_t>>& inputs, const void* result, size_t i,
                                   DataType dtype, ReduceOp op, const std::string& who, const std::string& what) {
  const int P = static_cast<int>(inputs.size());
  if (is_integer(dtype)) {
    uint64_t acc = static_cast<uint64_t>(load_int(inputs[0].data(), i, dtype));
    int64_t extreme = load_int(inputs[0].data(), i, dtype);
    for (int r = 1; r < P; ++r) {
      const int64_t x = load_int(inputs[r].data(), i, dtype);
      if (op == ReduceOp::kProduct) acc *= static_cast<uint64_t>(x);
      else acc += static_cast<uint64_t>(x);
      if (op == ReduceOp::kMin) extreme = std::min(extreme, x);
      if (op == ReduceOp::kMax) extreme = std::max(extreme, x);
    }
    std::vector<uint8_t> expected(dtype_size(dtype));
    store_int(expected.data(), 0, dtype,
              (op == ReduceOp::kMin || op == ReduceOp::kMax) ? extreme : static_cast<int64_t>(acc));
    const int64_t want = load_int(expected.data(), 0, dtype);
    const int64_t got = load_int(result, i, dtype);
    EXPECT_EQ(got, want) << who << " element " << i << " (" << what << ")";
    return got == want;
  }
  double reference = load(inputs[0].data(), i, dtype), magnitude = std::fabs(reference);
  for (int r = 1; r < P; ++r) {
    const double x = load(inputs[r].data(), i, dtype);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage:
        reference += x;
        magnitude += std::fabs(x);
        break;
      case ReduceOp::kProduct: reference *= x; break;
      case ReduceOp::kMin: reference = std::min(reference, x); break;
      case ReduceOp::kMax: reference = std::max(reference, x); break;
      case ReduceOp::kAdasum: break;  // not element-wise: test_allreduce_adasum.cc
    }
  }
  // Each of the at most P - 1 reductions on an element's chain rounds once to the dtype.
  double tolerance = 0;
  if (op == ReduceOp::kSum || op == ReduceOp::kAverage) tolerance = P * unit_roundoff(dtype) * magnitude;
  if (op == ReduceOp::kProduct) tolerance = P * unit_roundoff(dtype) * std::fabs(reference);
  const double got = load(result, i, dtype);
  EXPECT_NEAR(got, reference, tolerance) << who << " element " << i << " (" << what << ")";
  return std::fabs(got - reference) <= tolerance;
}

/// Checks P ranks' `results` (n elements each) of an allreduce of `inputs` with `op`.
inline void expect_allreduce_results(const std::vector<std::vector<uint8_t>>& inputs,
                                     const std::vector<std::vector<uint8_t>>& results, size_t n, DataType dtype,
                                     ReduceOp op, const std::string& what) {
  const int P = static_cast<int>(inputs.size());
  // Reference, then rank 0 against it.
  int failures = 0;
  for (size_t i = 0; i < n && failures < 10; ++i)
    failures += !expect_reduced_element(inputs, results[0].data(), i, dtype, op, "rank 0", what);
  for (int r = 1; r < P; ++r) {
    const long diff = first_difference(results[r], results[0], dtype_size(dtype));
    EXPECT_EQ(diff, -1) << "rank " << r << " differs from rank 0 at element " << diff << " (" << what << ")";
  }
}

}  // namespace concord::testing_util
