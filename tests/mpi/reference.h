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
template <typename T = Real>
inline T allreduce_input(DataType dtype, ReduceOp op, bool scaled, int rank, int64_t index, uint64_t seed) {
  if (op == ReduceOp::kProduct) return multiplicative_value<T>(dtype, rank, index, seed);
  // int64 inputs near +-2^58 only where no scale factor sends them through double.
  const bool wide = !scaled && op != ReduceOp::kAverage;
  return additive_value<T>(dtype, rank, index, seed, wide);
}

/// Fills `tensor` with this rank's allreduce input.
inline void fill_allreduce_input(Tensor& tensor, ReduceOp op, bool scaled, int rank, uint64_t seed) {
  fill(tensor,
       [&](auto tag, int64_t i) { return allreduce_input<decltype(tag)>(tensor.dtype, op, scaled, rank, i, seed); });
}

struct Reference {
  std::vector<Real> value;
  std::vector<Real> tolerance;  // empty: exact
};

namespace detail {

// The reference in compute type T: double holds every value of these inputs exactly except
// int64 near 2^58, which uses long double. Integer scaling truncates toward zero exactly as
// a static_cast from double does.
template <typename T>
Reference allreduce_reference(DataType dtype, ReduceOp op, Scale scale, int64_t count, uint64_t seed, int size) {
  const bool floating = is_floating(dtype);
  double post = scale.post;
  if (op == ReduceOp::kAverage) post /= size;
  auto apply = [floating](T x, double factor) -> T {
    if (factor == 1.0) return x;
    return floating ? x * static_cast<T>(factor)
                    : static_cast<T>(static_cast<int64_t>(static_cast<double>(x) * factor));
  };
  const bool exact =
      !floating || ((dtype == DataType::kFloat32 || dtype == DataType::kFloat64) && op != ReduceOp::kAverage);
  const bool additive = op == ReduceOp::kSum || op == ReduceOp::kAverage;
  Reference ref;
  ref.value.resize(static_cast<size_t>(count));
  if (!exact) ref.tolerance.resize(static_cast<size_t>(count));
  const T u = static_cast<T>(unit_roundoff(dtype));
  for (int64_t i = 0; i < count; ++i) {
    T acc = 0, magnitude = 0;
    for (int r = 0; r < size; ++r) {
      const T x = apply(allreduce_input<T>(dtype, op, scale.any(), r, i, seed), scale.pre);
      magnitude += x < 0 ? -x : x;
      if (r == 0) {
        acc = x;
      } else if (additive) {
        acc += x;
      } else if (op == ReduceOp::kProduct) {
        acc *= x;
      } else {
        acc = op == ReduceOp::kMin ? std::min(acc, x) : std::max(acc, x);
      }
    }
    acc = apply(acc, post);
    ref.value[static_cast<size_t>(i)] = acc;
    if (!exact) {
      const T error_scale = additive ? magnitude * static_cast<T>(std::fabs(post)) : (acc < 0 ? -acc : acc);
      ref.tolerance[static_cast<size_t>(i)] = static_cast<T>(size + 2) * u * error_scale;
    }
  }
  return ref;
}

}  // namespace detail

/// postscale * op_r(prescale * x_r) from every rank's input, with the documented integer
/// rule: a scale factor other than 1 multiplies in double and truncates toward zero;
/// kAverage multiplies the postscale by 1/size. Floating results are exact (dyadic inputs)
/// except where rounding is unavoidable (average; 16-bit floats), which get a bound of
/// (size + 2) unit roundoffs of the magnitudes involved.
inline Reference allreduce_reference(DataType dtype, ReduceOp op, Scale scale, int64_t count, uint64_t seed, int size) {
  if (dtype == DataType::kInt64) return detail::allreduce_reference<Real>(dtype, op, scale, count, seed, size);
  return detail::allreduce_reference<double>(dtype, op, scale, count, seed, size);
}

}  // namespace concord::mpitest
