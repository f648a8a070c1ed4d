// The allreduce reference shared by the allreduce, ordering and consistency tests: the
// deterministic input of every rank and the expected result computed from all of them.
#pragma once

#include <algorithm>

#include "mpi_test_util.h"

namespace concord::mpitest {

struct Scale {
  double pre = 1.0;
  double post = 1.0;
  bool any() const { return pre != 1.0 || post != 1.0; }
};

/// The input of `rank` for an allreduce with `op` (see mpi_test_util.h for the ranges).
inline Real allreduce_input(DataType dtype, ReduceOp op, bool scaled, int rank, int64_t index, uint64_t seed) {
  if (op == ReduceOp::kProduct) return multiplicative_value(dtype, rank, index, seed);
  // int64 inputs near +-2^58 only where no scale factor sends them through double.
  const bool wide = !scaled && op != ReduceOp::kAverage;
  return additive_value(dtype, rank, index, seed, wide);
}

struct Reference {
  std::vector<Real> value;
  std::vector<Real> tolerance;  // empty: exact
};

/// postscale * op_r(prescale * x_r), with the documented integer rule: a scale factor
/// other than 1 multiplies in double and truncates toward zero; kAverage multiplies the
/// postscale by 1/size. Floating results are exact (dyadic inputs) except where rounding
/// is unavoidable (average; 16-bit floats), which get a rounding-error bound.
inline Reference allreduce_reference(DataType dtype, ReduceOp op, Scale scale, int64_t count, uint64_t seed,
                              int size) {
  const bool floating = is_floating(dtype);
  double post = scale.post;
  if (op == ReduceOp::kAverage) post /= size;
  auto prescale = [&](Real x) -> Real {
    if (scale.pre == 1.0) return x;
    return floating ? x * static_cast<Real>(scale.pre) : std::trunc(static_cast<double>(x) * scale.pre);
  };
  const bool exact = !floating || ((dtype == DataType::kFloat32 || dtype == DataType::kFloat64) &&
                                   op != ReduceOp::kAverage);
  Reference ref;
  ref.value.resize(static_cast<size_t>(count));
  if (!exact) ref.tolerance.resize(static_cast<size_t>(count));
  const Real u = unit_roundoff(dtype);
  for (int64_t i = 0; i < count; ++i) {
    Real acc = 0, magnitude = 0;
    for (int r = 0; r < size; ++r) {
      const Real x = prescale(allreduce_input(dtype, op, scale.any(), r, i, seed));
      magnitude += std::fabs(x);
      if (r == 0) {
        acc = x;
        continue;
      }
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage: acc += x; break;
        case ReduceOp::kProduct: acc *= x; break;
        case ReduceOp::kMin: acc = std::min(acc, x); break;
        case ReduceOp::kMax: acc = std::max(acc, x); break;
      }
    }
    if (post != 1.0) acc = floating ? acc * static_cast<Real>(post) : std::trunc(static_cast<double>(acc) * post);
    ref.value[static_cast<size_t>(i)] = acc;
    if (!exact) {
      const bool additive = op == ReduceOp::kSum || op == ReduceOp::kAverage;
      const Real scale_of_error = additive ? magnitude * std::fabs(static_cast<Real>(post)) : std::fabs(acc);
      ref.tolerance[static_cast<size_t>(i)] = (size + 2) * u * scale_of_error;
    }
  }
  return ref;
}

}  // namespace concord::mpitest
